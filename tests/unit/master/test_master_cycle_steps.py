"""The reconciler's steps from higher rooms come in from the composition root, and one
function decides QUEUED -> RUNNING for a trial."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from lifecycle_helpers import causes, session_of
from master_helpers import queued_trial
from sqlalchemy.orm import Session

from hpcdet.dispatcher import JobStatus
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Trial
from hpcdet.master.scheduling.cycle_steps import CycleSteps, LinkedJob, SearchReport
from hpcdet.master.scheduling.job_outcomes import mark_running
from hpcdet.master.transitions import transition
from hpcdet.states import State


class _Recorder:
    """Steps that only say they were called, in order."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def steps(self) -> CycleSteps:
        return CycleSteps(search=self.search, end_experiments=self.end_experiments,
                          linked_jobs=self.linked_jobs, end_lost_runs=self.end_lost_runs,
                          register_services=lambda: self.calls.append("register_services"))

    def search(self, session: Session) -> SearchReport:
        self.calls.append("search")
        return SearchReport(trials_created=2, events_consumed=1)

    def end_experiments(self, session: Session) -> int:
        self.calls.append("end_experiments")
        return 0

    def linked_jobs(self, session: Session) -> list[LinkedJob]:
        self.calls.append("linked_jobs")
        return []

    def end_lost_runs(self, session: Session, linked: Sequence[LinkedJob],
                      statuses: Mapping[str, JobStatus]) -> int:
        self.calls.append("end_lost_runs")
        return 0


def test_a_cycle_calls_the_steps_it_was_handed_in_order(
        app: Flask, fake: FakeSchedulerBackend) -> None:
    recorder = _Recorder()
    reconciler = make_reconciler(app.config["HPCDET_SETTINGS"],
                                 make_session_factory(app.config["HPCDET_ENGINE"]), fake,
                                 steps=recorder.steps())
    report = reconciler.cycle()
    assert recorder.calls == ["search", "linked_jobs", "end_lost_runs", "register_services",
                              "search", "end_experiments"]
    # Both search passes are summed (the second added to the first).
    assert (report.trials_created, report.search.events_consumed) == (4, 2)


@pytest.mark.parametrize(("where", "nodes", "ended", "cause"), [
    ("job 7", "n[1-2]", False, "job 7 running on n[1-2]"),
    ("job 7", None, True, "job 7 ran on ? (seen after it ended)"),
    ("step 7.0", None, False, "step 7.0 running on ?"),
])
def test_mark_running_moves_a_queued_trial_with_its_cause(
        app: Flask, where: str, nodes: str | None, ended: bool, cause: str) -> None:
    trial_id = queued_trial(app, "token")
    with session_of(app) as session:
        mark_running(session, session.get_one(Trial, trial_id), where, nodes, ended=ended)
        session.commit()
    assert causes(app, trial_id)[-1] == cause
    with session_of(app) as session:
        assert session.get_one(Trial, trial_id).state == State.RUNNING.value


def test_mark_running_leaves_a_trial_that_is_not_queued(app: Flask) -> None:
    trial_id = queued_trial(app, "token")
    with session_of(app) as session:
        trial = session.get_one(Trial, trial_id)
        transition(session, trial, State.PAUSED, cause="a pause")
        mark_running(session, trial, "job 7", "n1")
        session.commit()
    assert causes(app, trial_id)[-1] == "a pause"
