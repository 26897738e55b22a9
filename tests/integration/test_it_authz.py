"""Who may act on whose jobs, through the real CLI, a live master and the dev Slurm cluster.

Hostile-testing finding 2 on a master that names its users: another user updated the
owner's pending job (``scontrol update`` ran), killed their ``det sbatch`` task and read
it. Here the intruder's ``det job update`` / ``det task kill`` / ``det task describe`` are
refused with one line, and Slurm's own view of the job (``scontrol show job``) shows that
nothing changed. Names are still self-declared (``det -u``) until MUNGE identity lands; what
this checks is the authorization the master applies to the names it is given.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from it_helpers import BIN, LiveMaster, load_json

pytestmark = [pytest.mark.slurm, pytest.mark.parametrize("master", ["sqlite"], indirect=True)]


@pytest.fixture
def master_settings() -> dict[str, Any]:
    return {"auth": {"require_user": True, "admins": ["site-admin"]}}


def det_as(master: LiveMaster, user: str, *args: str,
           cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "det"), "-m", master.url, "-u", user, *args], cwd=cwd,
                          env=master.env, capture_output=True, text=True, timeout=300)


def slurm_job(job_id: str, env: dict[str, str]) -> dict[str, str]:
    """``scontrol show job`` as a mapping (Slurm's view, not hpcdet's)."""
    out = subprocess.run(["scontrol", "-o", "show", "job", job_id], env=env,
                         capture_output=True, text=True, timeout=30, check=True).stdout
    return dict(word.split("=", 1) for word in out.split() if "=" in word)


def test_an_intruder_can_neither_update_kill_nor_read_anothers_task(
        master: LiveMaster, tmp_path: Path) -> None:
    name = f"authz-{uuid.uuid4().hex[:8]}"
    # Pending for an hour (--begin): a job whose place in the queue is worth stealing.
    submitted = det_as(master, "alice", "sbatch", "--parsable", "-p", "debug", "--time=1",
                       f"--job-name={name}", "--begin=now+1hour", "--wrap", "sleep 1",
                       cwd=tmp_path)
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip().split(";")[0]
    try:
        before = slurm_job(job_id, master.env)
        assert before["JobState"] == "PENDING"
        task = next(t for t in load_json(det_as(master, "alice", "task", "list", "--json")
                                         .stdout)["tasks"] if t["job_id"] == job_id)

        update = det_as(master, "intruder", "job", "update", job_id, "--priority", "90")
        assert update.returncode == 1 and "not found" in update.stderr, update.stderr
        kill = det_as(master, "intruder", "task", "kill", str(task["id"]))
        assert kill.returncode == 1 and f"task {task['id']} not found" in kill.stderr
        described = det_as(master, "intruder", "task", "describe", str(task["id"]))
        assert described.returncode == 1 and name not in described.stdout + described.stderr
        listed = det_as(master, "intruder", "task", "list", "--json")
        assert listed.returncode == 0 and name not in listed.stdout
        for output in (update, kill, described):
            assert "Traceback" not in output.stderr and len(output.stderr.splitlines()) == 1

        after = slurm_job(job_id, master.env)
        assert (after["JobState"], after["Nice"], after["Partition"], after.get("QOS")) == (
            before["JobState"], before["Nice"], before["Partition"], before.get("QOS"))
    finally:
        killed = det_as(master, "alice", "task", "kill", str(job_id_task(master, job_id)))
        assert killed.returncode == 0, killed.stderr


def job_id_task(master: LiveMaster, job_id: str) -> int:
    listed = load_json(det_as(master, "alice", "task", "list", "--json").stdout)
    return int(next(t["id"] for t in listed["tasks"] if t["job_id"] == job_id))
