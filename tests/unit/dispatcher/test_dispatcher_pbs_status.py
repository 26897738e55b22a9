"""PBS job states from REAL recorded qstat output (tests/data/pbs, OpenPBS 23.06.06)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher.base import JobPhase
from hpcdet.dispatcher.pbs.status import (
    DELIMITER,
    exit_code,
    job_status,
    nodes_of,
    only_unknown_ids,
    parse_dsv,
    phase_of,
    restarts,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "pbs"


def recorded(name: str) -> tuple[str, dict[str, Any]]:
    """The one job of a recorded ``qstat -f -F json`` file."""
    jobs: dict[str, dict[str, Any]] = json.loads((DATA / name).read_text(encoding="utf-8"))["Jobs"]
    assert len(jobs) == 1
    return next(iter(jobs.items()))


@pytest.mark.parametrize(("name", "phase", "code"), [
    ("queued.json", JobPhase.PENDING, None),
    ("held.json", JobPhase.PENDING, None),
    ("running-two-hosts.json", JobPhase.RUNNING, None),
    ("rerun-requeued.json", JobPhase.RUNNING, None),
    ("finished-ok.json", JobPhase.COMPLETED, 0),
    ("finished-directives.json", JobPhase.COMPLETED, 0),
    ("finished-qrerun.json", JobPhase.COMPLETED, 0),
    ("finished-exit3.json", JobPhase.FAILED, 3),
    ("finished-walltime.json", JobPhase.TIMEOUT, None),
    ("finished-qdel-queued.json", JobPhase.CANCELLED, None),
    ("finished-qdel-running.json", JobPhase.CANCELLED, 128 + 9),
    ("finished-qdel-running-two-hosts.json", JobPhase.CANCELLED, 128 + 15),
])  # fmt: skip
def test_every_recorded_state_maps_to_its_phase(name: str, phase: JobPhase,
                                                code: int | None) -> None:
    job_id, record = recorded(name)
    status = job_status(job_id, record)
    assert status.phase is phase
    assert status.exit_code == code
    assert status.native_state == record["job_state"]
    assert status.source == "qstat"


def test_requeued_job_counts_one_restart_and_its_hosts() -> None:
    _, running_again = recorded("rerun-requeued.json")
    assert restarts(running_again) == 1  # run_count 2: the second execution runs
    _, finished = recorded("finished-qrerun.json")
    assert restarts(finished) == 1
    _, first = recorded("running-two-hosts.json")
    assert restarts(first) == 0
    assert nodes_of(first["exec_host"]) == "pbsn1,pbsn2"
    _, queued = recorded("queued.json")
    assert restarts(queued) == 0 and nodes_of(queued.get("exec_host")) is None


def test_waiting_again_after_a_requeue_counts_it() -> None:
    record = {"job_state": "Q", "run_count": 1}
    assert restarts(record) == 1


def test_pending_reason_is_pbs_comment() -> None:
    job_id, record = recorded("queued.json")
    assert job_status(job_id, record).reason == "Not Running: Not enough free nodes available"


def test_unknown_state_letter_is_unknown() -> None:
    assert phase_of({"job_state": "Z"}) is JobPhase.UNKNOWN
    assert exit_code({"Exit_status": -29}) is None


def test_dsv_lines_split_at_unescaped_delimiters_only() -> None:
    d = DELIMITER
    stdout = (f"Job Id: 15.vm{d}Job_Name=xy{d}job_state=H{d}comment=a\\{d}b{d}"
              f"Variable_List=A=1\\,2\n"
              f"Job Id: 6.vm{d}job_state=F{d}substate=92{d}Exit_status=0\n")
    jobs = parse_dsv(stdout)
    assert list(jobs) == ["15.vm", "6.vm"]
    assert jobs["15.vm"]["comment"] == f"a{d}b"
    assert jobs["15.vm"]["Variable_List"] == "A=1,2"
    assert phase_of(jobs["6.vm"]) is JobPhase.COMPLETED
    assert phase_of(jobs["15.vm"]) is JobPhase.PENDING


def test_dsv_value_with_a_newline_stays_in_its_job() -> None:
    d = DELIMITER
    jobs = parse_dsv(f"Job Id: 1.vm{d}comment=two\nlines{d}job_state=R\n")
    assert jobs == {"1.vm": {"comment": "two\nlines", "job_state": "R"}}


def test_only_unknown_ids_accepts_qstat_153_for_unknown_ids_only() -> None:
    assert only_unknown_ids("qstat: Unknown Job Id 999.vm\n")
    assert not only_unknown_ids("qstat: cannot connect to server vm (errno=15010)\n")
    assert not only_unknown_ids("")
