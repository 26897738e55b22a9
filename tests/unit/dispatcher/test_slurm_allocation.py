"""Rendering allocation mode's Slurm job: what it asks for, and what it refuses."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hpcdet.dispatcher.allocation import AllocationSpec, render_allocation
from hpcdet.dispatcher.base import UnsupportedError
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.errors import ConfigError, ValidationError

SPEC = AllocationSpec(name="det-3-alloc-1", job_dir="/jobs/exp-3/allocation-1", slots=4,
                      time_limit="1-02:00:00", cpus_per_slot=2,
                      command=("/usr/bin/python3", "-m", "hpcdet.launch.allocation_agent",
                               "--master", "http://m:8080", "--allocation", "1"),
                      partition="batch", account="acct", qos="normal", nice=10,
                      comment="hpcdet:c:allocation-1", sbatch_args=("--mem=4G",))


def test_the_allocation_asks_for_its_slots_and_runs_the_agent() -> None:
    submission = render_allocation(SlurmBackend(), SPEC)
    lines = submission.script.splitlines()
    for directive in ("--ntasks=4", "--cpus-per-task=2", "--time=1-02:00:00",
                      "--partition=batch", "--account=acct", "--qos=normal", "--nice=10",
                      "--no-requeue", "--job-name=det-3-alloc-1", "--mem=4G"):
        assert f"#SBATCH {directive}" in lines, directive
    assert lines[-1].startswith("/usr/bin/python3 -m hpcdet.launch.allocation_agent")
    assert submission.argv == ("sbatch", "--parsable", "/jobs/exp-3/allocation-1/allocation.sh")
    assert not any("gpus" in line for line in lines)


def test_gpu_slots_are_one_gpu_per_task_on_a_tres_cluster_only() -> None:
    gpu = replace(SPEC, gpus_per_slot=1, gpu_type="a100")
    assert "#SBATCH --gpus-per-task=a100:1" in render_allocation(SlurmBackend(), gpu).script
    with pytest.raises(ValidationError, match="TRES"):
        render_allocation(SlurmBackend(gpu_request="gres"), gpu)


@pytest.mark.parametrize("change", [
    {"name": "x\nrm -rf /"}, {"time_limit": "30m"}, {"slots": 0}, {"job_dir": "relative"},
    {"command": ("python3", "--x=\r")}, {"sbatch_args": ("--ntasks=9",)},
])
def test_unsafe_or_malformed_values_are_refused(change: dict[str, object]) -> None:
    with pytest.raises((ValidationError, ConfigError)):
        render_allocation(SlurmBackend(), replace(SPEC, **change))  # type: ignore[arg-type]


def test_a_scheduler_without_steps_cannot_render_one() -> None:
    class Other(SlurmBackend):
        name = "pbs"

    with pytest.raises(UnsupportedError, match="allocation mode"):
        render_allocation(Other(), SPEC)


def test_a_time_limit_meant_for_trial_jobs_gives_way_to_the_walltime() -> None:
    script = render_allocation(SlurmBackend(), replace(SPEC, sbatch_args=("-t5",))).script
    assert "#SBATCH --time=1-02:00:00" in script and "-t 5" not in script and "-t5" not in script
