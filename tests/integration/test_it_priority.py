"""Priority, queue order and pool moves on the real dev Slurm cluster, through a live master.

Every trial job here asks for node3 whole (``--nodelist=node3 --exclusive``) and a blocker
job holds node3, so the trials wait in Slurm's queue and then run one at a time: the order
they start in is Slurm's priority order. The other nodes stay free for whoever else shares
the dev cluster (the fair-share test has node4 to itself); the assertions compare only this
module's jobs with each other.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from it_helpers import LiveMaster, load_json, wait_for, write_experiment

pytestmark = pytest.mark.slurm

CLUSTER = "it-prio"  # its own comment prefix: other modules' clean-ups leave these jobs alone
NODE_WHOLE = ["--nodelist=node3", "--exclusive"]
SLEEPER = "import time\nprint('trial started', flush=True)\ntime.sleep(2)\n"


@pytest.fixture
def resource_manager_settings() -> dict[str, Any]:
    """Priority bands on the dev cluster's QOS, and a quick refresh of the queue snapshot."""
    return {"cluster_name": CLUSTER, "pool_refresh_seconds": 1,
            "priority": {"nice_step": 100, "bands": [
                {"priorities": "1-20", "qos": "high"},
                {"priorities": "21-60", "qos": "normal"},
                {"priorities": "61-99", "qos": "low"}]}}


@pytest.fixture
def blocker(slurm: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """A plain sbatch job (EXTERNAL to hpcdet) holding node3 whole until cancelled."""
    job_id = run(slurm, "sbatch", "--parsable", "-J", "hpcdet-it-prio-blocker", "-p", "batch",
                 f"--output={tmp_path}/blocker-%j.out", *NODE_WHOLE,
                 "--wrap", "sleep 600").strip().split(";")[0]
    try:
        wait_for(lambda: squeue_field(slurm, job_id, "%T") == "RUNNING", "the blocker to run",
                 timeout=180)
        yield job_id
    finally:
        subprocess.run(["scancel", job_id], env=slurm, check=False)


@pytest.fixture
def trial_jobs(slurm: dict[str, str]) -> Iterator[list[str]]:
    """The Slurm jobs of this test's trials, cancelled at the end whatever happened (the
    master stops right after the test, maybe before it has cancelled them itself)."""
    jobs: list[str] = []
    yield jobs
    if jobs:
        subprocess.run(["scancel", *jobs], env=slurm, check=False)


def run(env: dict[str, str], *argv: str) -> str:
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout


def squeue_field(env: dict[str, str], job_id: str, field: str) -> str:
    return subprocess.run(["squeue", "-h", "-j", job_id, "-o", field], env=env,
                          capture_output=True, text=True).stdout.strip()



def create(master: LiveMaster, tmp_path: Path, name: str, priority: int) -> int:
    """An experiment of one short trial on node3 with ``resources.priority``."""
    config = {"name": name, "entrypoint": "python3 sleeper.py", "max_restarts": 0,
              "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
              "resources": {"slots_per_trial": 1, "priority": priority},
              "slurm": {"sbatch_args": NODE_WHOLE}}
    path = write_experiment(tmp_path / name, config, {"sleeper.py": SLEEPER})
    out = master.det("experiment", "create", str(path), str(tmp_path / name), check=True).stdout
    return int(next(li for li in out.splitlines() if li.startswith("Created")).split()[-1])


def pending_job(master: LiveMaster, exp_id: int, jobs: list[str]) -> str:
    """The Slurm job id of the experiment's trial once it waits in Slurm's queue (added to
    ``jobs``, which the test cancels at its end)."""
    def probe() -> str | None:
        exp = load_json(master.det("experiment", "describe", str(exp_id), "--json",
                                   check=True).stdout)
        ids = exp["trials"][0]["job_ids"] if exp["trials"] else []
        return ids[0] if ids and squeue_field(master.env, ids[0], "%T") == "PENDING" else None

    job_id = str(wait_for(probe, f"experiment {exp_id}'s job to be queued"))
    jobs.append(job_id)
    return job_id


def squeue_order(env: dict[str, str], job_ids: list[str]) -> list[str]:
    """``job_ids`` in the order squeue sorts them (priority, highest first)."""
    out = run(env, "squeue", "-h", "--sort=-p,i", "-j", ",".join(job_ids), "-o", "%i")
    return out.split()


def start_times(env: dict[str, str], job_ids: list[str]) -> dict[str, str]:
    """Each job's Start from accounting, once every one of them has ended."""
    def probe() -> dict[str, str] | None:
        out = run(env, "sacct", "-n", "-X", "-P", "-j", ",".join(job_ids),
                  "-o", "JobID,State,Start")
        rows = [line.split("|") for line in out.splitlines() if line.strip()]
        done = [row for row in rows if row[1] not in ("PENDING", "RUNNING", "COMPLETING")]
        return {row[0]: row[2] for row in done} if len(done) == len(job_ids) else None

    return dict(wait_for(probe, "the trials to end", timeout=180))


@pytest.mark.slurm_smoke
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_priorities_80_42_5_start_in_the_order_5_42_80(
        master: LiveMaster, tmp_path: Path, blocker: str, trial_jobs: list[str]) -> None:
    exp_ids = {priority: create(master, tmp_path, f"prio-{priority}", priority)
               for priority in (80, 42, 5)}  # the worst first: FIFO would start it first
    jobs = {priority: pending_job(master, exp_id, trial_jobs)
            for priority, exp_id in exp_ids.items()}
    assert squeue_order(master.env, list(jobs.values())) == [jobs[5], jobs[42], jobs[80]]
    qos = {p: squeue_field(master.env, job, "%q") for p, job in jobs.items()}
    assert qos == {5: "high", 42: "normal", 80: "low"}
    run(master.env, "scancel", blocker)
    started = start_times(master.env, list(jobs.values()))
    order = sorted(jobs, key=lambda priority: started[jobs[priority]])
    assert order == [5, 42, 80], started


@pytest.mark.slurm_smoke
@pytest.mark.parametrize("master", [pytest.param("postgresql", marks=pytest.mark.postgres)],
                         indirect=True)
def test_job_update_reorders_and_moves_pending_jobs(
        master: LiveMaster, tmp_path: Path, blocker: str, trial_jobs: list[str]) -> None:
    first, second = (pending_job(master, create(master, tmp_path, f"same-{n}", 42), trial_jobs)
                     for n in (1, 2))
    assert squeue_order(master.env, [first, second]) == [first, second]  # the older first
    moved = master.det("job", "update", second, "--ahead-of", first, check=True).stdout
    assert "now at position" in moved and f"ahead of job {first}" in moved
    assert squeue_order(master.env, [first, second]) == [second, first]

    master.det("job", "update", first, "--resource-pool", "debug", check=True)
    assert squeue_field(master.env, first, "%P") == "debug"
    assert squeue_field(master.env, first, "%T") == "PENDING"

    rows = {row["job_id"]: row for row in load_json(
        master.det("job", "list", "--json", check=True).stdout)["jobs"]}
    assert rows[first]["type"] == rows[second]["type"] == "EXPERIMENT"
    assert (rows[first]["pool"], rows[first]["state"]) == ("debug", "QUEUED")
    assert rows[blocker]["type"] == "EXTERNAL" and rows[blocker]["state"] == "SCHEDULED"
    assert rows[second]["position"] < rows[first]["position"]

    refused = master.det("job", "update", blocker, "--priority", "5")
    assert refused.returncode == 1 and "is not an hpcdet job" in refused.stderr
    assert "Traceback" not in refused.stderr
