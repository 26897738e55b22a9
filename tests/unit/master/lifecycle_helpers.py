"""Helpers for the trial lifecycle tests: read rows back, move a trial along, set columns.

Rows are read in a session of their own and detached, so a test sees what the reconciler
committed, never a cached copy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import CONFIG, create
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from hpcdet.dispatcher import JobPhase
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Job, StateChange, Trial, TrialLog
from hpcdet.master.scheduling.reconciler import Reconciler

USER = {"X-Hpcdet-User": "bob"}


def session_of(app: Flask) -> Session:
    """A new session on the app's database (use it in a ``with``)."""
    return make_session_factory(app.config["HPCDET_ENGINE"])()


def trial_of(app: Flask, exp_id: int) -> Trial:
    """The experiment's only trial, as committed."""
    with session_of(app) as session:
        trial = session.scalars(select(Trial).where(Trial.experiment_id == exp_id)).one()
        session.expunge(trial)
        return trial


def jobs_of(app: Flask, trial_id: int) -> list[Job]:
    """The trial's jobs in the order they were recorded."""
    with session_of(app) as session:
        jobs = list(session.scalars(select(Job).where(Job.trial_id == trial_id)
                                    .order_by(Job.id)))
        session.expunge_all()
        return jobs


def history(app: Flask, kind: str, entity_id: int) -> list[StateChange]:
    """The entity's state changes, oldest first."""
    with session_of(app) as session:
        rows = list(session.scalars(select(StateChange).where(
            StateChange.entity_kind == kind, StateChange.entity_id == entity_id)
            .order_by(StateChange.id)))
        session.expunge_all()
        return rows


def causes(app: Flask, trial_id: int) -> list[str]:
    """The recorded cause of each of the trial's state changes, oldest first."""
    return [row.cause for row in history(app, "trial", trial_id)]


def trial_states(app: Flask, trial_id: int) -> list[str]:
    """The states the trial went through, oldest first."""
    return [row.to_state for row in history(app, "trial", trial_id)]


def master_lines(app: Flask, trial_id: int) -> list[str]:
    """The lines the master itself wrote into the trial's log, oldest first."""
    with session_of(app) as session:
        return list(session.scalars(select(TrialLog.line).where(
            TrialLog.trial_id == trial_id, TrialLog.stream == "master").order_by(TrialLog.id)))


def set_trial(app: Flask, trial_id: int, **values: Any) -> None:
    """Set columns of a trial (not its state) as another part of the master would."""
    with session_of(app) as session:
        session.execute(update(Trial).where(Trial.id == trial_id).values(**values))
        session.commit()


def start(client: FlaskClient, reconciler: Reconciler, fake: FakeSchedulerBackend,
          config: str = CONFIG, *, running: bool = True) -> tuple[int, int]:
    """Create an experiment and cycle until its trial's first job is queued (or running).

    Returns ``(experiment id, trial id)``; the first job of a test is job ``101``.
    """
    response = create(client, config)
    assert response.status_code == 201, response.get_json()
    exp_id = response.get_json()["experiment"]["id"]
    reconciler.cycle()
    trial_id = trial_of(client.application, exp_id).id
    if running:
        fake.phases[last_job_id(client.application, trial_id)] = JobPhase.RUNNING
        reconciler.cycle()
        assert trial_of(client.application, exp_id).state == "RUNNING"
    return exp_id, trial_id


def last_job_id(app: Flask, trial_id: int) -> str:
    """The Slurm id of the trial's newest job."""
    return str(jobs_of(app, trial_id)[-1].job_id)


def end_job(app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler, trial_id: int,
            phase: JobPhase) -> None:
    """The trial's newest job ends with ``phase``; one cycle sees it."""
    fake.phases[last_job_id(app, trial_id)] = phase
    reconciler.cycle()


def job_dir(app: Flask, trial_id: int) -> Path:
    """The trial's job directory."""
    with session_of(app) as session:
        return Path(session.get_one(Trial, trial_id).job_dir)


def trial_json(app: Flask, trial_id: int) -> dict[str, Any]:
    """The ``trial.json`` the master wrote for the trial's newest job."""
    data: dict[str, Any] = json.loads((job_dir(app, trial_id) / "trial.json").read_text())
    return data
