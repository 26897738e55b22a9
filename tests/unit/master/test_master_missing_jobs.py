"""One empty read is never final: a job no source knows is UNKNOWN once, MISSING the next time."""

from __future__ import annotations

from types import SimpleNamespace

from hpcdet.dispatcher import JobPhase, JobStatus
from hpcdet.master.scheduling.polling import Poller


def _status(job_id: str, phase: JobPhase) -> JobStatus:
    return JobStatus(job_id, phase, native_state=phase.value, source="none")


def settle(state: SimpleNamespace, statuses: dict[str, JobStatus]) -> dict[str, JobPhase]:
    settled = Poller._settle_missing(state, statuses)  # type: ignore[arg-type]
    return {job_id: status.phase for job_id, status in settled.items()}


def test_a_job_missing_from_one_poll_is_unknown_and_from_two_is_missing() -> None:
    state = SimpleNamespace(_missing_once=set())
    first = settle(state, {"1": _status("1", JobPhase.MISSING),
                           "2": _status("2", JobPhase.RUNNING)})
    assert first == {"1": JobPhase.UNKNOWN, "2": JobPhase.RUNNING}
    second = settle(state, {"1": _status("1", JobPhase.MISSING),
                            "2": _status("2", JobPhase.MISSING)})
    assert second == {"1": JobPhase.MISSING, "2": JobPhase.UNKNOWN}


def test_a_job_found_again_starts_over() -> None:
    state = SimpleNamespace(_missing_once=set())
    settle(state, {"1": _status("1", JobPhase.MISSING)})
    assert settle(state, {"1": _status("1", JobPhase.RUNNING)}) == {"1": JobPhase.RUNNING}
    assert settle(state, {"1": _status("1", JobPhase.MISSING)}) == {"1": JobPhase.UNKNOWN}
