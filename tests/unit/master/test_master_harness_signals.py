"""The trial-facing signal routes (preemption, early exit) on SQLite and PostgreSQL.

First through Flask's test client, then with the real master app served over HTTP in
this process (werkzeug), talked to by the real Core API and the real harness.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from hang_guard import HANG_GUARD_S, wait_until
from master_helpers import assert_error, create
from werkzeug.serving import WSGIRequestHandler, make_server

import hpcdet.core
from hpcdet.core import _context, _preempt
from hpcdet.master.models import Trial
from hpcdet.master.security.tokens import hash_token
from hpcdet.states import State

REPO = pathlib.Path(__file__).resolve().parents[3]
TOKEN = "secret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _new_trial(app: Flask, client: FlaskClient) -> int:
    """A QUEUED trial of a new experiment, with the token TOKEN."""
    exp_id = create(client).get_json()["experiment"]["id"]
    with app.app_context():
        from hpcdet.master.api.common import db
        from hpcdet.master.transitions import transition

        trial = Trial(experiment_id=exp_id, hparams={"lr": 0.1}, seed=1, token=hash_token(TOKEN))
        db().add(trial)
        transition(db(), trial, State.QUEUED, cause="test")
        db().commit()
        return trial.id


def _move(app: Flask, trial_id: int, *states: State) -> None:
    with app.app_context():
        from hpcdet.master.api.common import db
        from hpcdet.master.transitions import transition

        for state in states:
            transition(db(), db().get_one(Trial, trial_id), state, cause="test")
        db().commit()


def _stored(app: Flask, trial_id: int) -> Trial:
    with app.app_context():
        from hpcdet.master.api.common import db

        trial = db().get_one(Trial, trial_id)
        db().expunge(trial)
        return trial


@pytest.fixture
def trial_id(app: Flask, client: FlaskClient) -> int:
    return _new_trial(app, client)


def _preempt_answer(client: FlaskClient, trial_id: int) -> Any:
    response = client.get(f"/api/v1/trials/{trial_id}/preemption", headers=AUTH)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_preemption_is_asked_for_only_while_stopping(
    app: Flask, client: FlaskClient, trial_id: int
) -> None:
    assert _preempt_answer(client, trial_id) == {"preempt": False}  # QUEUED
    _move(app, trial_id, State.RUNNING)
    assert _preempt_answer(client, trial_id) == {"preempt": False}
    _move(app, trial_id, State.STOPPING_COMPLETED)  # the searcher stopped it
    assert _preempt_answer(client, trial_id) == {"preempt": True}
    _move(app, trial_id, State.STOPPING_KILLED)
    assert _preempt_answer(client, trial_id) == {"preempt": True}
    _move(app, trial_id, State.CANCELED)
    assert _preempt_answer(client, trial_id) == {"preempt": False}


def test_preemption_needs_the_trials_token(client: FlaskClient, trial_id: int) -> None:
    url = f"/api/v1/trials/{trial_id}/preemption"
    assert_error(client.get(url), 401, "unauthorized")
    assert_error(client.get(url, headers={"Authorization": "Bearer other"}), 401, "unauthorized")
    assert "trial 999 not found" in assert_error(
        client.get("/api/v1/trials/999/preemption", headers=AUTH), 404, "not_found"
    )


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("invalid_hp", "invalid_hp"),
        ("INVALID_HP", "invalid_hp"),
        ("errored", "errored"),
        ("USER_REQUESTED_STOP", "user_requested_stop"),
    ],
)
def test_early_exit_is_stored_lower_case_and_leaves_the_state(
    app: Flask, client: FlaskClient, trial_id: int, sent: str, stored: str
) -> None:
    _move(app, trial_id, State.RUNNING)
    response = client.post(
        f"/api/v1/trials/{trial_id}/early_exit", json={"reason": sent}, headers=AUTH
    )
    assert (response.status_code, response.get_json()) == (200, {})
    trial = _stored(app, trial_id)
    assert (trial.early_exit, trial.state) == (stored, "RUNNING")


def test_the_first_early_exit_reason_is_kept(
    app: Flask, client: FlaskClient, trial_id: int
) -> None:
    url = f"/api/v1/trials/{trial_id}/early_exit"
    for reason in ("invalid_hp", "errored", "invalid_hp"):
        assert client.post(url, json={"reason": reason}, headers=AUTH).status_code == 200
    assert _stored(app, trial_id).early_exit == "invalid_hp"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"reason": "bored"}, "reason: unknown early exit reason 'bored'; use one of invalid_hp"),
        ({"reason": 3}, "reason: unknown early exit reason 3"),
        ({}, "reason: unknown early exit reason None"),
        ([], "the request body must be a JSON object"),
    ],
)
def test_bad_early_exits_are_refused(
    app: Flask, client: FlaskClient, trial_id: int, body: Any, message: str
) -> None:
    response = client.post(f"/api/v1/trials/{trial_id}/early_exit", json=body, headers=AUTH)
    assert assert_error(response, 400, "bad_request").startswith(message)
    assert _stored(app, trial_id).early_exit is None


def test_early_exit_needs_the_trials_token(
    app: Flask, client: FlaskClient, trial_id: int
) -> None:
    body = {"reason": "invalid_hp"}
    assert_error(client.post(f"/api/v1/trials/{trial_id}/early_exit", json=body), 401,
                 "unauthorized")
    assert_error(client.post("/api/v1/trials/999/early_exit", json=body, headers=AUTH), 404,
                 "not_found")
    assert _stored(app, trial_id).early_exit is None


# --- the real master over HTTP ------------------------------------------------------------


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None  # keep test output quiet


@pytest.fixture
def master_url(app: Flask) -> Iterator[str]:
    """The master app served by werkzeug on a free port of 127.0.0.1, in a thread."""
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.fixture
def job_dir(tmp_path: pathlib.Path, master_url: str, trial_id: int) -> pathlib.Path:
    """The job directory of ``trial_id`` as the master lays it out (trial.json, .token)."""
    job = tmp_path / "job"
    (job / "context").mkdir(parents=True)
    (job / ".token").write_text(TOKEN + "\n")
    trial = {"master_url": master_url, "experiment_id": 1, "trial_id": trial_id,
             "trial_seed": 7, "hparams": {"lr": 0.1}, "checkpoint_dir": str(job / "ckpt"),
             "experiment_config": {"entrypoint": "python3 train.py"}, "token_file": ".token"}
    (job / "trial.json").write_text(json.dumps(trial))
    return job


@pytest.fixture
def in_job(job_dir: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[pathlib.Path]:
    """This process is rank 0 of a one-slot job of ``trial_id``, polling every 10 ms."""
    monkeypatch.setenv("DET_TRIAL_INFO", str(job_dir / "trial.json"))
    monkeypatch.setenv("DET_JOB_DIR", str(job_dir))
    monkeypatch.setenv(_preempt.POLL_ENV, "0.01")
    for name in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    _preempt._reset_for_tests()
    yield job_dir
    _context.close_open_contexts()
    _preempt._reset_for_tests()


def _wait_until(condition: Callable[[], bool]) -> None:
    """Wait for a background thread to get somewhere (a hang fails, not a slow machine)."""
    wait_until(condition, "the background thread's step")


@pytest.mark.usefixtures("in_job")
def test_the_core_api_stops_when_the_master_stops_the_trial(app: Flask, trial_id: int) -> None:
    _move(app, trial_id, State.RUNNING)
    with hpcdet.core.init() as core:
        assert core.info.trial_id == trial_id
        assert core.preempt.should_preempt() is False
        _move(app, trial_id, State.STOPPING_COMPLETED)
        _wait_until(core.preempt.should_preempt)
        core.train.report_early_exit(hpcdet.core.EarlyExitReason.USER_REQUESTED_STOP)
    trial = _stored(app, trial_id)
    assert (trial.early_exit, trial.state) == ("user_requested_stop", "STOPPING_COMPLETED")


INVALID_HP_SCRIPT = """
import hpcdet, hpcdet.core
with hpcdet.core.init() as core:
    raise hpcdet.InvalidHP(f"lr {core.info.hparams['lr']} cannot work")
"""


def test_the_harness_reports_a_scripts_invalid_hp(
    app: Flask, trial_id: int, job_dir: pathlib.Path
) -> None:
    (job_dir / "context" / "train.py").write_text(INVALID_HP_SCRIPT)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DET_", "SLURM_", "MASTER_", "RANK", "WORLD_SIZE", "LOCAL_"))}
    env.update(PYTHONPATH=str(REPO), DET_TRIAL_INFO=str(job_dir / "trial.json"),
               DET_JOB_DIR=str(job_dir), OMP_NUM_THREADS="1")
    result = subprocess.run([sys.executable, "-W", "error", "-m", "hpcdet.harness"],
                            cwd=job_dir / "context", env=env, capture_output=True, text=True,
                            timeout=HANG_GUARD_S)
    assert result.returncode == 0, result.stderr
    assert "raised InvalidHP (lr 0.1 cannot work): reported an invalid_hp early exit" in (
        result.stderr)
    assert _stored(app, trial_id).early_exit == "invalid_hp"
