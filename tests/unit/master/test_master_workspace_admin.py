"""Renaming, archiving and deleting workspaces and projects (issue 29 item 5): who may,
what an archived one refuses, and that a non-empty one is not deleted."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import CONFIG, assert_error, make_context
from werkzeug.test import TestResponse

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.app import create_app
from hpcdet.master.settings.core import MasterSettings

WS = "/api/v1/workspaces"


@pytest.fixture
def named_app(settings: MasterSettings) -> Iterator[Flask]:
    app = create_app(replace(settings, require_user=True, admins=("root",)),
                     backend=SlurmBackend())
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def client(named_app: Flask) -> FlaskClient:
    client = named_app.test_client()
    assert client.post(WS, json={"name": "team"}, headers=as_user("alice")).status_code == 201
    for user, role in (("ed", "editor"), ("vic", "viewer")):
        assert client.put(f"{WS}/team/members/{user}", json={"role": role},
                          headers=as_user("alice")).status_code == 200
    assert client.post(f"{WS}/team/projects", json={"name": "vision"},
                       headers=as_user("alice")).status_code == 201
    return client


def as_user(name: str) -> dict[str, str]:
    return {"X-Hpcdet-User": name}


def experiment_in(client: FlaskClient, user: str = "alice", **where: str) -> TestResponse:
    return client.post("/api/v1/experiments", json={"config": CONFIG, "context": make_context(),
                                                   **where}, headers=as_user(user))


def test_admins_rename_a_workspace_editors_may_not(client: FlaskClient) -> None:
    message = assert_error(client.patch(f"{WS}/team", json={"name": "crew"},
                                        headers=as_user("ed")), 403, "forbidden")
    assert "needs the admin role" in message
    renamed = client.patch(f"{WS}/team", json={"name": "crew"}, headers=as_user("alice"))
    assert renamed.status_code == 200 and renamed.get_json()["workspace"]["name"] == "crew"
    assert client.get(f"{WS}/crew", headers=as_user("vic")).status_code == 200
    assert_error(client.get(f"{WS}/team", headers=as_user("alice")), 404, "not_found")
    assert client.post(WS, json={"name": "other"}, headers=as_user("bob")).status_code == 201
    assert_error(client.patch(f"{WS}/crew", json={"name": "other"}, headers=as_user("root")),
                 409, "conflict")
    assert_error(client.patch(f"{WS}/crew", json={"name": "bad name"},
                              headers=as_user("alice")), 400, "bad_request")
    assert_error(client.patch(f"{WS}/crew", json={"color": "red"}, headers=as_user("alice")),
                 400, "bad_request")


def test_an_archived_workspace_takes_nothing_new_and_is_hidden(client: FlaskClient) -> None:
    assert_error(client.post(f"{WS}/team/archive", headers=as_user("ed")), 403, "forbidden")
    archived = client.post(f"{WS}/team/archive", headers=as_user("alice"))
    assert archived.status_code == 200 and archived.get_json()["workspace"]["archived"] is True
    assert_error(client.post(f"{WS}/team/archive", headers=as_user("alice")), 409, "conflict")
    message = assert_error(experiment_in(client, workspace="team"), 409, "archived")
    assert "workspace 'team' is archived" in message and "det workspace unarchive" in message
    assert_error(client.post(f"{WS}/team/projects", json={"name": "more"},
                             headers=as_user("alice")), 409, "archived")
    assert client.get(WS, headers=as_user("vic")).get_json()["workspaces"] == []
    listed = client.get(f"{WS}?archived=1", headers=as_user("vic")).get_json()["workspaces"]
    assert [w["name"] for w in listed] == ["team"]
    assert client.get(f"{WS}/team", headers=as_user("vic")).status_code == 200
    assert client.post(f"{WS}/team/unarchive", headers=as_user("root")).status_code == 200
    assert experiment_in(client, workspace="team").status_code == 201


def test_an_archived_project_takes_no_experiments(client: FlaskClient) -> None:
    project = f"{WS}/team/projects/vision"
    assert_error(client.post(f"{project}/archive", headers=as_user("vic")), 403, "forbidden")
    assert client.post(f"{project}/archive", headers=as_user("ed")).status_code == 200
    message = assert_error(experiment_in(client, workspace="team", project="vision"), 409,
                           "archived")
    assert "project 'vision' of workspace 'team' is archived" in message
    assert client.get(f"{WS}/team/projects", headers=as_user("vic")).get_json() == {
        "projects": []}
    shown = client.get(f"{WS}/team/projects?archived=1", headers=as_user("vic")).get_json()
    assert [p["archived"] for p in shown["projects"]] == [True]
    described = client.get(f"{WS}/team", headers=as_user("vic")).get_json()["workspace"]
    assert [p["name"] for p in described["projects"]] == ["vision"]
    assert client.post(f"{project}/unarchive", headers=as_user("ed")).status_code == 200
    assert experiment_in(client, workspace="team", project="vision").status_code == 201


def test_edit_a_project(client: FlaskClient) -> None:
    project = f"{WS}/team/projects/vision"
    assert_error(client.patch(project, json={"description": "x"}, headers=as_user("vic")),
                 403, "forbidden")
    edited = client.patch(project, json={"name": "sight", "description": "cnn"},
                          headers=as_user("ed"))
    assert edited.status_code == 200
    assert {k: edited.get_json()["project"][k] for k in ("name", "description")} == {
        "name": "sight", "description": "cnn"}
    assert_error(client.patch(f"{WS}/team/projects/sight", json={"owner": "x"},
                              headers=as_user("ed")), 400, "bad_request")
    assert_error(client.patch(f"{WS}/team/projects/vision", json={"name": "y"},
                              headers=as_user("ed")), 404, "not_found")


def test_a_workspace_holding_experiments_is_not_deleted(client: FlaskClient) -> None:
    assert experiment_in(client, workspace="team", project="vision").status_code == 201
    assert_error(client.delete(f"{WS}/team", headers=as_user("ed")), 403, "forbidden")
    message = assert_error(client.delete(f"{WS}/team", headers=as_user("alice")), 409,
                           "not_empty")
    assert "still holds 1 experiment" in message and "det experiment move" in message
    message = assert_error(client.delete(f"{WS}/team/projects/vision", headers=as_user("ed")),
                           409, "not_empty")
    assert "still holds 1 experiment" in message
    assert client.get(f"{WS}/team", headers=as_user("alice")).status_code == 200


def test_an_empty_workspace_is_deleted_with_its_projects(client: FlaskClient) -> None:
    assert_error(client.delete(f"{WS}/team/projects/vision", headers=as_user("vic")), 403,
                 "forbidden")
    assert client.delete(f"{WS}/team/projects/vision", headers=as_user("ed")).get_json() == {
        "deleted": "vision", "workspace": "team"}
    assert client.post(f"{WS}/team/projects", json={"name": "again"},
                       headers=as_user("ed")).status_code == 201
    assert client.delete(f"{WS}/team", headers=as_user("alice")).get_json() == {
        "deleted": "team", "projects_deleted": 1}
    assert_error(client.get(f"{WS}/team", headers=as_user("root")), 404, "not_found")
    assert client.post(WS, json={"name": "team"}, headers=as_user("bob")).status_code == 201
    described = client.get(f"{WS}/team", headers=as_user("bob")).get_json()["workspace"]
    assert described["members"] == [{"user": "bob", "role": "admin"}]
    assert described["projects"] == []


def test_strangers_see_nothing_to_change(client: FlaskClient) -> None:
    for method, path in (("patch", f"{WS}/team"), ("post", f"{WS}/team/archive"),
                         ("delete", f"{WS}/team"), ("delete", f"{WS}/team/projects/vision")):
        response = getattr(client, method)(path, json={"name": "x"} if method == "patch"
                                           else None, headers=as_user("mallory"))
        assert_error(response, 404, "not_found")
