"""Signing in on the pages, and who may change an experiment (owner and admins)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error, create

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.app import create_app
from hpcdet.master.security.permissions import may_modify
from hpcdet.master.settings.core import MasterSettings, load_settings


@pytest.fixture
def named_app(settings: MasterSettings) -> Iterator[Flask]:
    """A master that requires names, with ``root`` as its admin."""
    app = create_app(replace(settings, require_user=True, admins=("root",)),
                     backend=SlurmBackend())
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def named(named_app: Flask) -> FlaskClient:
    return named_app.test_client()


def as_user(name: str) -> dict[str, str]:
    return {"X-Hpcdet-User": name}


def test_an_open_master_lets_everyone_change_everything() -> None:
    assert may_modify(MasterSettings(), "bob", "alice")


@pytest.mark.parametrize(("actor", "owner", "allowed"), [
    ("alice", "alice", True), ("bob", "alice", False), ("root", "alice", True),
    ("bob", "anonymous", True)])
def test_a_named_master_lets_the_owner_and_admins_change(actor: str, owner: str,
                                                         allowed: bool) -> None:
    settings = MasterSettings(require_user=True, admins=("root",))
    assert may_modify(settings, actor, owner) is allowed


def test_auth_admins_is_read_and_checked(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "master.yaml"  # type: ignore[operator]
    path.write_text("auth: {require_user: true, admins: [root, ' ops ']}\n")
    assert load_settings(path).admins == ("root", "ops")
    path.write_text("auth: {admins: root, rquire_user: true}\n")
    with pytest.raises(Exception) as raised:
        load_settings(path)
    message = str(raised.value)
    assert "auth.admins: must be a list of non-empty strings" in message
    assert "auth.rquire_user: unknown key" in message


def test_another_user_may_not_pause_but_the_owner_and_an_admin_may(named: FlaskClient) -> None:
    private = create(named).get_json()["experiment"]["id"]  # owner alice, no workspace
    assert_error(named.post(f"/api/v1/experiments/{private}/pause", headers=as_user("bob")),
                 404, "not_found")
    assert named.post("/api/v1/workspaces", json={"name": "team"},
                      headers=as_user("alice")).status_code == 201
    assert named.put("/api/v1/workspaces/team/members/bob", json={"role": "viewer"},
                     headers=as_user("alice")).status_code == 200
    exp_id = create(named, workspace="team").get_json()["experiment"]["id"]
    message = assert_error(named.post(f"/api/v1/experiments/{exp_id}/pause",
                                      headers=as_user("bob")), 403, "forbidden")
    assert "'bob' may read but not change experiment" in message
    assert named.post(f"/api/v1/experiments/{exp_id}/pause",
                      headers=as_user("root")).get_json()["experiment"]["state"] == "PAUSED"
    assert named.post(f"/api/v1/experiments/{exp_id}/activate",
                      headers=as_user("alice")).status_code == 200


def test_pages_on_a_named_master_send_an_unnamed_browser_to_sign_in(named: FlaskClient) -> None:
    response = named.get("/queue?pool=batch")
    assert response.status_code == 302
    assert response.headers["Location"] == "/login?next=/queue?pool%3Dbatch"
    stylesheet = named.get("/static/hpcdet.css")
    assert stylesheet.status_code == 200
    stylesheet.close()
    assert named.get("/login").status_code == 200


def test_signing_in_sets_the_name_and_returns_to_the_page(named: FlaskClient) -> None:
    response = named.post("/login", data={"name": "alice", "next": "/cluster"})
    assert response.status_code == 302 and response.headers["Location"] == "/cluster"
    cookie = named.get_cookie("hpcdet_user")
    assert cookie is not None and cookie.value == "alice"
    html = named.get("/cluster").get_data(as_text=True)
    assert '<strong data-web-user>alice</strong>' in html


# "/\t/evil.example" and its kin: issue 28, finding 6 (browsers strip tab, CR and LF inside
# a URL, so "/\t/evil.example" became "//evil.example": another site).
@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/x", "/\\evil",
                                    "/\t/evil.example", "/\r\n/evil.example", "/\n/evil",
                                    "\t//evil.example", "/ /evil.example", "/\x00/evil",
                                    "/\u2028/evil", "/\x7f/evil"])
def test_sign_in_never_redirects_off_the_master(named: FlaskClient, target: str) -> None:
    response = named.post("/login", data={"name": "alice", "next": target})
    assert response.headers["Location"] == "/"


@pytest.mark.parametrize("name", ["", "a b", "<b>x</b>", "x" * 129, "-dash-first"])
def test_a_bad_name_is_refused_and_the_form_shown_again(named: FlaskClient, name: str) -> None:
    response = named.post("/login", data={"name": name})
    assert response.status_code == 400
    html = response.get_data(as_text=True)
    assert "name: letters, digits and . _ @ + - only" in html
    assert "<b>x</b>" not in html
    assert named.get_cookie("hpcdet_user") is None


def test_signing_out_forgets_the_name(named: FlaskClient) -> None:
    named.post("/login", data={"name": "alice"})
    assert named.post("/logout").status_code == 302
    assert named.get_cookie("hpcdet_user") is None
    assert named.get("/").status_code == 302


def test_the_api_ignores_the_cookie(named: FlaskClient) -> None:
    """Only the header names the caller: a cross-site form cannot act as the signed-in user."""
    exp_id = create(named).get_json()["experiment"]["id"]
    named.post("/login", data={"name": "alice"})
    assert_error(named.post(f"/api/v1/experiments/{exp_id}/kill"), 401, "unauthorized")
