"""Determined's user administration on hpcdet's Unix users (issue 29 item 5): register,
deactivate (every request refused), display names, and the roles ``det rbac`` shows."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace

import pytest
from fake_munge import FakeMunge
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error

from hpcdet import munge
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.app import create_app
from hpcdet.master.db import session_scope
from hpcdet.master.models import User
from hpcdet.master.security import users
from hpcdet.master.settings.core import MasterSettings

KNOWN_UNIX_USERS = {"alice", "bob", "carol", "root"}


@pytest.fixture
def named_app(settings: MasterSettings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Flask]:
    monkeypatch.setattr(users, "unix_user_exists", KNOWN_UNIX_USERS.__contains__)
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


def test_a_cluster_admin_registers_a_known_unix_user(client: FlaskClient) -> None:
    assert_error(client.post("/api/v1/users", json={"username": "bob"},
                             headers=as_user("alice")), 403, "forbidden")
    created = client.post("/api/v1/users", json={"username": "bob"}, headers=as_user("root"))
    assert created.status_code == 201
    assert created.get_json()["user"] | {"first_seen": None, "last_seen": None} == {
        "username": "bob", "display_name": "", "active": True, "admin": False,
        "first_seen": None, "last_seen": None}
    assert_error(client.post("/api/v1/users", json={"username": "bob"},
                             headers=as_user("root")), 409, "conflict")
    message = assert_error(client.post("/api/v1/users", json={"username": "ghost"},
                                       headers=as_user("root")), 400, "no_such_unix_user")
    assert "getent passwd ghost" in message
    message = assert_error(client.post("/api/v1/users", json={"username": "carol",
                                                              "admin": True},
                                       headers=as_user("root")), 400, "bad_request")
    assert "auth.admins" in message
    assert_error(client.post("/api/v1/users", json={"username": "carol", "password": "x"},
                             headers=as_user("root")), 400, "bad_request")
    listed = client.get("/api/v1/users", headers=as_user("alice")).get_json()["users"]
    assert [u["username"] for u in listed] == ["bob"]


def test_a_deactivated_user_is_refused_everything(client: FlaskClient) -> None:
    assert client.get("/api/v1/workspaces", headers=as_user("bob")).status_code == 200
    assert_error(client.post("/api/v1/users/bob/deactivate", headers=as_user("alice")), 403,
                 "forbidden")
    deactivated = client.post("/api/v1/users/bob/deactivate", headers=as_user("root"))
    assert deactivated.status_code == 200 and deactivated.get_json()["user"]["active"] is False
    for path in ("/api/v1/workspaces", "/api/v1/auth/whoami", "/api/v1/experiments"):
        message = assert_error(client.get(path, headers=as_user("bob")), 403,
                               "user_deactivated")
        assert message == ("user 'bob' is deactivated on this master; ask a cluster admin "
                           "(det user activate)")
    assert client.get("/api/v1/users", headers=as_user("root")).get_json()["users"] == []
    everyone = client.get("/api/v1/users?all=1", headers=as_user("root")).get_json()["users"]
    assert [(u["username"], u["active"]) for u in everyone] == [("bob", False)]
    assert client.post("/api/v1/users/bob/activate", headers=as_user("root")).status_code == 200
    assert client.get("/api/v1/workspaces", headers=as_user("bob")).status_code == 200


def test_nobody_deactivates_themselves_or_a_cluster_admin(named_app: Flask,
                                                          client: FlaskClient) -> None:
    message = assert_error(client.post("/api/v1/users/root/deactivate",
                                       headers=as_user("root")), 409, "conflict")
    assert message == "you cannot deactivate yourself"
    app = create_app(replace(named_app.config["HPCDET_SETTINGS"], admins=("root", "boss")),
                     backend=SlurmBackend())
    try:
        message = assert_error(app.test_client().post(
            "/api/v1/users/boss/deactivate", headers=as_user("root")), 409, "conflict")
        assert "auth.admins" in message
    finally:
        app.config["HPCDET_ENGINE"].dispose()


def test_display_names_and_active_by_edit(client: FlaskClient) -> None:
    client.post("/api/v1/users", json={"username": "bob"}, headers=as_user("root"))
    mine = client.patch("/api/v1/users/bob", json={"display_name": "Bob B."},
                        headers=as_user("bob"))
    assert mine.status_code == 200 and mine.get_json()["user"]["display_name"] == "Bob B."
    assert_error(client.patch("/api/v1/users/bob", json={"display_name": "x"},
                              headers=as_user("alice")), 403, "forbidden")
    assert_error(client.patch("/api/v1/users/bob", json={"active": False},
                              headers=as_user("bob")), 403, "forbidden")
    assert_error(client.patch("/api/v1/users/bob", json={"admin": True},
                              headers=as_user("root")), 400, "bad_request")
    off = client.patch("/api/v1/users/bob", json={"active": False}, headers=as_user("root"))
    assert off.get_json()["user"]["active"] is False
    assert_error(client.patch("/api/v1/users/nobody", json={"display_name": "x"},
                              headers=as_user("root")), 404, "not_found")


def test_an_open_master_cannot_deactivate(settings: MasterSettings) -> None:
    app = create_app(settings, backend=SlurmBackend())
    try:
        message = assert_error(app.test_client().post("/api/v1/users/bob/deactivate"), 409,
                               "users_not_identified")
        assert "does not tell users apart" in message
    finally:
        app.config["HPCDET_ENGINE"].dispose()


def test_roles_and_the_role_catalog(client: FlaskClient) -> None:
    client.post("/api/v1/workspaces", json={"name": "team"}, headers=as_user("alice"))
    client.post("/api/v1/workspaces", json={"name": "solo"}, headers=as_user("carol"))
    client.put("/api/v1/workspaces/team/members/bob", json={"role": "editor"},
               headers=as_user("alice"))
    client.put("/api/v1/workspaces/solo/members/bob", json={"role": "viewer"},
               headers=as_user("carol"))
    mine = client.get("/api/v1/users/bob/roles", headers=as_user("bob")).get_json()
    assert mine == {"username": "bob", "cluster_admin": False, "workspaces": [
        {"workspace": "solo", "role": "viewer", "group": None},
        {"workspace": "team", "role": "editor", "group": None}]}
    seen_by_alice = client.get("/api/v1/users/bob/roles", headers=as_user("alice")).get_json()
    assert seen_by_alice["workspaces"] == [{"workspace": "team", "role": "editor",
                                            "group": None}]
    assert client.get("/api/v1/users/root/roles", headers=as_user("root")).get_json()[
        "cluster_admin"] is True
    assert_error(client.get("/api/v1/users/nobody/roles", headers=as_user("bob")), 404,
                 "not_found")
    roles = client.get("/api/v1/rbac/roles", headers=as_user("bob")).get_json()["roles"]
    assert [r["name"] for r in roles] == ["viewer", "editor", "admin", "cluster-admin"]
    assert [r["assignable"] for r in roles] == [True, True, True, False]


def test_a_deactivated_munge_user_cannot_sign_in(settings: MasterSettings,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeMunge(os.getuid())
    monkeypatch.setattr(munge, "decode", fake.decode)
    app = create_app(replace(settings, auth_mode="munge", port=8080), backend=SlurmBackend())
    try:
        client = app.test_client()
        login = client.post("/api/v1/auth/login", json={
            "credential": fake.encode("hpcdet-login http://localhost:8080")})
        assert login.status_code == 200, login.get_json()
        token, name = login.get_json()["token"], login.get_json()["username"]
        with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
            session.get(User, name).active = False  # type: ignore[union-attr]
        assert_error(client.get("/api/v1/auth/whoami",
                                headers={"Authorization": f"Bearer {token}"}), 403,
                     "user_deactivated")
        assert_error(client.post("/api/v1/auth/login", json={
            "credential": fake.encode("hpcdet-login http://localhost:8080")}), 403,
            "user_deactivated")
    finally:
        app.config["HPCDET_ENGINE"].dispose()
