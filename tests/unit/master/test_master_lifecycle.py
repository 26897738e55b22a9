"""Pause, activate, cancel, kill, archive, unarchive: the routes, then what the reconciler does.

``POST /api/v1/experiments/<id>/<action>`` changes states only
(hpcdet/master/experiments/lifecycle.py);
the reconciler withdraws queued jobs at once, asks running code to stop through the
preemption route and cancels what is still running after ``preemption_timeout``. The
scheduler is the scripted fake; the database is real (SQLite and PostgreSQL).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from lifecycle_helpers import (
    end_job,
    history,
    job_dir,
    jobs_of,
    master_lines,
    session_of,
    set_trial,
    start,
    trial_json,
    trial_of,
    trial_states,
)
from master_helpers import CONFIG, assert_error, create, job_token
from sqlalchemy import select

from hpcdet.dispatcher import JobPhase
from hpcdet.jobfiles import PREEMPTED, write_exit_reason
from hpcdet.master.models import Experiment, SearcherEvent, Trial, utcnow
from hpcdet.master.scheduling.reconciler import Reconciler

RANDOM = """\
name: search
entrypoint: python3 train.py
hyperparameters:
  lr: {type: double, minval: 0.001, maxval: 0.1}
searcher: {name: random, metric: loss, max_trials: 3, max_concurrent_trials: 2}
"""


def _act(client: FlaskClient, exp_id: int, action: str, user: str = "bob") -> Any:
    return client.post(f"/api/v1/experiments/{exp_id}/{action}",
                       headers={"X-Hpcdet-User": user})


def _ok(client: FlaskClient, exp_id: int, action: str) -> dict[str, Any]:
    response = _act(client, exp_id, action)
    assert response.status_code == 200, response.get_json()
    body: dict[str, Any] = response.get_json()["experiment"]
    return body


def _exp_state(app: Flask, exp_id: int) -> str:
    with session_of(app) as session:
        return session.get_one(Experiment, exp_id).state


def _preempt(app: Flask, client: FlaskClient, trial_id: int) -> bool:
    token = job_token(trial_of_id(app, trial_id))
    response = client.get(f"/api/v1/trials/{trial_id}/preemption",
                          headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.get_json()
    return bool(response.get_json()["preempt"])


def trial_of_id(app: Flask, trial_id: int) -> Trial:
    with session_of(app) as session:
        trial = session.get_one(Trial, trial_id)
        session.expunge(trial)
        return trial


def _last_change(app: Flask, kind: str, entity_id: int) -> tuple[str, str, str]:
    row = history(app, kind, entity_id)[-1]
    return row.to_state, row.actor, row.cause


def _finish(client: FlaskClient, app: Flask, reconciler: Reconciler,
            fake: FakeSchedulerBackend) -> int:
    """An experiment run to COMPLETED."""
    exp_id, trial_id = start(client, reconciler, fake)
    end_job(app, fake, reconciler, trial_id, JobPhase.COMPLETED)
    reconciler.cycle()
    assert _exp_state(app, exp_id) == "COMPLETED"
    return exp_id


# pause --------------------------------------------------------------------------------
def test_pausing_asks_a_running_trials_code_to_stop(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    assert _preempt(app, client, trial_id) is False
    assert _ok(client, exp_id, "pause")["state"] == "PAUSED"
    assert trial_of(app, exp_id).state == "PAUSED"
    assert trial_of(app, exp_id).stop_requested_at is not None
    assert _preempt(app, client, trial_id) is True
    assert _last_change(app, "experiment", exp_id) == ("PAUSED", "bob", "pause requested")
    assert _last_change(app, "trial", trial_id) == ("PAUSED", "bob", "experiment paused")


def test_pausing_withdraws_a_queued_job_at_once(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake, running=False)
    _ok(client, exp_id, "pause")
    reconciler.cycle()
    assert fake.cancelled == ["101"]
    reconciler.cycle()
    reconciler.cycle()
    assert fake.cancelled == ["101"]
    assert trial_of(app, exp_id).state == "PAUSED"
    assert [j.active for j in jobs_of(app, trial_id)] == [False]
    assert len(fake.submitted) == 1
    assert master_lines(app, trial_id)[-1].endswith("the trial stays paused")


def test_a_running_job_is_cancelled_only_after_the_preemption_timeout(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    # 60 s, not 1: on a loaded CI host a cycle can take over a second, which made the
    # first assertion fail by the clock (the timeout is then moved into the past below).
    exp_id, trial_id = start(client, reconciler, fake, CONFIG + "preemption_timeout: 60\n")
    _ok(client, exp_id, "pause")
    reconciler.cycle()
    assert fake.cancelled == []  # its code has a minute to checkpoint and exit
    set_trial(app, trial_id, stop_requested_at=utcnow() - dt.timedelta(seconds=61))
    reconciler.cycle()
    assert fake.cancelled == ["101"]
    assert trial_of(app, exp_id).state == "PAUSED"
    assert [j.active for j in jobs_of(app, trial_id)] == [False]
    reconciler.cycle()
    assert len(fake.submitted) == 1


def test_the_default_preemption_timeout_is_not_over_in_a_few_cycles(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    _ok(client, exp_id, "pause")
    set_trial(app, trial_id, stop_requested_at=utcnow() - dt.timedelta(minutes=59))
    reconciler.cycle()
    assert fake.cancelled == []
    set_trial(app, trial_id, stop_requested_at=utcnow() - dt.timedelta(minutes=61))
    reconciler.cycle()
    assert fake.cancelled == ["101"]


def test_a_paused_trial_stays_paused_when_its_job_ends_and_activate_resubmits_it(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    set_trial(app, trial_id, latest_checkpoint="paused-at")
    _ok(client, exp_id, "pause")
    reconciler.cycle()
    write_exit_reason(job_dir(app, trial_id), "101", 0, PREEMPTED, rank=0)
    end_job(app, fake, reconciler, trial_id, JobPhase.COMPLETED)  # checkpointed and exited
    reconciler.cycle()
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts) == ("PAUSED", 0)
    assert len(fake.submitted) == 1 and fake.cancelled == []
    assert _ok(client, exp_id, "activate")["state"] == "ACTIVE"
    assert trial_of(app, exp_id).state == "QUEUED"
    assert trial_of(app, exp_id).stop_requested_at is None
    assert _preempt(app, client, trial_id) is False
    assert _last_change(app, "experiment", exp_id) == ("ACTIVE", "bob", "activate requested")
    assert _last_change(app, "trial", trial_id) == ("QUEUED", "bob", "experiment activated")
    reconciler.cycle()
    jobs = jobs_of(app, trial_id)
    assert [(j.job_id, j.run_id, j.active) for j in jobs] == [("101", 1, False),
                                                              ("102", 2, True)]
    assert trial_json(app, trial_id)["latest_checkpoint"] == "paused-at"
    assert trial_states(app, trial_id) == ["QUEUED", "RUNNING", "PAUSED", "QUEUED"]
    fake.phases["102"] = JobPhase.RUNNING
    reconciler.cycle()
    end_job(app, fake, reconciler, trial_id, JobPhase.COMPLETED)
    reconciler.cycle()
    assert (trial_of(app, exp_id).state, _exp_state(app, exp_id)) == ("COMPLETED", "COMPLETED")


def test_a_job_the_master_cancelled_for_a_pause_is_no_failure_after_activate(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    """Activated while the job cancelled for the pause is still ending (Slurm's KillWait).

    That cancellation was the master's own doing, not a failure "behind the master's
    back": it must not use up a restart (here the only one: max_restarts 0).
    """
    config = CONFIG + "preemption_timeout: 1\nmax_restarts: 0\n"
    exp_id, trial_id = start(client, reconciler, fake, config)
    _ok(client, exp_id, "pause")
    set_trial(app, trial_id, stop_requested_at=utcnow() - dt.timedelta(seconds=5))
    fake.cancel_ends_jobs = False
    reconciler.cycle()
    assert fake.cancelled == ["101"]
    _ok(client, exp_id, "activate")
    reconciler.cycle()
    fake.phases["101"] = JobPhase.CANCELLED  # the scancel takes effect
    reconciler.cycle()
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts) == ("QUEUED", 0)
    reconciler.cycle()
    assert [(j.job_id, j.run_id) for j in jobs_of(app, trial_id)] == [("101", 1), ("102", 2)]


def test_the_searcher_creates_no_trials_while_paused(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = create(client, RANDOM).get_json()["experiment"]["id"]
    _ok(client, exp_id, "pause")
    reconciler.cycle()
    reconciler.cycle()
    assert _trial_count(app, exp_id) == 0 and fake.submitted == []
    _ok(client, exp_id, "activate")
    reconciler.cycle()
    assert _trial_count(app, exp_id) == 2 and len(fake.submitted) == 2


def test_reports_wait_for_the_searcher_while_paused(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = create(client, RANDOM).get_json()["experiment"]["id"]
    reconciler.cycle()
    _ok(client, exp_id, "pause")
    with session_of(app) as session:
        trial_id = session.scalars(select(Trial.id).where(Trial.experiment_id == exp_id)
                                   .order_by(Trial.id)).first()
        assert trial_id is not None
        session.add(SearcherEvent(experiment_id=exp_id, trial_id=trial_id, steps_completed=5,
                                  metrics={"loss": 0.5}))
        session.commit()
    reconciler.cycle()
    assert _unprocessed_events(app) == 1
    _ok(client, exp_id, "activate")
    reconciler.cycle()
    assert _unprocessed_events(app) == 0


def _trial_count(app: Flask, exp_id: int) -> int:
    with session_of(app) as session:
        return len(session.scalars(select(Trial.id).where(Trial.experiment_id == exp_id)).all())


def _unprocessed_events(app: Flask) -> int:
    with session_of(app) as session:
        return len(session.scalars(select(SearcherEvent.id).where(~SearcherEvent.processed))
                   .all())


def test_asking_for_what_is_already_so_is_a_no_op(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, _trial_id = start(client, reconciler, fake)
    assert _ok(client, exp_id, "activate")["state"] == "ACTIVE"
    assert [row.to_state for row in history(app, "experiment", exp_id)] == ["ACTIVE"]
    _ok(client, exp_id, "pause")
    assert _ok(client, exp_id, "pause")["state"] == "PAUSED"
    assert [row.to_state for row in history(app, "experiment", exp_id)] == ["ACTIVE", "PAUSED"]


@pytest.mark.parametrize("action", ["pause", "activate", "cancel", "kill"])
def test_changing_an_ended_experiment_is_a_conflict(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend, action: str) -> None:
    exp_id = _finish(client, app, reconciler, fake)
    message = assert_error(_act(client, exp_id, action), 409, "conflict")
    assert "COMPLETED" in message
    assert _exp_state(app, exp_id) == "COMPLETED"


def test_activating_a_stopping_experiment_is_a_conflict(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, _trial_id = start(client, reconciler, fake)
    _ok(client, exp_id, "cancel")
    assert "STOPPING_CANCELED" in assert_error(_act(client, exp_id, "activate"), 409, "conflict")
    assert "STOPPING_CANCELED" in assert_error(_act(client, exp_id, "pause"), 409, "conflict")


# cancel and kill ----------------------------------------------------------------------
def test_cancel_lets_running_code_stop_and_ends_canceled(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    assert _ok(client, exp_id, "cancel")["state"] == "STOPPING_CANCELED"
    assert trial_of(app, exp_id).state == "STOPPING_CANCELED"
    assert _preempt(app, client, trial_id) is True
    assert _last_change(app, "experiment", exp_id) == ("STOPPING_CANCELED", "bob",
                                                       "cancel requested")
    assert _last_change(app, "trial", trial_id)[:2] == ("STOPPING_CANCELED", "bob")
    reconciler.cycle()
    assert fake.cancelled == []  # graceful: the code checkpoints and exits by itself
    end_job(app, fake, reconciler, trial_id, JobPhase.COMPLETED)
    assert trial_of(app, exp_id).state == "CANCELED"
    assert _exp_state(app, exp_id) == "CANCELED"
    assert len(fake.submitted) == 1


def test_cancel_withdraws_a_queued_job_at_once(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake, running=False)
    _ok(client, exp_id, "cancel")
    reconciler.cycle()
    assert fake.cancelled == ["101"]
    assert trial_of(app, exp_id).state == "CANCELED"
    assert _exp_state(app, exp_id) == "CANCELED"


def test_cancelling_a_paused_experiment_ends_it_without_a_new_job(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake, running=False)
    _ok(client, exp_id, "pause")
    reconciler.cycle()  # the queued job is withdrawn
    _ok(client, exp_id, "cancel")
    reconciler.cycle()
    assert trial_states(app, trial_id) == ["QUEUED", "PAUSED", "STOPPING_CANCELED", "CANCELED"]
    assert _exp_state(app, exp_id) == "CANCELED"
    assert len(fake.submitted) == 1


def test_kill_cancels_a_running_job_at_once(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    assert _ok(client, exp_id, "kill")["state"] == "STOPPING_KILLED"
    assert _last_change(app, "experiment", exp_id) == ("STOPPING_KILLED", "bob",
                                                       "kill requested")
    assert _last_change(app, "trial", trial_id)[:2] == ("STOPPING_KILLED", "bob")
    reconciler.cycle()
    assert fake.cancelled == ["101"]
    assert trial_of(app, exp_id).state == "CANCELED"
    assert _exp_state(app, exp_id) == "CANCELED"


def test_kill_after_cancel_cancels_at_once_and_cancel_after_kill_changes_nothing(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    _ok(client, exp_id, "cancel")
    reconciler.cycle()
    assert fake.cancelled == []
    assert _ok(client, exp_id, "kill")["state"] == "STOPPING_KILLED"
    assert _ok(client, exp_id, "cancel")["state"] == "STOPPING_KILLED"
    reconciler.cycle()
    assert fake.cancelled == ["101"]
    assert trial_states(app, trial_id) == ["QUEUED", "RUNNING", "STOPPING_CANCELED",
                                           "STOPPING_KILLED", "CANCELED"]


# archive ------------------------------------------------------------------------------
def _listed(client: FlaskClient, query: str = "") -> list[int]:
    return [e["id"] for e in client.get(f"/api/v1/experiments{query}").get_json()["experiments"]]


def test_only_an_ended_experiment_can_be_archived(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, _trial_id = start(client, reconciler, fake)
    assert "ACTIVE" in assert_error(_act(client, exp_id, "archive"), 409, "conflict")
    _ok(client, exp_id, "kill")
    reconciler.cycle()
    assert _ok(client, exp_id, "archive")["archived"] is True
    assert exp_id not in _listed(client)
    assert exp_id in _listed(client, "?archived=true")
    assert client.get(f"/api/v1/experiments/{exp_id}").get_json()["experiment"]["archived"]
    assert _ok(client, exp_id, "unarchive")["archived"] is False
    assert exp_id in _listed(client)
    assert _exp_state(app, exp_id) == "CANCELED"


def test_archiving_hides_only_that_experiment(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    ended = _finish(client, app, reconciler, fake)
    running = create(client).get_json()["experiment"]["id"]
    _ok(client, ended, "archive")
    assert _listed(client) == [running]
    assert _listed(client, "?archived=true") == [running, ended]


# the route ----------------------------------------------------------------------------
def test_an_unknown_action_is_not_found(client: FlaskClient) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    message = assert_error(_act(client, exp_id, "frobnicate"), 404, "not_found")
    assert "frobnicate" in message and "/api/v1/openapi.json" in message


def test_an_unknown_experiment_is_not_found(client: FlaskClient) -> None:
    assert_error(_act(client, 999, "pause"), 404, "not_found")


def test_without_a_user_header_the_actor_is_anonymous(
        client: FlaskClient, app: Flask) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    assert client.post(f"/api/v1/experiments/{exp_id}/pause").status_code == 200
    assert _last_change(app, "experiment", exp_id)[1] == "anonymous"


def test_the_response_counts_the_trials(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, _trial_id = start(client, reconciler, fake)
    assert _ok(client, exp_id, "pause")["num_trials"] == 1
