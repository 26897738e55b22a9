"""``det shell`` through the real CLI, a live master (MUNGE users) and the dev Slurm cluster.

user_a starts a shell with ``--command``: the command runs through the shell's sshd and ssh,
prints the node's hostname and the Slurm job id, and its exit code (3) is det's. In tmux,
``det shell open`` attaches a terminal, where typed input runs in the job's environment.
user_b cannot fetch the keys; ``det shell kill`` cancels the job. With ``jobs_run_as:
owner`` (the master as the service account, test_it_multiuser's), the sshd and the session
run as user_a. On the dev OpenPBS server the same path works (no srun there).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from it_helpers import BIN, REPO, LiveMaster, load_json, sacct_state
from it_pbs import pbs_master, qdel_all
from it_users import as_user, check_users, fresh_home, ok
from test_it_commands import node_host_name
from test_it_multiuser import (  # noqa: F401 - users: a fixture
    JOB_ROOT,
    SLURM_CONF,
    _owner_master,
    users,
)

pytestmark = pytest.mark.interactive


@pytest.fixture
def master_settings() -> dict[str, Any]:
    return {"auth": {"mode": "munge", "admins": []}}


@pytest.fixture
def _users() -> None:
    """The dev cluster's users, with fresh homes (the Slurm tests; the PBS test runs beside
    other tests as user_a and leaves user_a's home alone)."""
    check_users()
    for user in ("user_a", "user_b"):
        fresh_home(user)


@pytest.fixture
def tmux() -> Iterator[list[str]]:
    """A private tmux server (its own socket), killed afterwards."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is missing: scripts/ensure-tmux installs it")
    argv = ["tmux", "-L", f"hpcdet-it-shell-{os.getpid()}"]
    yield argv
    subprocess.run([*argv, "kill-server"], capture_output=True, check=False)


def pane(tmux: list[str]) -> str:
    return subprocess.run([*tmux, "capture-pane", "-p", "-J", "-S", "-200", "-t", "it"],
                          capture_output=True, text=True, check=False).stdout


def wait_for_text(tmux: list[str], pattern: str, timeout: float = 90) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = pane(tmux)
        if re.search(pattern, shown):
            return shown
        time.sleep(0.5)
    raise AssertionError(f"{pattern!r} never showed in the terminal:\n{pane(tmux)}")


def state_of(master: LiveMaster, shell_id: str, *states: str) -> dict[str, Any]:
    """user_a's shell once it is in one of ``states``."""
    for _ in range(240):
        task: dict[str, Any] = load_json(ok(as_user(
            master, "user_a", "task", "describe", shell_id, "--json")))["task"]
        if task["state"] in states:
            return task
        time.sleep(0.5)
    raise AssertionError(f"shell {shell_id} never reached {states}: {task}")


@pytest.mark.slurm
@pytest.mark.usefixtures("_users")
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_a_shell_runs_commands_opens_a_terminal_and_is_killed(
        master: LiveMaster, tmux: list[str]) -> None:
    started = time.monotonic()
    ran = as_user(master, "user_a", "shell", "start", "--config", "description=it-shell",
                  "--command", "hostname; echo $SLURM_JOB_ID; exit 3")
    assert ran.returncode == 3, (ran.stdout, ran.stderr, master.log.read_text()[-3000:])
    launched = re.search(r"Launched shell (\d+) \(job (\d+)\)", ran.stderr)
    assert launched, ran.stderr
    shell_id, job_id = launched.groups()
    host, printed_job = ran.stdout.split()
    assert printed_job == job_id
    print(f"det shell start --command: {time.monotonic() - started:.1f} s to the output")

    listed = load_json(ok(as_user(master, "user_a", "shell", "list", "--json")))["tasks"]
    [mine] = [t for t in listed if str(t["id"]) == shell_id]
    assert (mine["kind"], mine["state"], mine["name"]) == ("shell", "RUNNING", "it-shell")
    assert host == node_host_name(master, mine["nodes"])

    opened = time.monotonic()
    again = as_user(master, "user_a", "shell", "open", shell_id, "--",
                    "echo task=$DET_TASK_ID type=$DET_TASK_TYPE; exit 4")
    print(f"det shell open ID -- CMD on the running shell: {time.monotonic() - opened:.2f} s")
    assert again.returncode == 4 and again.stdout == f"task={shell_id} type=SHELL\n", again

    home = "/home/user_a"
    det_argv = ["runuser", "-u", "user_a", "--", "env", "-i", "PATH=/usr/bin:/bin",
                f"HOME={home}", f"PYTHONPATH={REPO}", "TERM=xterm",
                str(BIN / "det"), "-m", master.url, "shell", "open", shell_id]
    subprocess.run([*tmux, "new-session", "-d", "-s", "it", "-x", "160", "-y", "40",
                    shlex.join(det_argv)], check=True)
    time.sleep(1)
    subprocess.run([*tmux, "send-keys", "-t", "it", "echo hello-$SLURM_JOB_ID", "Enter"],
                   check=True)
    wait_for_text(tmux, rf"(?m)^hello-{job_id}$")
    subprocess.run([*tmux, "send-keys", "-t", "it", "exit", "Enter"], check=True)

    refused = as_user(master, "user_b", "shell", "open", shell_id)
    assert refused.returncode == 1 and "PRIVATE KEY" not in refused.stdout + refused.stderr
    assert re.search(r"(not found|only the owner)", refused.stderr), refused.stderr
    assert "Traceback" not in refused.stderr

    killed = ok(as_user(master, "user_a", "shell", "kill", shell_id))
    assert "STOPPING_KILLED" in killed
    task = state_of(master, shell_id, "CANCELED", "COMPLETED", "ERROR")
    assert task["state"] == "CANCELED"
    assert sacct_state(job_id, master.env).startswith("CANCELLED")

    # idle_timeout: the shell ends by itself once no session has been open that long.
    idle = as_user(master, "user_a", "shell", "start", "--config", "idle_timeout=2s",
                   "--command", "true")
    assert idle.returncode == 0, idle.stderr
    idle_id = re.search(r"Launched shell (\d+)", idle.stderr).group(1)  # type: ignore[union-attr]
    assert state_of(master, idle_id, "COMPLETED", "ERROR", "CANCELED")["state"] == "COMPLETED"
    logs = ok(as_user(master, "user_a", "shell", "logs", idle_id))
    assert "(idle_timeout): ending" in logs


@pytest.mark.slurm
@pytest.mark.multiuser
@pytest.mark.usefixtures("users", "_users")
def test_an_owner_mode_shell_runs_as_its_owner() -> None:
    job_ids: list[str] = []
    with _owner_master(None) as master:
        try:
            ran = master.det_as("user_a", "shell", "start", "--command",
                                "id -un; echo $SLURM_JOB_ID; exit 5")
            launched = re.search(r"Launched shell (\d+) \(job (\d+)\)", ran.stderr)
            assert launched, (ran.stdout, ran.stderr, master.log.read_text()[-3000:])
            shell_id, job_id = launched.groups()
            job_ids.append(job_id)
            assert ran.returncode == 5, (ran.stdout, ran.stderr)
            assert ran.stdout == f"user_a\n{job_id}\n"
            listed = load_json(ok(master.det_as("user_a", "shell", "list", "--json")))["tasks"]
            [mine] = [t for t in listed if str(t["id"]) == shell_id]
            job_dir = Path(mine["job_dir"])
            assert job_dir.is_relative_to(JOB_ROOT / "user_a")
            assert (job_dir / "ssh_host_ed25519_key").stat().st_mode & 0o077 == 0
            assert "STOPPING_KILLED" in ok(master.det_as("user_a", "shell", "kill", shell_id))
            assert state_of(master, shell_id, "CANCELED", "COMPLETED", "ERROR")["state"] == \
                "CANCELED"
        finally:  # this master's jobs are not cancelled by a fixture
            if job_ids:
                subprocess.run(["scancel", *job_ids], env={**os.environ,
                                                           "SLURM_CONF": SLURM_CONF},
                               capture_output=True, check=False)


@pytest.mark.pbs
def test_a_shell_on_pbs() -> None:
    with pbs_master("shell") as master:
        ran = master.det("shell", "start", "--command", "echo $PBS_JOBID; id -un; exit 6",
                         timeout=180)
        launched = re.search(r"Launched shell (\d+) \(job (\S+)\)", ran.stderr)
        assert launched, (ran.stdout, ran.stderr, master.log.read_text()[-3000:])
        shell_id, job_id = launched.groups()
        try:
            assert ran.returncode == 6, (ran.stdout, ran.stderr)
            assert ran.stdout.split() == [job_id, "user_a"]
            assert "STOPPING_KILLED" in master.det("shell", "kill", shell_id, check=True).stdout
        finally:
            qdel_all([job_id])
