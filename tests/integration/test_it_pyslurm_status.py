"""``slurm_api: pyslurm`` against ``cli`` on the real Slurm 25.11 cluster: the same statuses.

Held jobs, a held array of which one task is released and runs, a job that completes, one
cancelled, and an id Slurm never had: one poll through each reader must agree on every one
(the pyslurm reader without running squeue), and on what they are.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hpcdet.dispatcher.base import JobPhase, JobRef, JobStatus
from hpcdet.dispatcher.commands import CommandRunner
from hpcdet.dispatcher.slurm.backend import SlurmBackend

pytestmark = [pytest.mark.slurm, pytest.mark.slurm2511]

NAME = "hpcdet-it-pyslurm"
NEVER = "99999999"  # far above any id the dev cluster hands out


def sbatch(env: dict[str, str], *options: str, wrap: str = "true") -> str:
    out = subprocess.run(["sbatch", "--parsable", f"--job-name={NAME}", "--output=/dev/null",
                          "--partition=debug", *options, "--wrap", wrap], env=env, check=True,
                         capture_output=True, text=True, timeout=60).stdout
    return out.strip().split(";")[0]


@pytest.fixture
def jobs(slurm: dict[str, str], pyslurm_ready: None) -> Iterator[dict[str, str]]:
    """The jobs by role; all cancelled at the end."""
    ids: dict[str, str] = {}
    try:
        for i in range(3):
            ids[f"held{i}"] = sbatch(slurm, "--hold", wrap="sleep 300")
        ids["array"] = sbatch(slurm, "--hold", "--array=0-3", wrap="true")
        ids["done"] = sbatch(slurm)
        ids["cancelled"] = sbatch(slurm, "--hold", wrap="sleep 300")
        subprocess.run(["scancel", ids["cancelled"]], env=slurm, check=True, timeout=60)
        # Task 1 leaves the array's pending record: its own record, run to COMPLETED.
        subprocess.run(["scontrol", "release", f"{ids['array']}_1"], env=slurm, check=True,
                       timeout=60)
        yield ids
    finally:
        subprocess.run(["scancel", *ids.values()], env=slurm, timeout=60, check=False)


def wait_for(backend: SlurmBackend, refs: list[JobRef], ready: dict[str, JobPhase],
             seconds: float = 120) -> dict[str, JobStatus]:
    deadline = time.monotonic() + seconds
    while True:
        statuses = backend.poll(refs)
        if all(statuses[job_id].phase is phase for job_id, phase in ready.items()):
            return statuses
        if time.monotonic() > deadline:
            raise AssertionError(f"not {ready} within {seconds:.0f} s: {statuses}")
        time.sleep(0.5)


def test_pyslurm_and_the_cli_read_the_same_statuses(jobs: dict[str, str],
                                                    tmp_path: Path) -> None:
    array = jobs["array"]
    tasks = [f"{array}_{i}" for i in range(4)]
    held = [jobs[f"held{i}"] for i in range(3)]
    ids = [*held, *tasks, jobs["done"], jobs["cancelled"], NEVER]
    refs = [JobRef(job_id, str(tmp_path)) for job_id in ids]
    cli = SlurmBackend()
    ended = wait_for(cli, refs, {jobs["done"]: JobPhase.COMPLETED,
                                 f"{array}_1": JobPhase.COMPLETED,
                                 jobs["cancelled"]: JobPhase.CANCELLED})
    runner = CommandRunner()
    api = SlurmBackend(runner=runner, slurm_api="pyslurm")
    assert api.poll(refs) == cli.poll(refs) == ended
    # The queue came from pyslurm; only the id no queue knows went to sacct.
    assert [argv[0] for argv in runner.calls] == ["sacct"]
    assert ended[NEVER].phase is JobPhase.MISSING
    for job_id in [*held, f"{array}_0", f"{array}_2", f"{array}_3"]:
        assert (ended[job_id].phase, ended[job_id].reason) == (JobPhase.PENDING, "JobHeldUser")
    assert ended[jobs["done"]].nodes and ended[jobs["done"]].restarts == 0
