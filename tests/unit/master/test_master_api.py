"""The REST API on SQLite and PostgreSQL: happy paths, bad input, and the one error shape."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import CONFIG, create, make_context
from sqlalchemy import func, select

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.app import create_app
from hpcdet.master.models import CommandTask, Experiment, Trial
from hpcdet.master.security.tokens import hash_token
from hpcdet.master.settings.core import MasterSettings
from hpcdet.states import State


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    body = response.get_json()
    assert response.status_code == status, body
    assert set(body) == {"error", "status"} and body["status"] == status
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code and body["error"]["message"]
    return dict(body["error"])


def experiment_count(app: Flask) -> int:
    with app.app_context():
        from hpcdet.master.api.common import db

        return int(db().scalar(select(func.count()).select_from(Experiment)) or 0)


def test_master_info(client: FlaskClient) -> None:
    body = client.get("/api/v1/master").get_json()
    assert body["url"] == "http://master.example:8080" and body["resource_manager"] == "slurm"


def test_create_stores_an_active_experiment_owned_by_the_caller(client: FlaskClient) -> None:
    response = create(client)
    assert response.status_code == 201, response.get_json()
    exp = response.get_json()["experiment"]
    assert exp["state"] == "ACTIVE" and exp["owner"] == "alice" and exp["name"] == "unit"
    described = client.get(f"/api/v1/experiments/{exp['id']}").get_json()["experiment"]
    assert described["config"]["max_restarts"] == 5  # master default filled in
    assert [(h["from"], h["to"], h["actor"]) for h in described["history"]] == [
        (None, "ACTIVE", "alice")]
    listed = client.get("/api/v1/experiments").get_json()
    assert listed["total"] == 1 and listed["experiments"][0]["id"] == exp["id"]


def test_accepted_but_unused_fields_come_back_as_warnings(client: FlaskClient) -> None:
    response = create(client, CONFIG + "records_per_epoch: 1000\n")
    assert response.get_json()["warnings"] == [
        "<config>.records_per_epoch: accepted but not acted on by this version of hpcdet"]


@pytest.mark.parametrize(("config", "detail"), [
    ("name: [unclosed\n", "<config>:2:1: expected ',' or ']', but got '<stream end>'"),
    (CONFIG + "resources: {slots_per_trial: two}\n",
     "<config>.resources.slots_per_trial: must be an integer, got 'two'"),
    (CONFIG + "bogus_key: 1\n", "<config>: unknown field(s) 'bogus_key'"),
    (CONFIG + "slurm: {sbatch_args: ['--partition=x']}\n",
     "<config>.slurm.sbatch_args[0]: option --partition is controlled by hpcdet"),
    (CONFIG.replace("slots_per_trial: 2", "slots_per_trial: 3").replace(
        "slots_per_node: 1", "slots_per_node: 2"),
     "<config>.resources.slots_per_trial: 3 is not a multiple of slurm.slots_per_node (2)"),
])
def test_invalid_configs_are_refused_and_nothing_is_stored(
        app: Flask, client: FlaskClient, config: str, detail: str) -> None:
    error = assert_error(create(client, config), 400, "invalid_config")
    assert any(d.startswith(detail) for d in error["details"]), error["details"]
    assert experiment_count(app) == 0


def test_unsafe_values_are_refused_before_storing(app: Flask, client: FlaskClient) -> None:
    config = CONFIG + 'environment: {environment_variables: ["X=a\\nrm -rf /"]}\n'
    response = create(client, config)
    assert response.status_code == 400
    assert "newline" in str(response.get_json()["error"]).lower()
    assert experiment_count(app) == 0


def test_oversized_context_is_refused(app: Flask, client: FlaskClient,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hpcdet.master.scheduling.submission.CONTEXT_LIMIT", 10)
    assert_error(create(client), 413, "payload_too_large")
    assert experiment_count(app) == 0


def test_bad_bodies_get_the_error_shape(client: FlaskClient) -> None:
    assert_error(client.post("/api/v1/experiments", data="x"), 400, "bad_request")
    assert_error(client.post("/api/v1/experiments", json={"config": CONFIG,
                                                          "context": "%%%"}), 400, "bad_request")
    assert_error(client.get("/api/v1/experiments/999"), 404, "not_found")
    assert_error(client.get("/api/v1/nope"), 404, "not_found")
    assert_error(client.delete("/api/v1/experiments"), 405, "method_not_allowed")
    assert_error(client.get("/api/v1/experiments?limit=x"), 400, "bad_request")


def test_dry_run_renders_and_stores_nothing(app: Flask, client: FlaskClient) -> None:
    body = create(client, dry_run=True).get_json()
    assert body["dry_run"] is True
    script = body["jobs"][0]["script"]
    assert script.startswith("#!/bin/bash") and "#SBATCH --nodes=2" in script
    assert body["jobs"][0]["argv"][:2] == ["sbatch", "--parsable"]
    assert experiment_count(app) == 0


def test_a_dry_run_asks_the_cluster_nothing_and_renders_a_plain_requeue(
        settings: MasterSettings) -> None:
    """Whether the cluster allows an expedited requeue is asked at submit time only."""
    calls: list[tuple[str, ...]] = []

    def runner(argv: Sequence[str], *, timeout: float = 60) -> str:
        calls.append(tuple(argv))
        return ""

    app = create_app(settings, backend=SlurmBackend(runner=runner))
    body = create(app.test_client(), dry_run=True).get_json()
    assert "#SBATCH --requeue\n" in body["jobs"][0]["script"]
    assert not [call for call in calls if call[:1] == ("scontrol",)]
    app.config["HPCDET_ENGINE"].dispose()


def test_a_master_that_requires_users_refuses_anonymous_calls(app: Flask) -> None:
    app.config["HPCDET_SETTINGS"] = replace(app.config["HPCDET_SETTINGS"], require_user=True)
    client = app.test_client()
    body = {"config": CONFIG, "context": make_context()}
    assert_error(client.post("/api/v1/experiments", json=body), 401, "unauthorized")
    assert create(client).status_code == 201


# GET routes anyone may call on any master: the master's own facts (det finds its URL and
# version there) and those a trial's harness calls with its bearer token.
OPEN_READS = {"/api/v1/master", "/api/v1/openapi.json",
              "/api/v1/trials/<int:trial_id>/preemption",
              "/api/v1/trials/<int:trial_id>/experiment_best_validation"}

# GET routes for cluster admins only (det master config|logs).
ADMIN_READS = {"/api/v1/master/config", "/api/v1/master/logs"}

ALICE = {"X-Hpcdet-User": "alice"}
CKPT = "aaaaaaaa-0000-4000-8000-00000000000a"  # checkpoint ids are UUIDs
# Ids and names no object has: every route with a parameter answers 404 for these.
MISSING = {"exp": 999999, "trial": 999999, "task": 999999, "uuid": "dddddddd-0000-4000-8000-"
           "00000000000d", "template": "no-such-template", "workspace": "no-such-workspace",
           "project": "no-such-project", "model": "no-such-model", "version": 999999,
           "user": "no-such-user", "group": "no-such-group"}


def test_a_master_that_requires_users_refuses_anonymous_reads_of_every_route(
        app: Flask, tmp_path: Path) -> None:
    """Anonymous: 401. The owner reading her own objects: 200. Objects that are not: 404."""
    app.config["HPCDET_SETTINGS"] = replace(app.config["HPCDET_SETTINGS"], require_user=True)
    client = app.test_client()
    ids = _alices_objects(app, client, tmp_path)
    reads = sorted(r.rule for r in app.url_map.iter_rules()
                   if r.rule.startswith("/api/v1/") and "GET" in (r.methods or ())
                   and r.rule not in OPEN_READS)
    assert "/api/v1/experiments/<int:exp_id>" in reads and len(reads) > 15, reads
    for rule in reads:
        url = _fill(rule, ids)
        assert_error(client.get(url), 401, "unauthorized")
        answer = client.get(url, headers=ALICE)
        if rule in ADMIN_READS:  # alice is no cluster admin
            assert_error(answer, 403, "forbidden")
            continue
        assert answer.status_code == 200, (rule, answer.get_data(as_text=True)[:500])
        if "<" in rule:
            assert_error(client.get(_fill(rule, MISSING), headers=ALICE), 404, "not_found")


def _fill(rule: str, ids: dict[str, Any]) -> str:
    """``rule`` with the objects of ``ids`` in its parameters."""
    name = (ids["workspace"] if "/workspaces/" in rule else ids["user"]
            if rule.startswith("/api/v1/users/") else ids["group"] if "/groups/" in rule
            else ids["template"])
    url = (rule.replace("<int:exp_id>", str(ids["exp"]))
           .replace("<int:trial_id>", str(ids["trial"])).replace("<int:task_id>", str(ids["task"]))
           .replace("<uuid>", ids["uuid"]).replace("<name>", name)
           .replace("<project>", ids["project"]).replace("<identifier>", ids["model"])
           .replace("<int:number>", str(ids["version"])))
    assert "<" not in url, rule
    return url


def _alices_objects(app: Flask, client: FlaskClient, tmp_path: Path) -> dict[str, Any]:
    """alice's experiment, trial, checkpoint (files on disk), task, template, workspace and
    project: an object for every route with a parameter to read."""
    store = tmp_path / "shared" / "store"
    config = CONFIG + (f"checkpoint_storage: {{type: shared_fs, host_path: {tmp_path}/shared, "
                       f"storage_path: {store}}}\n")
    trial = _trial(app, client, config)
    (store / CKPT).mkdir(parents=True)
    (store / CKPT / "model.pt").write_bytes(b"w")
    saved = client.post(f"/api/v1/trials/{trial.id}/checkpoints", json={
        "uuid": CKPT, "steps_completed": 1, "metadata": {}},
        headers={"Authorization": "Bearer secret-token"})
    assert saved.status_code == 201, saved.get_json()
    for url, body in (("/api/v1/workspaces", {"name": "team"}),
                      ("/api/v1/workspaces/team/projects", {"name": "proj"}),
                      ("/api/v1/templates", {"name": "tpl", "config": "description: t\n"}),
                      ("/api/v1/models", {"name": "mdl"}),
                      ("/api/v1/models/mdl/versions", {"checkpoint_uuid": CKPT})):
        made = client.post(url, json=body, headers=ALICE)
        assert made.status_code == 201, (url, made.get_json())
    with app.app_context():  # groups are a cluster admin's to make
        from hpcdet.master.api.common import db
        from hpcdet.master.models import UserGroup

        db().add(UserGroup(name="grp", created_by="root"))
        db().commit()
    return {"exp": trial.experiment_id, "trial": trial.id, "task": _task(app, tmp_path),
            "uuid": CKPT, "template": "tpl", "workspace": "team", "project": "proj",
            "model": "mdl", "version": 1, "user": "alice", "group": "grp"}


def _task(app: Flask, tmp_path: Path) -> int:
    """A queued command task of alice's (its output file not written yet), a shell (with
    keys) so that the shell routes find it too."""
    with app.app_context():
        from hpcdet.master.api.common import db
        from hpcdet.master.models import ShellKey
        from hpcdet.master.transitions import transition

        session = db()
        task = CommandTask(owner="alice", name="t", job_id="302", job_dir=str(tmp_path),
                           options=[], args=[], cwd="/", workdir="/", output_pattern="out.txt",
                           kind="shell")
        session.add(task)
        transition(session, task, State.QUEUED, cause="test")
        session.add(ShellKey(task_id=task.id, client_private_key="k", client_public_key="c",
                             host_public_key="h"))
        session.commit()
        return int(task.id)


def _trial(app: Flask, client: FlaskClient, config: str = CONFIG) -> Trial:
    exp_id = create(client, config).get_json()["experiment"]["id"]
    with app.app_context():
        from hpcdet.master.api.common import db
        from hpcdet.master.transitions import transition

        session = db()
        trial = Trial(experiment_id=exp_id, hparams={}, seed=1, token=hash_token("secret-token"))
        session.add(trial)
        transition(session, trial, State.QUEUED, cause="test")
        session.commit()
        return trial


def test_metrics_need_the_trial_token(app: Flask, client: FlaskClient) -> None:
    trial = _trial(app, client)
    body = {"group": "training", "reports": [{"steps_completed": 1, "metrics": {"loss": 1.0}}]}
    url = f"/api/v1/trials/{trial.id}/metrics"
    assert_error(client.post(url, json=body), 401, "unauthorized")
    assert_error(client.post(url, json=body, headers={"Authorization": "Bearer nope"}),
                 401, "unauthorized")


def test_metrics_round_trip_and_best_validation(app: Flask, client: FlaskClient) -> None:
    trial = _trial(app, client)
    auth = {"Authorization": "Bearer secret-token"}
    url = f"/api/v1/trials/{trial.id}/metrics"
    train = {"group": "training", "reports": [
        {"steps_completed": s, "metrics": {"loss": 1.0 / s, "acc": 0.5}} for s in (1, 2, 3)]}
    assert client.post(url, json=train, headers=auth).get_json() == {"stored": 6}
    for steps, loss in ((3, 0.5), (6, 0.2), (9, 0.4)):
        client.post(url, headers=auth, json={"group": "validation", "reports": [
            {"steps_completed": steps, "metrics": {"validation_loss": loss}}]})
    described = client.get(f"/api/v1/trials/{trial.id}").get_json()["trial"]
    assert described["steps_completed"] == 9
    assert described["best_validation"]["steps_completed"] == 6
    assert described["latest_validation"]["metrics"] == {"validation_loss": 0.4}
    got = client.get(f"{url}?group=training").get_json()["metrics"]
    assert [m["metrics"]["loss"] for m in got] == [1.0, 0.5, pytest.approx(1 / 3)]


@pytest.mark.parametrize(("report", "message"), [
    ({"steps_completed": -1, "metrics": {}}, "reports[0].steps_completed"),
    ({"steps_completed": 1, "metrics": {"loss": "nan"}}, "reports[0].metrics.loss"),
    ({"steps_completed": 1, "metrics": []}, "reports[0].metrics"),
])
def test_bad_metric_reports_name_the_field(app: Flask, client: FlaskClient,
                                           report: dict[str, Any], message: str) -> None:
    trial = _trial(app, client)
    response = client.post(f"/api/v1/trials/{trial.id}/metrics",
                           json={"group": "training", "reports": [report]},
                           headers={"Authorization": "Bearer secret-token"})
    assert assert_error(response, 400, "bad_request")["message"].startswith(message)


def test_checkpoints_register_with_their_validation_metrics(app: Flask,
                                                             client: FlaskClient) -> None:
    trial = _trial(app, client)
    auth = {"Authorization": "Bearer secret-token"}
    client.post(f"/api/v1/trials/{trial.id}/metrics", headers=auth, json={
        "group": "validation", "reports": [{"steps_completed": 4, "metrics": {"acc": 0.9}}]})
    ckpt = {"uuid": "0" * 32, "steps_completed": 4, "metadata": {"framework": "torch"},
            "resources": {"model.pt": 10}}
    url = f"/api/v1/trials/{trial.id}/checkpoints"
    created = client.post(url, json=ckpt, headers=auth)
    assert created.status_code == 201
    assert created.get_json()["checkpoint"]["validation_metrics"] == {"acc": 0.9}
    again = client.post(url, json=ckpt, headers=auth)  # a resent registration: idempotent
    assert again.status_code == 200 and again.get_json()["checkpoint"]["uuid"] == "0" * 32
    described = client.get(f"/api/v1/trials/{trial.id}").get_json()
    assert described["trial"]["latest_checkpoint"] == "0" * 32
    assert [c["uuid"] for c in described["checkpoints"]] == ["0" * 32]


def test_kill_of_an_ended_experiment_is_a_conflict(app: Flask, client: FlaskClient) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    assert client.post(f"/api/v1/experiments/{exp_id}/kill").get_json()[
        "experiment"]["state"] == "STOPPING_KILLED"
    with app.app_context():
        from hpcdet.master.api.common import db
        from hpcdet.master.transitions import transition

        transition(db(), db().get_one(Experiment, exp_id), State.CANCELED, cause="test")
        db().commit()
    assert_error(client.post(f"/api/v1/experiments/{exp_id}/kill"), 409, "conflict")
