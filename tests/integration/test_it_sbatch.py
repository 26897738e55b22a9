"""``det sbatch`` and ``det task`` through the real CLI, a live master and the dev Slurm cluster.

The batch script is an ordinary one, submitted unmodified: its #SBATCH lines are
overridden by an SBATCH_* variable and by the command line, as sbatch does, and Slurm's
own view of the job (``scontrol show job``) is what the assertions read. Job names carry
a random suffix so that the shared cluster's other jobs never confuse the checks.
"""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from it_helpers import BIN, LiveMaster, load_json, sacct_state

pytestmark = pytest.mark.slurm
# The first test runs on both databases (the master fixture's default); the others on SQLite.
SQLITE_ONLY = pytest.mark.parametrize("master", ["sqlite"], indirect=True)

SCRIPT = """\
#!/bin/bash
#SBATCH --job-name=from-the-script
#SBATCH --ntasks=1
#SBATCH --time=1
#SBATCH --partition=debug
echo "greeting=$GREETING args=$*"
srun hostname
echo "to stderr" >&2
"""


def det(master: LiveMaster, cwd: Path, *args: str, env: dict[str, str] | None = None,
        check: bool = False) -> subprocess.CompletedProcess[str]:
    """The real ``det`` CLI, run in ``cwd`` (det sbatch's working directory, where the
    job's default slurm-%j.out goes)."""
    result = subprocess.run([str(BIN / "det"), "-m", master.url, *args], cwd=cwd,
                            env=env or master.env, capture_output=True, text=True, timeout=300)
    if check and result.returncode != 0:
        raise AssertionError(f"det {' '.join(args)} failed ({result.returncode}):\n"
                             f"{result.stdout}\n{result.stderr}\n{master.log.read_text()[-3000:]}")
    return result


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def describe(master: LiveMaster, task_id: int) -> dict[str, Any]:
    answer = load_json(master.det("task", "describe", str(task_id), "--json", check=True).stdout)
    return dict(answer["task"])


def task_of_job(master: LiveMaster, job_id: str) -> dict[str, Any]:
    listed = load_json(master.det("task", "list", "--json", check=True).stdout)
    return next(t for t in listed["tasks"] if t["job_id"] == job_id)


def wait_for_state(master: LiveMaster, task_id: int, *states: str) -> dict[str, Any]:
    for _ in range(480):
        task = describe(master, task_id)
        if task["state"] in states:
            return task
        time.sleep(0.5)
    raise AssertionError(f"task {task_id} never reached {states}: {task}\n"
                         f"{master.log.read_text()[-3000:]}")


def slurm_job(master: LiveMaster, job_id: str) -> dict[str, str]:
    """``scontrol show job`` as a dict (finished jobs stay for MinJobAge, 300 s here)."""
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], env=master.env,
                         capture_output=True, text=True, check=True).stdout
    return dict(item.split("=", 1) for item in out.split() if "=" in item)


@pytest.mark.slurm_smoke
def test_an_unmodified_script_runs_with_sbatchs_precedence(master: LiveMaster,
                                                           tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text(SCRIPT)
    name = unique("c-sbatch")
    env = {**master.env, "SBATCH_TIMELIMIT": "3", "SBATCH_JOB_NAME": "from-the-environment",
           "GREETING": "hello from my shell"}
    result = det(master, tmp_path, "sbatch", "-J", name, "--ntasks=2",
                 f"--output={tmp_path}/%j.out", "--wait", "job.sh", "one", "two", env=env,
                 check=True)
    job_id = result.stdout.strip().removeprefix("Submitted batch job ")
    assert job_id.isdigit(), result.stdout
    job = slurm_job(master, job_id)
    # The command line beats SBATCH_JOB_NAME and #SBATCH --job-name; SBATCH_TIMELIMIT
    # beats #SBATCH --time=1; --ntasks=2 beats #SBATCH --ntasks=1.
    assert (job["JobName"], job["TimeLimit"], job["NumTasks"]) == (name, "00:03:00", "2")
    assert job["Partition"] == "debug" and job["JobState"] == "COMPLETED"
    task = task_of_job(master, job_id)
    assert job["Comment"] == f"hpcdet:it:task-{task['id']}"
    assert [h["to"] for h in describe(master, task["id"])["history"]][-1] == "COMPLETED"
    logs = master.det("task", "logs", str(task["id"]), check=True)
    assert "greeting=hello from my shell args=one two" in logs.stdout
    # srun hostname ran two tasks (the dev cluster's nodes share this machine's hostname).
    assert logs.stdout.splitlines().count(socket.gethostname()) == 2
    copy = (tmp_path / f"{job_id}.out").read_text()
    assert "greeting=hello from my shell" in copy and "to stderr" in copy


@SQLITE_ONLY
def test_parsable_prints_only_the_job_id_and_wrap_runs_a_command(master: LiveMaster,
                                                                  tmp_path: Path) -> None:
    result = det(master, tmp_path, "sbatch", "--parsable", "-p", "debug", "-J",
                 unique("c-wrap"), "--wrap", "echo wrapped in $SLURM_SUBMIT_DIR", check=True)
    job_id = result.stdout.strip()
    assert result.stdout == f"{job_id}\n" and job_id.isdigit()
    task = wait_for_state(master, task_of_job(master, job_id)["id"], "COMPLETED", "ERROR")
    assert task["state"] == "COMPLETED"
    logs = master.det("task", "logs", str(task["id"]), check=True).stdout
    assert f"wrapped in {tmp_path}" in logs
    assert f"wrapped in {tmp_path}" in (tmp_path / f"slurm-{job_id}.out").read_text()


@SQLITE_ONLY
def test_kill_cancels_a_sleeping_task(master: LiveMaster, tmp_path: Path) -> None:
    result = det(master, tmp_path, "sbatch", "--parsable", "-p", "debug", "-J",
                 unique("c-kill"), "--wrap", "echo started; sleep 300", check=True)
    task_id = task_of_job(master, result.stdout.strip())["id"]
    wait_for_state(master, task_id, "RUNNING")
    killed = master.det("task", "kill", str(task_id), check=True)
    assert "STOPPING_KILLED" in killed.stdout
    task = wait_for_state(master, task_id, "CANCELED", "COMPLETED", "ERROR")
    assert task["state"] == "CANCELED"
    assert sacct_state(task["job_id"], master.env).startswith("CANCELLED")


@SQLITE_ONLY
def test_an_array_is_refused_with_the_reason(master: LiveMaster, tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text(SCRIPT)
    refused = det(master, tmp_path, "sbatch", "--array=1-3", "job.sh")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "--array: job arrays are not supported" in refused.stderr
    listed = load_json(master.det("task", "list", "--json", check=True).stdout)
    assert listed["tasks"] == []
