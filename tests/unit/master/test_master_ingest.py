"""The group-commit metric path, on SQLite and PostgreSQL (COPY)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Experiment, Metric, Trial
from hpcdet.master.reports.ingest import MetricWriter
from hpcdet.master.transitions import transition
from hpcdet.states import State


def _trials(app: Flask, count: int) -> list[int]:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        exp = Experiment(name="e", owner="o", config={}, original_config="", context=b"",
                         searcher_name="single")
        session.add(exp)
        transition(session, exp, State.ACTIVE, cause="t")
        trials = [Trial(experiment_id=exp.id, hparams={}, seed=0, token=f"tok{i}")
                  for i in range(count)]
        for trial in trials:
            session.add(trial)
            transition(session, trial, State.QUEUED, cause="t")
        session.commit()
        return [t.id for t in trials]


def test_hostile_metric_names_survive_copy(app: Flask) -> None:
    (trial_id,) = _trials(app, 1)
    names = ["tab\there", "new\nline", "back\\slash", "cr\rx", "ünïcode", "comma,;'\""]
    writer = MetricWriter(app.config["HPCDET_ENGINE"])
    assert writer.write(trial_id, "training", [(1, {n: float(i) for i, n in enumerate(names)})])
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        stored = {n: v for n, v in session.execute(select(Metric.name, Metric.value))}
    assert stored == {n: float(i) for i, n in enumerate(names)}


def test_concurrent_requests_are_all_stored_and_progress_only_moves_forward(app: Flask) -> None:
    trial_ids = _trials(app, 4)
    writer = MetricWriter(app.config["HPCDET_ENGINE"])

    def report(trial_id: int) -> None:
        for step in (5, 3, 9, 7):  # out of order, as retries may arrive
            writer.write(trial_id, "training", [(step, {"loss": 1.0, "acc": 0.5})])

    threads = [threading.Thread(target=report, args=(t,)) for t in trial_ids for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        assert len(session.scalars(select(Metric.id)).all()) == 4 * 3 * 4 * 2
        assert set(session.scalars(select(Trial.steps_completed))) == {9}


def test_unknown_trial_has_no_token(app: Flask) -> None:
    assert MetricWriter(app.config["HPCDET_ENGINE"]).token_of(12345) is None


def test_a_batch_sqlite_refused_as_locked_is_written_again(
        app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    # SQLite (WAL) refuses at once, without its busy wait, a write in a transaction whose
    # snapshot another process changed; schemathesis saw it as a 500 on reports.
    import sqlite3

    from sqlalchemy.exc import OperationalError

    from hpcdet.master.reports import ingest

    (trial_id,) = _trials(app, 1)
    real, calls = ingest._apply_all, []

    def locked_once(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("INSERT ...", {}, sqlite3.OperationalError(
                "database is locked"))
        return real(*args, **kwargs)

    monkeypatch.setattr(ingest, "_apply_all", locked_once)
    writer = MetricWriter(app.config["HPCDET_ENGINE"])
    assert writer.write(trial_id, "training", [(1, {"loss": 0.5})]).rows == 1
    assert len(calls) == 2


def test_apply_async_stores_and_a_closed_loop_stops_no_other_waiter(app: Flask) -> None:
    import asyncio

    from hpcdet.master.reports.ingest import Report, ReportBatch, _Pending

    (trial_id,) = _trials(app, 1)
    writer = MetricWriter(app.config["HPCDET_ENGINE"])
    batch = ReportBatch(trial_id, [Report("training", 1, {"loss": 1.0})])
    assert asyncio.run(writer.apply_async(batch)).rows == 1

    def closed_loop() -> None:
        raise RuntimeError("Event loop is closed")

    gone = _Pending(ReportBatch(trial_id, [Report("training", 2, {"loss": 1.0})]),
                    on_done=closed_loop)
    waiting = _Pending(ReportBatch(trial_id, [Report("training", 3, {"loss": 1.0})]))
    writer._flush([gone, waiting])
    assert waiting.done.is_set() and waiting.result is not None and waiting.result.rows == 1
