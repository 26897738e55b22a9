"""TensorBoards (det tensorboard start) on the master: POST /tensorboards, the metrics
route's ``since_steps`` that the job's syncer polls with, and their job type.

The scheduler is scripted (fake_scheduler.py); the dev cluster runs a real TensorBoard in
tests/integration/test_it_tensorboard.py.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import CONFIG, assert_error, make_context

from hpcdet.dispatcher import JobPhase, JobStatus
from hpcdet.master.app import create_app
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import CommandTask, Trial
from hpcdet.master.queue.job_queue import COMMAND, EXPERIMENT, Ownership, job_type
from hpcdet.master.scheduling.task_tokens import USER_TOKEN_LIFETIME, revoke_ended_task_tokens
from hpcdet.master.scheduling.tasks import apply_status
from hpcdet.master.security import tokens
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.transitions import transition
from hpcdet.states import State

pytestmark = pytest.mark.interactive
ALICE = {"X-Hpcdet-User": "alice"}


def make_app(settings: MasterSettings, fake: FakeSchedulerBackend) -> Iterator[Flask]:
    app = create_app(settings, backend=fake)
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def tb_app(settings: MasterSettings, fake: FakeSchedulerBackend) -> Iterator[Flask]:
    yield from make_app(settings, fake)


@pytest.fixture
def api(tb_app: Flask) -> FlaskClient:
    return tb_app.test_client()


def experiment_with_trial(app: Flask, api: FlaskClient,
                          headers: dict[str, str] = ALICE) -> tuple[int, int]:
    """An experiment of alice's and a trial of it whose harness token is ``secret``."""
    answer = api.post("/api/v1/experiments", headers=headers,
                      json={"config": CONFIG, "context": make_context()})
    assert answer.status_code == 201, answer.json
    exp_id = int(answer.json["experiment"]["id"])
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        trial = Trial(experiment_id=exp_id, hparams={}, seed=1,
                      token=tokens.hash_token("secret"))
        session.add(trial)
        transition(session, trial, State.QUEUED, cause="test")
        session.commit()
        return exp_id, int(trial.id)


def report(api: FlaskClient, trial_id: int, group: str, steps: int, **metrics: float) -> None:
    answer = api.post(f"/api/v1/trials/{trial_id}/metrics",
                      headers={"Authorization": "Bearer secret"},
                      json={"group": group, "reports": [
                          {"steps_completed": steps, "metrics": metrics}]})
    assert answer.status_code == 200, answer.json


def start(api: FlaskClient, headers: dict[str, str] = ALICE, **body: Any) -> Any:
    return api.post("/api/v1/tensorboards", json=body, headers=headers)


def test_a_tensorboard_is_a_task_running_the_syncer(
        tb_app: Flask, api: FlaskClient, fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = experiment_with_trial(tb_app, api)
    answer = start(api, experiment_ids=[exp_id], trial_ids=[trial_id])
    assert answer.status_code == 201, answer.json
    task = answer.json["task"]
    assert (task["kind"], task["name"], task["state"], task["owner"]) == (
        "tensorboard", f"TensorBoard (experiment {exp_id}; trial {trial_id})", "QUEUED",
        "alice")
    assert (task["config"]["experiment_ids"], task["config"]["trial_ids"]) == (
        [exp_id], [trial_id])
    assert task["config"]["resources"]["slots"] == 0  # no GPU unless asked for
    job_dir = Path(task["job_dir"])
    assert task["workdir"] == str(job_dir)
    script = (job_dir / "script").read_text()
    assert (f"exec python3 -m hpcdet.tensorboard --experiment-ids {exp_id} "
            f"--trial-ids {trial_id}\n") in script
    environment = (job_dir / "environment.sh").read_text()
    assert "export DET_TASK_TYPE=TENSORBOARD" in environment
    assert "export DET_USER=alice" in environment  # an open master: the owner's name
    [submission] = fake.submitted
    assert f"--chdir={job_dir}" in submission.argv
    assert not any(word.startswith("--gpus") or word.startswith("--gres")
                   for word in submission.argv)
    listed = api.get("/api/v1/tasks?kind=tensorboard&mine=true", headers=ALICE).json
    assert [t["id"] for t in listed["tasks"]] == [task["id"]]


def test_unknown_ids_and_bad_bodies_are_refused_before_anything_runs(
        tb_app: Flask, api: FlaskClient, fake: FakeSchedulerBackend) -> None:
    exp_id, _ = experiment_with_trial(tb_app, api)
    message = assert_error(start(api, experiment_ids=[exp_id, 999]), 404, "not_found")
    assert message == "experiment 999 not found"
    assert assert_error(start(api, trial_ids=[998]), 404, "not_found") == \
        "trial 998 not found"
    assert "at least one" in assert_error(start(api), 400, "bad_request")
    assert "experiment_ids" in assert_error(start(api, experiment_ids=["1"]), 400,
                                            "bad_request")
    assert "trial_ids" in assert_error(start(api, trial_ids=[True]), 400, "bad_request")
    bad = start(api, experiment_ids=[exp_id], config={"resources": {"slots": "many"}})
    assert bad.status_code == 400
    assert fake.submitted == []


def test_a_dry_run_shows_the_script(tb_app: Flask, api: FlaskClient,
                                    fake: FakeSchedulerBackend) -> None:
    exp_id, _ = experiment_with_trial(tb_app, api)
    answer = start(api, experiment_ids=[exp_id], test_only=True)
    assert answer.status_code == 200 and answer.json["test_only"] is True
    assert f"-m hpcdet.tensorboard --experiment-ids {exp_id}" in answer.json["script"]
    assert fake.submitted == []


def test_since_steps_answers_only_the_new_reports(tb_app: Flask, api: FlaskClient) -> None:
    _, trial_id = experiment_with_trial(tb_app, api)
    for steps, loss in ((10, 0.9), (20, 0.7), (30, 0.5)):
        report(api, trial_id, "validation", steps, validation_loss=loss)
    report(api, trial_id, "training", 5, loss=1.0)
    url = f"/api/v1/trials/{trial_id}/metrics"
    everything = api.get(f"{url}?group=validation", headers=ALICE).json["metrics"]
    assert [m["steps_completed"] for m in everything] == [10, 20, 30]
    newer = api.get(f"{url}?group=validation&since_steps=10", headers=ALICE).json["metrics"]
    assert [m["steps_completed"] for m in newer] == [20, 30]
    assert api.get(f"{url}?since_steps=30", headers=ALICE).json["metrics"] == []
    assert_error(api.get(f"{url}?since_steps=x", headers=ALICE), 400, "bad_request")


def test_latest_answers_only_the_most_recent_steps(tb_app: Flask, api: FlaskClient) -> None:
    _, trial_id = experiment_with_trial(tb_app, api)
    for steps, loss in ((10, 0.9), (20, 0.7), (30, 0.5)):
        report(api, trial_id, "validation", steps, validation_loss=loss, accuracy=1 - loss)
    report(api, trial_id, "training", 40, loss=1.0)  # a later step of another group
    url = f"/api/v1/trials/{trial_id}/metrics?group=validation"
    [last] = api.get(f"{url}&latest=1", headers=ALICE).json["metrics"]
    assert last["steps_completed"] == 30
    assert last["metrics"] == {"validation_loss": 0.5, "accuracy": 0.5}  # every name of it
    two = api.get(f"{url}&latest=2", headers=ALICE).json["metrics"]
    assert [m["steps_completed"] for m in two] == [20, 30]
    assert len(api.get(f"{url}&latest=9", headers=ALICE).json["metrics"]) == 3
    for bad in (f"{url}&latest=0", f"{url}&latest=x",
                f"/api/v1/trials/{trial_id}/metrics?latest=1"):
        assert_error(api.get(bad, headers=ALICE), 400, "bad_request")


@pytest.fixture
def munge_app(settings: MasterSettings, fake: FakeSchedulerBackend) -> Iterator[Flask]:
    yield from make_app(replace(settings, auth_mode="munge"), fake)


def test_on_a_munge_master_the_job_reads_with_a_token_of_its_owner(
        munge_app: Flask) -> None:
    api = munge_app.test_client()
    with make_session_factory(munge_app.config["HPCDET_ENGINE"])() as session:
        token, _ = tokens.issue(session, "alice", "session", dt.timedelta(hours=1))
        session.commit()
    alice = {"Authorization": f"Bearer {token}"}
    exp_id, _ = experiment_with_trial(munge_app, api, alice)
    answer = start(api, alice, experiment_ids=[exp_id])
    assert answer.status_code == 201, answer.json
    job_dir = Path(answer.json["task"]["job_dir"])
    token_file = job_dir / "user_token"  # a 0600 file, never in the job's environment
    assert token_file.stat().st_mode & 0o777 == 0o600
    job_token = token_file.read_text().strip()
    assert job_token not in (job_dir / "environment.sh").read_text()
    job = {"Authorization": f"Bearer {job_token}"}
    trials = api.get(f"/api/v1/experiments/{exp_id}/trials", headers=job)
    assert trials.status_code == 200, trials.json
    assert api.get("/api/v1/auth/whoami", headers=job).json["username"] == "alice"
    task = answer.json["task"]
    # What the job's token mints dies with the task (issue 28: a 10-year token outlived it);
    # a browser sign-in link, whose session would outlive it too, is refused.
    minted = api.post("/api/v1/auth/tokens", headers=job, json={"expires_days": 3650})
    assert minted.status_code == 201 and minted.json["name"] == f"task:{task['id']}"
    lifetime = dt.datetime.fromisoformat(minted.json["expires_at"].replace("Z", "+00:00")) \
        - dt.datetime.now(dt.timezone.utc)
    assert lifetime <= USER_TOKEN_LIFETIME  # no longer than the job's own token
    child = {"Authorization": f"Bearer {minted.json['token']}"}
    assert_error(api.post("/api/v1/auth/web_link", headers=job), 403, "forbidden")

    # The TensorBoard ends: the next cycle revokes its token.
    with make_session_factory(munge_app.config["HPCDET_ENGINE"])() as session:
        row = session.get(CommandTask, task["id"])
        assert row is not None
        apply_status(session, row, JobStatus(task["job_id"], JobPhase.CANCELLED, "CANCELLED"))
        assert revoke_ended_task_tokens(session) == 2  # the job's and the one it minted
        session.commit()
    assert api.get(f"/api/v1/tasks/{task['id']}", headers=alice).json["task"]["state"] == \
        "CANCELED"
    assert_error(api.get("/api/v1/auth/whoami", headers=job), 401, "token_revoked")
    assert_error(api.get("/api/v1/auth/whoami", headers=child), 401, "token_revoked")
    assert api.get("/api/v1/auth/whoami", headers=alice).status_code == 200  # alice's own


def test_det_job_list_shows_the_kind() -> None:
    def owned(kind: str) -> Ownership:
        return Ownership(COMMAND, task=SimpleNamespace(kind=kind))

    assert job_type(owned("tensorboard")) == "TENSORBOARD"
    assert job_type(owned("command")) == job_type(owned("batch")) == "COMMAND"
    assert job_type(Ownership(COMMAND)) == "COMMAND"
    assert job_type(Ownership(EXPERIMENT)) == "EXPERIMENT"
