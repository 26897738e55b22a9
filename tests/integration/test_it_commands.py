"""``det cmd`` through the real CLI, a live master (SQLite) and the dev Slurm cluster.

One command prints its node and Slurm job id and exits 3: ``det cmd run`` streams that
output and exits 3 itself, ``det cmd logs`` shows it, ``det cmd list --json`` reports the
exit code. A second, sleeping command is killed and its Slurm job is cancelled.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from it_helpers import LiveMaster, load_json, sacct_state
from test_it_sbatch import wait_for_state

pytestmark = [pytest.mark.slurm, pytest.mark.interactive,
              pytest.mark.parametrize("master", ["sqlite"], indirect=True)]

PROGRAM = ("import os,socket; print(socket.gethostname(), os.environ['SLURM_JOB_ID']); "
           "raise SystemExit(3)")


def node_host_name(master: LiveMaster, node: str) -> str:
    """The host a Slurm node runs on (the dev cluster's nodes all share this machine's)."""
    out = subprocess.run(["scontrol", "show", "node", "-o", node], env=master.env,
                         capture_output=True, text=True, check=True).stdout
    fields = dict(item.split("=", 1) for item in out.split() if "=" in item)
    return fields["NodeHostName"]


def test_a_command_runs_reports_its_exit_code_and_is_killed(master: LiveMaster) -> None:
    sleeper = master.det("cmd", "run", "-d", "--config", "description=it-sleeper", "--",
                         "sleep", "300", check=True)
    sleeper_id = int(sleeper.stdout.strip())

    ran = master.det("cmd", "run", "--", "python3", "-c", PROGRAM, timeout=120)
    assert ran.returncode == 3, (ran.stdout, ran.stderr, master.log.read_text()[-3000:])
    match = re.fullmatch(r"(\S+) (\d+)\n", ran.stdout)
    assert match, ran.stdout
    node, job_id = match.groups()
    launched = re.search(r"Launched command (\d+)", ran.stderr)
    assert launched, ran.stderr
    command_id = int(launched.group(1))

    logs = master.det("cmd", "logs", str(command_id), check=True)
    assert logs.stdout == f"{node} {job_id}\n"
    listed = load_json(master.det("cmd", "list", "--json", check=True).stdout)["tasks"]
    mine = next(t for t in listed if t["id"] == command_id)
    assert (mine["state"], mine["exit_code"], mine["job_id"], mine["kind"]) == (
        "ERROR", 3, job_id, "command")
    assert mine["nodes"] and node == node_host_name(master, mine["nodes"])

    killed = master.det("cmd", "kill", str(sleeper_id), check=True)
    assert "STOPPING_KILLED" in killed.stdout
    task = wait_for_state(master, sleeper_id, "CANCELED", "COMPLETED", "ERROR")
    assert task["state"] == "CANCELED"
    assert sacct_state(task["job_id"], master.env).startswith("CANCELLED")
