"""The routes behind Determined's daily commands (issue 16 item 4): set, label, move, delete,
continue, fork, GC preview and policy, model definition, trial kill, checkpoint delete, and
the master's config and log. The scheduler is the scripted fake; the database is real.
"""

from __future__ import annotations

import io
import tarfile
import uuid as uuidlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from lifecycle_helpers import end_job, session_of, start, trial_json, trial_of, trial_states
from master_helpers import CONFIG, assert_error, create, job_token, make_context
from sqlalchemy import select

from hpcdet.dispatcher import JobPhase
from hpcdet.master.api.master_info import MASK, masked
from hpcdet.master.app import create_app
from hpcdet.master.models import Checkpoint, Experiment, Trial
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.settings.core import MasterSettings

ALICE = {"X-Hpcdet-User": "alice"}


def _api(client: FlaskClient, method: str, path: str, user: str = "alice",
         **kwargs: Any) -> Any:
    return client.open("/api/v1" + path, method=method, headers={"X-Hpcdet-User": user},
                       **kwargs)


def _ok(response: Any, status: int = 200) -> dict[str, Any]:
    body: dict[str, Any] = response.get_json()
    assert response.status_code == status, body
    return body


def _save_checkpoint(client: FlaskClient, app: Flask, trial_id: int, steps: int,
                     loss: float | None = None) -> str:
    """Write a checkpoint directory and register it as the trial's harness would."""
    with session_of(app) as session:
        trial = session.get_one(Trial, trial_id)
        root = Path(session.get_one(Experiment, trial.experiment_id)
                    .config["checkpoint_storage"]["host_path"])
        token = job_token(trial)
    auth = {"Authorization": f"Bearer {token}"}
    if loss is not None:
        _ok(client.post(f"/api/v1/trials/{trial_id}/metrics", headers=auth, json={
            "group": "validation",
            "reports": [{"steps_completed": steps, "metrics": {"validation_loss": loss}}]}))
    uuid = str(uuidlib.uuid4())
    (root / uuid).mkdir(parents=True)
    (root / uuid / "model.pt").write_bytes(b"weights")
    _ok(client.post(f"/api/v1/trials/{trial_id}/checkpoints", headers=auth,
                    json={"uuid": uuid, "steps_completed": steps}), 201)
    return uuid


def _ended(client: FlaskClient, reconciler: Reconciler, fake: FakeSchedulerBackend,
           checkpoints: int = 0) -> tuple[int, int, list[str]]:
    """An experiment whose one trial wrote ``checkpoints`` checkpoints and COMPLETED."""
    exp_id, trial_id = start(client, reconciler, fake)
    uuids = [_save_checkpoint(client, client.application, trial_id, 10 * (i + 1), 1.0 / (i + 1))
             for i in range(checkpoints)]
    end_job(client.application, fake, reconciler, trial_id, JobPhase.COMPLETED)
    reconciler.cycle()
    assert _experiment(client, exp_id)["state"] == "COMPLETED"
    return exp_id, trial_id, uuids


def _experiment(client: FlaskClient, exp_id: int) -> dict[str, Any]:
    body: dict[str, Any] = _ok(_api(client, "GET", f"/experiments/{exp_id}"))["experiment"]
    return body


def _checkpoint_states(app: Flask) -> dict[str, str]:
    with session_of(app) as session:
        return {c.uuid: c.state for c in session.scalars(select(Checkpoint))}


# ---- set --------------------------------------------------------------------------------


def test_set_changes_the_config_and_the_columns(client: FlaskClient) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    body = _ok(_api(client, "PATCH", f"/experiments/{exp_id}", json={
        "name": "renamed", "description": "about it", "labels": ["a", "b", "a"],
        "max_slots": 4, "weight": 2.5, "priority": 7}))
    assert body["experiment"]["name"] == "renamed"
    assert body["experiment"]["labels"] == ["a", "b"]
    assert any("max_slots" in note for note in body["notes"])
    assert body["gc"] is None
    described = _api(client, "GET", f"/experiments/{exp_id}").get_json()["experiment"]
    config = described["config"]
    assert (config["name"], config["description"], config["labels"]) == (
        "renamed", "about it", ["a", "b"])
    assert (config["resources"]["max_slots"], config["resources"]["weight"],
            config["resources"]["priority"]) == (4, 2.5, 7)


@pytest.mark.parametrize(("body", "names"), [
    ({}, "nothing to change"), ({"colour": "red"}, "colour"), ({"name": ""}, "name"),
    ({"priority": 0}, "priority"), ({"priority": True}, "priority"),
    ({"weight": -1}, "weight"), ({"max_slots": 0}, "max_slots"),
    ({"labels": "a"}, "labels"), ({"labels": ["ok", ""]}, "labels[1]"),
    ({"gc_policy": {"save_trial_best": 1}}, "gc_policy"),
    ({"gc_policy": {"save_experiment_best": -1, "save_trial_best": 1,
                    "save_trial_latest": 1}}, "save_experiment_best"),
])
def test_set_refuses_bad_values(client: FlaskClient, body: dict[str, Any], names: str) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    message = assert_error(_api(client, "PATCH", f"/experiments/{exp_id}", json=body), 400,
                           "bad_request")
    assert names in message


def test_unknown_experiment_is_404_for_every_change(client: FlaskClient) -> None:
    for method, path, body in [
            ("PATCH", "/experiments/999", {"name": "x"}), ("DELETE", "/experiments/999", None),
            ("POST", "/experiments/999/labels/add", {"label": "x"}),
            ("POST", "/experiments/999/move", {"workspace": None}),
            ("POST", "/experiments/999/continue", {}),
            ("POST", "/experiments/999/fork", {"config": CONFIG}),
            ("GET", "/experiments/999/model-def", None),
            ("POST", "/trials/999/kill", None)]:
        response = _api(client, method, path, json=body) if body is not None else \
            _api(client, method, path)
        assert_error(response, 404, "not_found")


# ---- labels and move --------------------------------------------------------------------


def test_labels_are_added_once_and_removed(client: FlaskClient) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    first = _ok(_api(client, "POST", f"/experiments/{exp_id}/labels/add", json={"label": "x"}))
    again = _ok(_api(client, "POST", f"/experiments/{exp_id}/labels/add", json={"label": "x"}))
    assert (first["changed"], again["changed"]) == (True, False)
    assert again["experiment"]["labels"] == ["x"]
    gone = _ok(_api(client, "POST", f"/experiments/{exp_id}/labels/remove",
                    json={"label": "x"}))
    assert gone["experiment"]["labels"] == []
    assert_error(_api(client, "POST", f"/experiments/{exp_id}/labels/add",
                      json={"label": "tab\there"}), 400, "bad_request")
    assert_error(_api(client, "POST", f"/experiments/{exp_id}/labels/add", json={}), 400,
                 "bad_request")


def test_move_into_a_project_and_out(client: FlaskClient) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    _ok(_api(client, "POST", "/workspaces", json={"name": "team"}), 201)
    _ok(_api(client, "POST", "/workspaces/team/projects", json={"name": "vision"}), 201)
    moved = _ok(_api(client, "POST", f"/experiments/{exp_id}/move",
                     json={"workspace": "team", "project": "vision"}))["experiment"]
    assert moved["workspace_id"] is not None and moved["project_id"] is not None
    listed = _ok(_api(client, "GET", "/experiments?workspace=team&project=vision"))
    assert [e["id"] for e in listed["experiments"]] == [exp_id]
    assert_error(_api(client, "POST", f"/experiments/{exp_id}/move",
                      json={"workspace": "team", "project": "nope"}), 404, "not_found")
    assert_error(_api(client, "POST", f"/experiments/{exp_id}/move",
                      json={"workspace": None, "project": "vision"}), 400, "bad_request")
    out = _ok(_api(client, "POST", f"/experiments/{exp_id}/move", json={"workspace": None}))
    assert out["experiment"]["workspace_id"] is None


# ---- others' experiments ----------------------------------------------------------------


@pytest.fixture
def named_client(settings: MasterSettings) -> Any:
    app = create_app(replace(settings, require_user=True, admins=("root",)))
    app.config["TESTING"] = True
    yield app.test_client()
    app.config["HPCDET_ENGINE"].dispose()


def test_someone_elses_experiment_is_not_found(named_client: FlaskClient) -> None:
    exp_id = create(named_client).get_json()["experiment"]["id"]
    for method, path, body in [
            ("PATCH", f"/experiments/{exp_id}", {"name": "x"}),
            ("DELETE", f"/experiments/{exp_id}", None),
            ("POST", f"/experiments/{exp_id}/labels/add", {"label": "x"}),
            ("POST", f"/experiments/{exp_id}/continue", {}),
            ("POST", f"/experiments/{exp_id}/fork", {"config": CONFIG}),
            ("GET", f"/experiments/{exp_id}/model-def", None),
            ("GET", f"/experiments/{exp_id}/preview-gc?save_experiment_best=0"
                    "&save_trial_best=0&save_trial_latest=0", None)]:
        response = _api(named_client, method, path, user="mallory", json=body) \
            if body is not None else _api(named_client, method, path, user="mallory")
        assert_error(response, 404, "not_found")
    assert _experiment(named_client, exp_id)["name"] == "unit"


def test_master_config_and_logs_are_for_admins(named_client: FlaskClient) -> None:
    assert_error(_api(named_client, "GET", "/master/config", user="mallory"), 403,
                 "forbidden")
    assert_error(_api(named_client, "GET", "/master/logs", user="mallory"), 403, "forbidden")
    config = _ok(_api(named_client, "GET", "/master/config", user="root"))["config"]
    assert config["auth_mode"] == "open" and config["require_user"] is True


def test_secrets_are_masked() -> None:
    shown = masked({"db_url": "postgresql://det:hunter2@db/det",
                    "checkpoint_storage": {"type": "s3", "secret_key": "abc",
                                           "access_key": "AKIA", "bucket": "b"}})
    assert shown["db_url"] == f"postgresql://det:{MASK}@db/det"
    assert shown["checkpoint_storage"] == {"type": "s3", "secret_key": MASK,
                                           "access_key": MASK, "bucket": "b"}
    azure = masked({"checkpoint_storage": {"type": "azure", "container": "c",
                                           "connection_string": "AccountKey=k;"}})
    assert azure["checkpoint_storage"]["connection_string"] == MASK


def test_master_logs_tail_and_follow(client: FlaskClient, app: Flask) -> None:
    path = Path(app.config["HPCDET_SETTINGS"].state_dir) / "master.log"
    path.write_text("one\ntwo\nthree\npartial")
    tail = _ok(_api(client, "GET", "/master/logs?tail=2"))
    assert tail["lines"] == ["three", "partial"]
    follow = _ok(_api(client, "GET", "/master/logs?offset=4"))
    assert follow["lines"] == ["two", "three"] and follow["offset"] == len("one\ntwo\nthree\n")
    assert_error(_api(client, "GET", "/master/logs?tail=0"), 400, "bad_request")
    assert_error(_api(client, "GET", "/master/logs?offset=x"), 400, "bad_request")


# ---- delete ----------------------------------------------------------------------------


def test_delete_refuses_a_live_experiment(client: FlaskClient) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    message = assert_error(_api(client, "DELETE", f"/experiments/{exp_id}"), 409, "conflict")
    assert "ACTIVE" in message


def test_delete_removes_checkpoints_rows_and_job_dirs(
        client: FlaskClient, reconciler: Reconciler, fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id, uuids = _ended(client, reconciler, fake, checkpoints=2)
    with session_of(client.application) as session:
        job_dir = Path(session.get_one(Trial, trial_id).job_dir)
        root = Path(session.get_one(Experiment, exp_id).config["checkpoint_storage"]
                    ["host_path"])
    assert job_dir.is_dir() and any((root / u).exists() for u in uuids)
    body = _ok(_api(client, "DELETE", f"/experiments/{exp_id}"))
    assert body["deleted"] == exp_id and body["left_behind"] == []
    assert not any((root / u).exists() for u in uuids)
    assert not job_dir.exists()
    assert_error(_api(client, "GET", f"/experiments/{exp_id}"), 404, "not_found")
    assert _checkpoint_states(client.application) == {}


# ---- checkpoints: GC policy and delete ---------------------------------------------------


def test_gc_policy_preview_then_set_deletes_at_once(
        client: FlaskClient, reconciler: Reconciler, fake: FakeSchedulerBackend) -> None:
    exp_id, _, uuids = _ended(client, reconciler, fake, checkpoints=3)
    # default policy (0, 1, 1): the best (the last, loss 1/3) is also the latest
    assert _checkpoint_states(client.application) == {
        uuids[0]: "DELETED", uuids[1]: "DELETED", uuids[2]: "ACTIVE"}
    preview = _ok(_api(client, "GET", f"/experiments/{exp_id}/preview-gc?"
                       "save_experiment_best=0&save_trial_best=0&save_trial_latest=0"))
    assert [c["uuid"] for c in preview["checkpoints"]] == [uuids[2]]
    assert _checkpoint_states(client.application)[uuids[2]] == "ACTIVE"
    body = _ok(_api(client, "PATCH", f"/experiments/{exp_id}", json={"gc_policy": {
        "save_experiment_best": 0, "save_trial_best": 0, "save_trial_latest": 0}}))
    assert body["gc"] == {"deleted": [uuids[2]], "failed": []}
    assert _checkpoint_states(client.application)[uuids[2]] == "DELETED"
    assert_error(_api(client, "GET", f"/experiments/{exp_id}/preview-gc?save_trial_best=x"),
                 400, "bad_request")


def test_checkpoint_delete(client: FlaskClient, reconciler: Reconciler,
                           fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    first = _save_checkpoint(client, client.application, trial_id, 10)
    latest = _save_checkpoint(client, client.application, trial_id, 20)
    message = assert_error(_api(client, "DELETE", "/checkpoints", json={"uuids": [latest]}),
                           409, "conflict")
    assert "latest" in message
    assert _ok(_api(client, "DELETE", "/checkpoints", json={"uuids": [first]})) == {
        "deleted": [first]}
    assert _checkpoint_states(client.application)[first] == "DELETED"
    bad_bodies: list[dict[str, Any]] = [{}, {"uuids": []}, {"uuids": [1]}]
    for bad in bad_bodies:
        assert_error(_api(client, "DELETE", "/checkpoints", json=bad), 400, "bad_request")
    assert_error(_api(client, "DELETE", "/checkpoints", json={"uuids": [str(uuidlib.uuid4())]}),
                 404, "not_found")


# ---- trial kill ------------------------------------------------------------------------


def test_trial_kill(client: FlaskClient, reconciler: Reconciler,
                   fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    body = _ok(_api(client, "POST", f"/trials/{trial_id}/kill"))
    assert body["trial"]["state"] == "STOPPING_KILLED"
    reconciler.cycle()
    end_job(client.application, fake, reconciler, trial_id, JobPhase.CANCELLED)
    reconciler.cycle()
    assert trial_of(client.application, exp_id).state == "CANCELED"
    assert_error(_api(client, "POST", f"/trials/{trial_id}/kill"), 409, "conflict")


# ---- continue and fork -----------------------------------------------------------------


def test_continue_resumes_the_trial_from_its_latest_checkpoint(
        client: FlaskClient, reconciler: Reconciler, fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id, uuids = _ended(client, reconciler, fake, checkpoints=2)
    body = _ok(_api(client, "POST", f"/experiments/{exp_id}/continue",
                    json={"config": "searcher: {max_length: {batches: 50}}"}))
    assert body["experiment"]["state"] == "ACTIVE" and body["trial_id"] == trial_id
    assert body["latest_checkpoint"] == uuids[-1]
    assert trial_states(client.application, trial_id)[-2:] == ["COMPLETED", "QUEUED"]
    reconciler.cycle()
    info = trial_json(client.application, trial_id)
    assert info["latest_checkpoint"] == uuids[-1]
    config = _experiment_config(client, exp_id)
    assert config["searcher"]["max_length"] == {"batches": 50}
    end_job(client.application, fake, reconciler, trial_id, JobPhase.COMPLETED)
    reconciler.cycle()
    assert _experiment(client, exp_id)["state"] == "COMPLETED"


def _experiment_config(client: FlaskClient, exp_id: int) -> dict[str, Any]:
    config: dict[str, Any] = _api(client, "GET", f"/experiments/{exp_id}").get_json()[
        "experiment"]["config"]
    return config


def test_continue_refusals(client: FlaskClient, reconciler: Reconciler,
                           fake: FakeSchedulerBackend) -> None:
    live = create(client).get_json()["experiment"]["id"]
    assert "ACTIVE" in assert_error(_api(client, "POST", f"/experiments/{live}/continue",
                                         json={}), 409, "conflict")
    exp_id, _, _ = _ended(client, reconciler, fake)
    assert "fork" in assert_error(_api(client, "POST", f"/experiments/{exp_id}/continue",
                                       json={"config": "hyperparameters: {lr: 0.5}"}),
                                  400, "bad_request")
    for override in ("searcher: {max_length: -3}", "hyperparameters: null", "searcher: 5",
                     "searcher: {name: random}", "- a list", "{", 5):
        bad = _api(client, "POST", f"/experiments/{exp_id}/continue",
                   json={"config": override})
        assert bad.status_code == 400, (override, bad.get_json())
    assert _experiment(client, exp_id)["state"] == "COMPLETED"


def test_fork_makes_a_new_experiment_from_the_stored_model_definition(
        client: FlaskClient) -> None:
    files = {"train.py": b"print('forked')\n"}
    source = _ok(client.post("/api/v1/experiments", headers=ALICE, json={
        "config": CONFIG, "context": make_context(files)}), 201)["experiment"]["id"]
    config = CONFIG.replace("lr: 0.1", "lr: 0.2")
    forked = _ok(_api(client, "POST", f"/experiments/{source}/fork",
                      json={"config": config}), 201)["experiment"]
    assert forked["parent_id"] == source and forked["id"] != source
    # stored as Determined stores it: constants made explicit (expconf shims)
    lr = _experiment_config(client, forked["id"])["hyperparameters"]["lr"]
    assert lr == {"type": "const", "val": 0.2}
    tgz = _api(client, "GET", f"/experiments/{forked['id']}/model-def")
    assert tgz.status_code == 200 and tgz.mimetype == "application/gzip"
    with tarfile.open(fileobj=io.BytesIO(tgz.data), mode="r:gz") as tar:
        member = tar.extractfile("train.py")
        assert member is not None and member.read() == files["train.py"]
    assert_error(_api(client, "POST", f"/experiments/{source}/fork", json={}), 400,
                 "bad_request")
    bad = _api(client, "POST", f"/experiments/{source}/fork", json={"config": "name: [x"})
    assert bad.status_code == 400
