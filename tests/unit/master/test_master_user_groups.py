"""User groups and their workspace roles (Determined's ``det user-group``, ``det rbac
assign-role -g``): who manages them, and that a group's role lets its users in."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import CONFIG, assert_error, make_context

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.app import create_app
from hpcdet.master.settings.core import MasterSettings

G = "/api/v1/groups"
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
    return named_app.test_client()


def as_user(name: str) -> dict[str, str]:
    return {"X-Hpcdet-User": name}


def test_cluster_admins_manage_groups(client: FlaskClient) -> None:
    message = assert_error(client.post(G, json={"name": "ml", "users": ["bob"]},
                                       headers=as_user("alice")), 403, "forbidden")
    assert "only a cluster admin" in message
    created = client.post(G, json={"name": "ml", "users": ["bob", "carol", "bob"]},
                          headers=as_user("root"))
    assert created.status_code == 201
    assert created.get_json()["group"]["users"] == ["bob", "carol"]
    assert_error(client.post(G, json={"name": "ml"}, headers=as_user("root")), 409, "conflict")
    assert_error(client.post(f"{G}/ml/users", json={"add": ["dan"]},
                             headers=as_user("bob")), 403, "forbidden")
    changed = client.post(f"{G}/ml/users", json={"add": ["dan"], "remove": ["carol"]},
                          headers=as_user("root")).get_json()["group"]
    assert changed["users"] == ["bob", "dan"] and changed["num_members"] == 2
    assert_error(client.post(f"{G}/ml/users", json={"remove": ["zed"]},
                             headers=as_user("root")), 404, "not_found")
    listed = client.get(f"{G}?user=dan", headers=as_user("eve")).get_json()["groups"]
    assert [g["name"] for g in listed] == ["ml"]
    assert client.get(f"{G}?user=eve", headers=as_user("eve")).get_json() == {"groups": []}
    renamed = client.patch(f"{G}/ml", json={"name": "ai"}, headers=as_user("root"))
    assert renamed.get_json()["group"]["name"] == "ai"
    assert_error(client.get(f"{G}/ml", headers=as_user("root")), 404, "not_found")
    assert_error(client.delete(f"{G}/ai", headers=as_user("bob")), 403, "forbidden")
    assert client.delete(f"{G}/ai", headers=as_user("root")).get_json() == {
        "deleted": "ai", "roles_removed": 0}


def test_a_groups_role_lets_its_users_in(client: FlaskClient) -> None:
    client.post(WS, json={"name": "team"}, headers=as_user("alice"))
    client.post(G, json={"name": "ml", "users": ["bob"]}, headers=as_user("root"))
    assert_error(client.get(f"{WS}/team", headers=as_user("bob")), 404, "not_found")
    assert_error(client.put(f"{WS}/team/groups/ml", json={"role": "editor"},
                            headers=as_user("bob")), 404, "not_found")
    given = client.put(f"{WS}/team/groups/ml", json={"role": "viewer"},
                       headers=as_user("alice"))
    assert given.get_json()["workspace"]["groups"] == [{"group": "ml", "role": "viewer"}]
    seen = client.get(f"{WS}/team", headers=as_user("bob")).get_json()["workspace"]
    assert seen["role"] == "viewer"
    assert [w["name"] for w in client.get(WS, headers=as_user("bob")).get_json()[
        "workspaces"]] == ["team"]
    assert_error(client.post(f"{WS}/team/projects", json={"name": "p"},
                             headers=as_user("bob")), 403, "forbidden")
    client.put(f"{WS}/team/groups/ml", json={"role": "editor"}, headers=as_user("alice"))
    assert client.post(f"{WS}/team/projects", json={"name": "p"},
                       headers=as_user("bob")).status_code == 201
    # Their own role and the group's: the higher one counts.
    client.put(f"{WS}/team/members/bob", json={"role": "viewer"}, headers=as_user("alice"))
    assert client.get(f"{WS}/team", headers=as_user("bob")).get_json()["workspace"][
        "role"] == "editor"
    roles = client.get("/api/v1/users/bob/roles", headers=as_user("bob")).get_json()
    assert roles["workspaces"] == [{"workspace": "team", "role": "viewer", "group": None},
                                   {"workspace": "team", "role": "editor", "group": "ml"}]
    described = client.get(f"{G}/ml", headers=as_user("bob")).get_json()["group"]
    assert described["workspaces"] == [{"workspace": "team", "role": "editor"}]
    assert client.get(f"{G}/ml", headers=as_user("eve")).get_json()["group"][
        "workspaces"] == []
    client.delete(f"{WS}/team/members/bob", headers=as_user("alice"))
    client.delete(f"{WS}/team/groups/ml", headers=as_user("alice"))
    assert_error(client.get(f"{WS}/team", headers=as_user("bob")), 404, "not_found")
    assert_error(client.delete(f"{WS}/team/groups/ml", headers=as_user("alice")), 404,
                 "not_found")


def test_deleting_a_group_or_workspace_takes_its_roles(client: FlaskClient) -> None:
    client.post(WS, json={"name": "team"}, headers=as_user("alice"))
    client.post(G, json={"name": "ml", "users": ["bob"]}, headers=as_user("root"))
    client.put(f"{WS}/team/groups/ml", json={"role": "viewer"}, headers=as_user("alice"))
    assert client.delete(f"{G}/ml", headers=as_user("root")).get_json()["roles_removed"] == 1
    assert_error(client.get(f"{WS}/team", headers=as_user("bob")), 404, "not_found")
    client.post(G, json={"name": "ml", "users": ["bob"]}, headers=as_user("root"))
    client.put(f"{WS}/team/groups/ml", json={"role": "viewer"}, headers=as_user("alice"))
    assert client.delete(f"{WS}/team", headers=as_user("alice")).status_code == 200
    assert client.get(f"{G}/ml", headers=as_user("root")).get_json()["group"][
        "workspaces"] == []


def test_a_groups_viewers_see_the_workspaces_experiments(client: FlaskClient) -> None:
    client.post(WS, json={"name": "team"}, headers=as_user("alice"))
    created = client.post("/api/v1/experiments", json={
        "config": CONFIG, "context": make_context(), "workspace": "team"},
        headers=as_user("alice"))
    assert created.status_code == 201
    exp_id = created.get_json()["experiment"]["id"]
    assert client.get("/api/v1/experiments", headers=as_user("bob")).get_json()["total"] == 0
    client.post(G, json={"name": "ml", "users": ["bob"]}, headers=as_user("root"))
    client.put(f"{WS}/team/groups/ml", json={"role": "viewer"}, headers=as_user("alice"))
    listed = client.get("/api/v1/experiments", headers=as_user("bob")).get_json()
    assert [e["id"] for e in listed["experiments"]] == [exp_id]
    assert_error(client.post(f"/api/v1/experiments/{exp_id}/pause", headers=as_user("bob")),
                 403, "forbidden")
