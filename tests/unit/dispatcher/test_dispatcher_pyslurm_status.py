"""The pyslurm status reader without pyslurm: a stand-in module with the controller's records.

What squeue prints for the same records is in the CLI's tests (test_dispatcher_poll.py);
here each record's status must equal the CLI's for the same squeue line, and problem()'s
lines must name the setting and what to do. The real pyslurm on the real 25.11 cluster:
tests/integration/test_it_pyslurm_status.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hpcdet.dispatcher.base import JobRef
from hpcdet.dispatcher.slurm.arrays import task_indices
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.slurm.pyslurm_status import PyslurmStatusReader, slurm_version
from hpcdet.errors import SchedulerError


@dataclass
class Record:
    """The attributes of a ``pyslurm.Job`` the reader reads (None: Slurm's NO_VAL)."""

    id: int
    state: str
    state_reason: str = "None"
    requeue_count: int = 0
    allocated_nodes: str | None = None
    array_id: int | None = None
    array_task_id: int | None = None
    array_tasks_waiting: str | None = None
    heterogeneous_id: int = 0
    heterogeneous_offset: int = 0


class RPCError(Exception):
    errno = 1


def fake_pyslurm(records: Sequence[Record] | Exception) -> Any:
    def load() -> Any:
        if isinstance(records, Exception):
            raise records
        return {r.id: r for r in records}

    return SimpleNamespace(Jobs=SimpleNamespace(load=load), RPCError=RPCError)


# The same jobs as squeue --array --Format=JobArrayID:|,State:|,RestartCnt:|,NodeList:|,Reason:|
# prints them (one pending array record of tasks 5-7, 9 spread out).
RECORDS = [
    Record(4, "PENDING", "JobHeldUser"),
    Record(5, "RUNNING", allocated_nodes="node1"),
    Record(6, "COMPLETING", requeue_count=2, allocated_nodes="node[1-2]"),
    Record(20, "PENDING", "JobHeldUser", array_id=20, array_tasks_waiting="5-7,9"),
    Record(21, "COMPLETED", allocated_nodes="node2", array_id=20, array_task_id=1),
    Record(30, "PENDING", "Resources", heterogeneous_id=30, heterogeneous_offset=0),
    Record(31, "PENDING", "Resources", heterogeneous_id=30, heterogeneous_offset=1),
]
SQUEUE = """\
4|PENDING|0||JobHeldUser|
5|RUNNING|0|node1|None|
6|COMPLETING|2|node[1-2]|None|
20_5|PENDING|0||JobHeldUser|
20_6|PENDING|0||JobHeldUser|
20_7|PENDING|0||JobHeldUser|
20_9|PENDING|0||JobHeldUser|
20_1|COMPLETED|0|node2|None|
30+0|PENDING|0||Resources|
30+1|PENDING|0||Resources|
"""
IDS = ["4", "5", "6", "20_5", "20_6", "20_7", "20_9", "20_1", "30+0", "30+1", "99"]
SACCT = "99|99|CANCELLED by 0|0:15|None assigned|None\n"


def backends(recorded_slurm: Any, records: Sequence[Record]) -> tuple[Any, SlurmBackend,
                                                                        SlurmBackend]:
    runner = recorded_slurm({"squeue": SQUEUE, "sacct": SACCT})
    cli = SlurmBackend(runner=runner)
    api = SlurmBackend(runner=runner, slurm_api="pyslurm")
    assert isinstance(api.status_reader, PyslurmStatusReader)
    api.status_reader._pyslurm = fake_pyslurm(records)
    return runner, cli, api


def test_the_same_statuses_as_squeue_and_sacct(tmp_path: Path, recorded_slurm: Any) -> None:
    runner, cli, api = backends(recorded_slurm, RECORDS)
    refs = [JobRef(job_id, str(tmp_path)) for job_id in IDS]
    expected = cli.poll(refs)
    runner.calls.clear()
    assert api.poll(refs) == expected
    # No squeue: the queue came from pyslurm; accounting is still one sacct, for 99 only.
    assert [argv[0] for argv in runner.calls] == ["sacct"]
    assert "--jobs=99" in runner.calls[0]
    assert expected["20_6"].reason == "JobHeldUser" and expected["6"].restarts == 1
    assert expected["99"].source == "sacct" and expected["99"].exit_code == 143


def test_an_rpc_error_is_a_scheduler_error(recorded_slurm: Any) -> None:
    _, _, api = backends(recorded_slurm, RECORDS)
    api.status_reader._pyslurm = fake_pyslurm(RPCError("Unable to contact slurm controller"))
    with pytest.raises(SchedulerError, match="Unable to contact slurm controller"):
        api.status_reader.in_queue(["4"])


def test_task_indices_and_versions() -> None:
    assert list(task_indices("0-2,5,7-8")) == [0, 1, 2, 5, 7, 8]
    assert slurm_version("slurm 25.11.7\n") == (25, 11, 7)
    assert slurm_version("slurm-wlm 22.05.8") == (22, 5, 8)
    assert slurm_version("") is None and slurm_version("slurm x.y") is None


def probe(version: str, headers: Sequence[int]) -> str:
    return json.dumps([version, list(headers)]) + "\n"


BUILD = "run scripts/build-pyslurm on this host"
CONF = "SLURM_CONF must name this cluster's slurm.conf"
PATHS = "the master's PATH and SLURM_CONF must reach this host's Slurm"


@pytest.mark.parametrize(("python", "scontrol", "expected", "remedy"), [
    (probe("25.11.2", (25, 11, 7)), "slurm 25.11.7\n", None, None),
    (probe("25.11.2", (25, 11, 7)), "slurm 25.11.1\n", None, None),
    (probe("25.11.2", (25, 11, 7)), "slurm-wlm 22.05.8\n",
     "pyslurm 25.11.2 is built for Slurm 25.11.7 and `scontrol version` says "
     "'slurm-wlm 22.05.8'", BUILD),
    (SchedulerError(["python"], 1, "", "Traceback ...\nModuleNotFoundError: No module named "
                    "'pyslurm'\n"), "slurm 25.11.7\n",
     "cannot import pyslurm (ModuleNotFoundError: No module named 'pyslurm')", BUILD),
    (SchedulerError(["python"], 1, "", "python3: fatal: Unable to process configuration "
                    "file\n"), "slurm 25.11.7\n",
     "loading pyslurm failed (python3: fatal: Unable to process configuration file)", CONF),
    (probe("25.11.2", (25, 11, 7)), SchedulerError(["scontrol"], 1, "", "fatal: no conf"),
     "`scontrol version` failed", PATHS),
])
def test_problem_names_the_setting_and_the_remedy(recorded_slurm: Any, python: Any,
                                                  scontrol: Any, expected: str | None,
                                                  remedy: str | None) -> None:
    runner = recorded_slurm({"scontrol": scontrol})
    runner.answers[sys.executable] = python
    problem = SlurmBackend(runner=runner, slurm_api="pyslurm").startup_problem()
    if expected is None:
        assert problem is None
        return
    assert problem is not None and problem.startswith("resource_manager.slurm_api: pyslurm, but ")
    assert expected in problem and str(remedy) in problem


def test_the_cli_has_no_problem_and_an_unknown_api_is_refused(recorded_slurm: Any) -> None:
    runner = recorded_slurm({})
    assert SlurmBackend(runner=runner).startup_problem() is None
    assert runner.calls == []
    with pytest.raises(ValueError, match="slurm_api must be one of"):
        SlurmBackend(runner=runner, slurm_api="rest")
