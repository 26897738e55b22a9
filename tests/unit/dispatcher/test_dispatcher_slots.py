"""The allocation (#SBATCH) and the srun step of a job may differ: one task per node in the
allocation, one rank per slot in the step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from hpcdet.dispatcher.base import JobSpec
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.errors import ValidationError

SpecFactory = Callable[[str], JobSpec]


def srun_line(script: str) -> str:
    return next(line for line in script.splitlines() if line.startswith("srun "))


def test_the_allocation_has_one_task_per_node_and_the_step_one_rank_per_slot(
    job_spec: SpecFactory, sbatch_directives: Callable[[str], list[str]]
) -> None:
    spec = replace(job_spec("none"), sbatch_args=(), cpus_per_task=1, alloc_cpus_per_task=4,
                   resource_directives={"gpus": "8"})
    script = SlurmBackend().render(spec).script
    argv = sbatch_directives(script)
    assert {"--nodes=2", "--ntasks-per-node=1", "--cpus-per-task=4", "--gpus=8"} <= set(argv)
    assert ("--nodes=2 --ntasks=8 --ntasks-per-node=4 --cpus-per-task=1"
            in srun_line(script))


def test_without_alloc_counts_the_allocation_is_the_step(
    job_spec: SpecFactory, sbatch_directives: Callable[[str], list[str]]
) -> None:
    spec = replace(job_spec("none"), alloc_ntasks_per_node=None, alloc_cpus_per_task=None)
    argv = sbatch_directives(SlurmBackend().render(spec).script)
    assert {"--ntasks-per-node=4", "--cpus-per-task=8"} <= set(argv)


@pytest.mark.parametrize("field", ["alloc_ntasks_per_node", "alloc_cpus_per_task"])
@pytest.mark.parametrize("value", [0, -1, "2"])
def test_alloc_counts_must_be_positive_integers(job_spec: SpecFactory, field: str,
                                                value: object) -> None:
    spec = replace(job_spec("none"), **{field: value})
    with pytest.raises(ValidationError, match=f"spec.{field} must be a positive integer"):
        SlurmBackend().render(spec)


@pytest.mark.parametrize("key", ["gpus", "gpus-per-node", "gres"])
def test_gpu_directives_are_checked_like_every_value(job_spec: SpecFactory, key: str) -> None:
    spec = replace(job_spec("none"), resource_directives={key: "gpu:2\necho INJECTED"})
    with pytest.raises(ValidationError, match="contains a newline"):
        SlurmBackend().render(spec)


@pytest.mark.parametrize("key", ["ntasks-per-node", "cpus-per-task", "nodes"])
def test_resource_directives_cannot_set_the_counts(job_spec: SpecFactory, key: str) -> None:
    spec = replace(job_spec("none"), resource_directives={key: "3"})
    with pytest.raises(ValidationError, match="hpcdet sets them"):
        SlurmBackend().render(spec)
