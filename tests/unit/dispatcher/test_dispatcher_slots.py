"""Neutral resources as Slurm asks for them: one task per node holding its ranks' CPUs in the
allocation (#SBATCH), one rank per slot in the srun step, GPUs as the cluster takes them."""

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
    spec = replace(job_spec("none"), sbatch_args=(), cpus_per_rank=1, ranks_per_node=4,
                   nodes=2, gpus_per_node=4)
    script = SlurmBackend().render(spec).script
    argv = sbatch_directives(script)
    assert {"--nodes=2", "--ntasks-per-node=1", "--cpus-per-task=4",
            "--gpus-per-node=4"} <= set(argv)
    step = srun_line(script)
    assert "--ntasks=8" in step and "--ntasks-per-node=4" in step
    assert "--cpus-per-task=1" in step


@pytest.mark.parametrize(("request_kind", "nodes", "gpu_type", "expected"), [
    ("tres", 1, None, "--gpus=4"),
    ("tres", 2, None, "--gpus-per-node=4"),
    ("tres", 1, "a100", "--gpus=a100:4"),
    ("gres", 2, "a100", "--gres=gpu:a100:4"),
])  # fmt: skip
def test_gpus_as_the_cluster_takes_them(job_spec: SpecFactory, request_kind: str, nodes: int,
                                        gpu_type: str | None, expected: str,
                                        sbatch_directives: Callable[[str], list[str]]) -> None:
    spec = replace(job_spec("none"), nodes=nodes, gpus_per_node=4, gpu_type=gpu_type)
    argv = sbatch_directives(SlurmBackend(gpu_request=request_kind).render(spec).script)
    gpu_options = [a for a in argv if a.startswith(("--gpus", "--gres"))]
    assert gpu_options == [expected]


@pytest.mark.parametrize("request_kind", ["tres", "gres", "none"])
def test_a_cpu_job_asks_for_no_gpus(job_spec: SpecFactory, request_kind: str,
                                    sbatch_directives: Callable[[str], list[str]]) -> None:
    spec = replace(job_spec("none"), gpus_per_node=0)
    argv = sbatch_directives(SlurmBackend(gpu_request=request_kind).render(spec).script)
    assert not [a for a in argv if a.startswith(("--gpus", "--gres"))]


def test_without_gpu_support_no_gpu_option_is_written(
        job_spec: SpecFactory, sbatch_directives: Callable[[str], list[str]]) -> None:
    argv = sbatch_directives(SlurmBackend(gpu_request="none").render(job_spec("none")).script)
    assert not [a for a in argv if a.startswith(("--gpus", "--gres"))]


@pytest.mark.parametrize("field", ["nodes", "ranks_per_node", "cpus_per_rank"])
@pytest.mark.parametrize("value", [0, -1, True])
def test_counts_must_be_positive_integers(job_spec: SpecFactory, field: str,
                                          value: object) -> None:
    with pytest.raises(ValidationError, match=f"spec.{field} must be a positive integer"):
        SlurmBackend().render(replace(job_spec("none"), **{field: value}))


@pytest.mark.parametrize("gpu_type", ["gpu:2\necho INJECTED", "a100,v100", "a100:2"])
def test_gpu_types_are_checked_like_every_value(job_spec: SpecFactory, gpu_type: str) -> None:
    with pytest.raises(ValidationError, match="spec.gpu_type"):
        SlurmBackend().render(replace(job_spec("none"), gpus_per_node=1, gpu_type=gpu_type))


def test_an_unknown_gpu_request_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="gpu_request must be one of"):
        SlurmBackend(gpu_request="maybe")
