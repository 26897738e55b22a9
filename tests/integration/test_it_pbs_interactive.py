"""Interactive tasks on the dev OpenPBS server: a command and a notebook as PBS jobs, the
notebook reached through the master's proxy (its job names its node as PBS placed it).

det shell on PBS is in test_it_shells.py."""

from __future__ import annotations

import re

import pytest
from it_helpers import LiveMaster, load_json, wait_for
from it_pbs import pbs_master, qdel_all

pytestmark = [pytest.mark.pbs, pytest.mark.interactive]


def test_a_command_and_a_notebook_on_pbs() -> None:
    with pbs_master("interactive") as master:
        try:
            run_a_command_and_a_notebook(master)
        finally:  # whatever failed: no job of this master may hold a PBS node afterwards
            listed = master.det("task", "list", "--json")
            tasks = load_json(listed.stdout)["tasks"] if listed.returncode == 0 else []
            qdel_all([task["job_id"] for task in tasks if task.get("job_id")])


def run_a_command_and_a_notebook(master: LiveMaster) -> None:
    ran = master.det("cmd", "run", "--", "sh", "-c", "echo job=$PBS_JOBID; exit 4",
                     timeout=180)
    assert ran.returncode == 4, (ran.stdout, ran.stderr, master.log.read_text()[-3000:])
    assert re.search(r"job=\d+\.", ran.stdout), ran.stdout

    # start returns once Jupyter's status API answers through the master's proxy: the
    # master registered the node the job named (PBS's) and reached Jupyter there.
    started = master.det("notebook", "start", "--no-browser", timeout=400)
    assert started.returncode == 0, (started.stdout, started.stderr,
                                     master.log.read_text()[-3000:])
    url = started.stdout.strip().splitlines()[-1]
    notebook_id = url.rstrip("/").rsplit("/", 1)[1]
    assert url == f"{master.url}/proxy/{notebook_id}/"
    task = load_json(master.det("task", "describe", notebook_id, "--json",
                                check=True).stdout)["task"]
    assert task["state"] == "RUNNING" and task["nodes"].startswith("pbsn")
    assert "STOPPING_KILLED" in master.det("notebook", "kill", notebook_id, check=True).stdout
    wait_for(lambda: load_json(master.det("task", "describe", notebook_id, "--json",
                                          check=True).stdout)["task"]["state"]
             == "CANCELED", "the notebook's end", 120)
