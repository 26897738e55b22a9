"""The rank launcher line of the Slurm job script: srun, srun --mpi=pmix, or mpiexec."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import replace

import pytest

from hpcdet.dispatcher.base import ContainerSpec, JobSpec
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.errors import ValidationError

SpecFactory = Callable[[str], JobSpec]


def _script(spec: JobSpec) -> str:
    return SlurmBackend().render(spec).script


def _launch_words(script: str) -> list[str]:
    """The launcher's words: the line after the ``cd`` into the context, shell-split."""
    lines = script.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("cd ")) + 2
    return shlex.split(lines[at].rstrip(" \\"))


def test_mpiexec_renders_its_golden_script(job_spec: SpecFactory,
                                           golden_check: Callable[[str, str], None]) -> None:
    golden_check("slurm_mpiexec.sbatch", _script(replace(job_spec("apptainer"),
                                                         launcher="mpiexec")))


def test_mpiexec_starts_one_rank_per_slot_from_the_allocation(job_spec: SpecFactory) -> None:
    script = _script(replace(job_spec("none"), launcher="mpiexec"))
    assert _launch_words(script) == ["mpiexec", "-n", "8", "--map-by", "ppr:4:node",
                                     "--bind-to", "none"]
    # Each rank is a Slurm task, so mpiexec finds 4 slots per node in SLURM_TASKS_PER_NODE.
    assert "#SBATCH --ntasks-per-node=4" in script
    assert "#SBATCH --cpus-per-task=8" in script
    assert "srun" not in script.split("cd ", 1)[1]
    assert "waits for mpiexec to stop" in script


@pytest.mark.parametrize(("launcher", "first"), [("default", ["srun", "--kill-on-bad-exit=1"]),
                                                 ("srun", ["srun", "--kill-on-bad-exit=1"]),
                                                 ("srun-pmix", ["srun", "--mpi=pmix"])])
def test_srun_launchers_keep_one_task_per_node(job_spec: SpecFactory, launcher: str,
                                               first: list[str]) -> None:
    script = _script(replace(job_spec("none"), launcher=launcher))
    words = _launch_words(script)
    assert words[:2] == first
    assert "--ntasks=8" in words and "--ntasks-per-node=4" in words
    assert "#SBATCH --ntasks-per-node=1" in script and "#SBATCH --cpus-per-task=32" in script


def test_the_container_still_wraps_each_rank_under_mpiexec(job_spec: SpecFactory) -> None:
    script = _script(replace(job_spec("apptainer"), launcher="mpiexec"))
    after = script.split("ppr:4:node --bind-to none \\\n", 1)[1]
    assert after.lstrip().startswith("apptainer exec --nv \\")
    assert "/shared/images/pytorch-24.01.sif python3 -m hpcdet.harness" in after


@pytest.mark.parametrize("run_type", ["enroot", "podman"])
def test_mpiexec_is_refused_where_the_runtime_drops_mpi_variables(job_spec: SpecFactory,
                                                                  run_type: str) -> None:
    with pytest.raises(ValidationError, match=f"launcher mpiexec cannot start ranks in a "
                                              f"{run_type} container"):
        SlurmBackend().render(replace(job_spec(run_type), launcher="mpiexec"))


def test_an_unknown_launcher_is_refused(job_spec: SpecFactory) -> None:
    spec = replace(job_spec("none"), launcher="mpirun; rm -rf /",
                   container=ContainerSpec("none"))
    with pytest.raises(ValidationError, match="spec.launcher must be one of"):
        SlurmBackend().render(spec)
