"""Ownership and workspace roles on a master that identifies its users (issue 14).

The first tests are hostile-testing finding 2: on a ``require_user`` master another user
updated someone's pending job (``scontrol update`` ran), killed their ``det sbatch`` task
and overwrote or deleted their template. Each of them passed on the code before.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import CONFIG, assert_error, make_context
from queue_helpers import FakeJob, FakeSlurmQueue, add_experiment, trial_comment

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.app import create_app
from hpcdet.master.db import session_scope
from hpcdet.master.models import CommandTask, Template
from hpcdet.master.queue.job_queue import read_queue_snapshot
from hpcdet.master.queue.snapshots import QUEUE, store_snapshot
from hpcdet.master.settings.core import MasterSettings


@pytest.fixture
def slurm_queue() -> FakeSlurmQueue:
    return FakeSlurmQueue()


@pytest.fixture
def named_app(settings: MasterSettings, slurm_queue: FakeSlurmQueue) -> Iterator[Flask]:
    app = create_app(replace(settings, require_user=True, admins=("root",)),
                     backend=SlurmBackend(runner=slurm_queue))
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def client(named_app: Flask) -> FlaskClient:
    return named_app.test_client()


def as_user(name: str) -> dict[str, str]:
    return {"X-Hpcdet-User": name}


def queued_job_of(app: Flask, slurm_queue: FakeSlurmQueue, owner: str) -> None:
    """``owner``'s experiment with pending Slurm job 401 (in the queue and its snapshot)."""
    with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
        add_experiment(session, name="mine", owner=owner, jobs=[("401", 1)])
        comment = trial_comment(session, "401")
    slurm_queue.add(FakeJob("401", 900, nice=2150, comment=comment))
    data = read_queue_snapshot(app.config["HPCDET_BACKEND"], app.config["HPCDET_SETTINGS"])
    with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
        store_snapshot(session, QUEUE, data)


def a_task_of(app: Flask, owner: str) -> int:
    with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
        task = CommandTask(owner=owner, name="job", state="QUEUED", job_id="402",
                           job_dir="/nonexistent", options=[], args=[], cwd="/", workdir="/",
                           output_pattern="out.txt")
        session.add(task)
        session.flush()
        return task.id


# ---- finding 2 ---------------------------------------------------------------------------


def test_another_users_pending_job_is_not_updated_and_no_scontrol_runs(
        named_app: Flask, client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    queued_job_of(named_app, slurm_queue, "alice")
    assert_error(client.post("/api/v1/jobs/401/update", json={"priority": 5},
                             headers=as_user("mallory")), 404, "not_found")
    batch = client.post("/api/v1/jobs/update-batch", headers=as_user("mallory"),
                        json={"updates": [{"job_id": "401", "resource_pool": "debug"}]})
    assert_error(batch, 404, "not_found")
    assert slurm_queue.commands("scontrol") == []
    assert slurm_queue.jobs["401"].nice == 2150
    owner = client.post("/api/v1/jobs/401/update", json={"priority": 5},
                        headers=as_user("alice"))
    assert owner.status_code == 200, owner.get_json()
    assert len(slurm_queue.commands("scontrol")) == 1


def test_another_users_task_is_not_killed(named_app: Flask, client: FlaskClient) -> None:
    task_id = a_task_of(named_app, "alice")
    assert_error(client.post(f"/api/v1/tasks/{task_id}/kill", headers=as_user("mallory")),
                 404, "not_found")
    with session_scope(named_app.config["HPCDET_SESSION_FACTORY"]) as session:
        task = session.get(CommandTask, task_id)
        assert task is not None and task.state == "QUEUED" and not task.cancel_requested
    assert client.post(f"/api/v1/tasks/{task_id}/kill",
                       headers=as_user("root")).status_code == 200


def test_another_users_template_is_neither_overwritten_nor_deleted(
        named_app: Flask, client: FlaskClient) -> None:
    assert client.post("/api/v1/templates", headers=as_user("alice"), json={
        "name": "base", "config": "description: alice's\n"}).status_code == 201
    evil = {"config": "environment: {environment_variables: [LD_PRELOAD=/tmp/evil.so]}\n"}
    assert_error(client.put("/api/v1/templates/base", json=evil, headers=as_user("mallory")),
                 404, "not_found")
    assert_error(client.delete("/api/v1/templates/base", headers=as_user("mallory")),
                 404, "not_found")
    with session_scope(named_app.config["HPCDET_SESSION_FACTORY"]) as session:
        template = session.get(Template, "base")
        assert template is not None and template.config == {"description": "alice's"}
    # Nor can mallory use it for an experiment of hers (the name is as good as unknown).
    body = {"config": CONFIG, "context": make_context(), "template": "base"}
    message = assert_error(client.post("/api/v1/experiments", json=body,
                                       headers=as_user("mallory")), 400, "bad_request")
    assert "no template named 'base'" in message


# ---- workspaces and roles -------------------------------------------------------------------


def team(client: FlaskClient, **members: str) -> None:
    """Workspace ``team`` of alice (its admin) with ``members`` as ``user=role``."""
    assert client.post("/api/v1/workspaces", json={"name": "team"},
                       headers=as_user("alice")).status_code == 201
    for user, role in members.items():
        answer = client.put(f"/api/v1/workspaces/team/members/{user}", json={"role": role},
                            headers=as_user("alice"))
        assert answer.status_code == 200, answer.get_json()


def create_in(client: FlaskClient, user: str, **where: Any) -> Any:
    body = {"config": CONFIG, "context": make_context(), **where}
    return client.post("/api/v1/experiments", json=body, headers=as_user(user))


def test_roles_viewer_reads_editor_changes_others_see_nothing(client: FlaskClient) -> None:
    team(client, vic="viewer", ed="editor")
    exp_id = create_in(client, "alice", workspace="team").get_json()["experiment"]["id"]
    path = f"/api/v1/experiments/{exp_id}"
    assert client.get(path, headers=as_user("vic")).status_code == 200
    assert_error(client.post(f"{path}/pause", headers=as_user("vic")), 403, "forbidden")
    assert client.post(f"{path}/pause", headers=as_user("ed")).status_code == 200
    assert_error(client.get(path, headers=as_user("mallory")), 404, "not_found")
    listed = client.get("/api/v1/experiments", headers=as_user("vic")).get_json()
    assert [e["id"] for e in listed["experiments"]] == [exp_id] and listed["total"] == 1
    assert client.get("/api/v1/experiments", headers=as_user("mallory")).get_json()[
        "total"] == 0


def test_creating_in_a_workspace_needs_the_editor_role(client: FlaskClient) -> None:
    team(client, vic="viewer", ed="editor")
    assert_error(create_in(client, "vic", workspace="team"), 403, "forbidden")
    assert_error(create_in(client, "mallory", workspace="team"), 404, "not_found")
    made = create_in(client, "ed", workspace="team")
    assert made.status_code == 201 and made.get_json()["experiment"]["workspace_id"] > 0
    assert client.post("/api/v1/workspaces/team/projects", json={"name": "p1"},
                       headers=as_user("ed")).status_code == 201
    in_project = create_in(client, "ed", workspace="team", project="p1").get_json()
    assert in_project["experiment"]["project_id"] is not None
    assert_error(create_in(client, "ed", workspace="team", project="nope"), 404, "not_found")
    assert_error(create_in(client, "ed", project="p1"), 400, "bad_request")


def test_only_workspace_admins_manage_members_and_the_last_admin_stays(
        client: FlaskClient) -> None:
    team(client, ed="editor")
    assert_error(client.put("/api/v1/workspaces/team/members/ed", json={"role": "admin"},
                            headers=as_user("ed")), 403, "forbidden")
    assert_error(client.put("/api/v1/workspaces/team/members/mallory",
                            json={"role": "admin"}, headers=as_user("mallory")),
                 404, "not_found")
    assert_error(client.delete("/api/v1/workspaces/team/members/alice",
                               headers=as_user("alice")), 409, "conflict")
    # Nor may the last admin demote herself: the workspace would have no one to manage it.
    assert_error(client.put("/api/v1/workspaces/team/members/alice", json={"role": "viewer"},
                            headers=as_user("alice")), 409, "conflict")
    assert_error(client.put("/api/v1/workspaces/team/members/ed", json={"role": "owner"},
                            headers=as_user("alice")), 400, "bad_request")
    described = client.get("/api/v1/workspaces/team", headers=as_user("root")).get_json()
    assert described["workspace"]["members"] == [{"user": "alice", "role": "admin"},
                                                 {"user": "ed", "role": "editor"}]
    assert client.delete("/api/v1/workspaces/team/members/ed",
                         headers=as_user("alice")).status_code == 200
    assert_error(client.get("/api/v1/workspaces/team", headers=as_user("ed")), 404,
                 "not_found")
    assert client.get("/api/v1/workspaces", headers=as_user("ed")).get_json() == {
        "workspaces": []}
    assert_error(client.post("/api/v1/workspaces", json={"name": "team"},
                             headers=as_user("ed")), 409, "conflict")


def test_a_workspace_template_and_task_follow_the_roles(named_app: Flask,
                                                         client: FlaskClient) -> None:
    team(client, vic="viewer", ed="editor")
    assert client.post("/api/v1/templates", headers=as_user("alice"), json={
        "name": "shared", "config": "description: x\n", "workspace": "team"}
    ).status_code == 201
    assert client.get("/api/v1/templates/shared", headers=as_user("vic")).status_code == 200
    new = {"config": "description: y\n"}
    assert_error(client.put("/api/v1/templates/shared", json=new, headers=as_user("vic")),
                 403, "forbidden")
    # Not an editor either: what it holds runs as those who name it, trusting alice
    # (issue 28, finding 1: test_master_runs_as_owner.py).
    assert "only its owner 'alice'" in assert_error(client.put(
        "/api/v1/templates/shared", json=new, headers=as_user("ed")), 403, "forbidden")
    assert client.put("/api/v1/templates/shared", json=new,
                      headers=as_user("alice")).status_code == 200
    assert [t["name"] for t in client.get("/api/v1/templates", headers=as_user(
        "mallory")).get_json()["templates"]] == []
    task_id = a_task_of(named_app, "alice")
    assert_error(client.get(f"/api/v1/tasks/{task_id}", headers=as_user("ed")), 404,
                 "not_found")  # a task without a workspace is alice's alone


def test_an_open_master_lets_everybody_see_and_change_everything(
        settings: MasterSettings) -> None:
    app = create_app(settings, backend=SlurmBackend())
    client = app.test_client()
    try:
        exp_id = create_in(client, "alice").get_json()["experiment"]["id"]
        assert client.get(f"/api/v1/experiments/{exp_id}",
                          headers=as_user("bob")).status_code == 200
        assert client.post(f"/api/v1/experiments/{exp_id}/pause",
                           headers=as_user("bob")).status_code == 200
    finally:
        app.config["HPCDET_ENGINE"].dispose()
