"""The model registry pages: /models, /models/<name>, and the trial page's register links."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error
from test_master_model_registry import GONE, GOOD, as_user, register, seed_checkpoints

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.app import create_app
from hpcdet.master.db import session_scope
from hpcdet.master.models import Checkpoint
from hpcdet.master.settings.core import MasterSettings

NASTY = "<b>x</b>"


@pytest.fixture
def named_app(settings: MasterSettings) -> Iterator[Flask]:
    app = create_app(replace(settings, require_user=True), backend=SlurmBackend())
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def client(named_app: Flask) -> FlaskClient:
    return named_app.test_client()


def page(client: FlaskClient, url: str, user: str, status: int = 200) -> str:
    client.set_cookie("hpcdet_user", user)
    response = client.get(url)
    assert response.status_code == status, response.data
    return response.get_data(as_text=True)


def test_list_and_model_pages_show_what_the_user_sees(named_app: Flask, client: FlaskClient,
                                                      tmp_path: Path) -> None:
    seed_checkpoints(named_app, tmp_path / "store")
    made = client.post("/api/v1/models", headers=as_user("alice"),
                       json={"name": "digits", "description": NASTY, "labels": ["prod"]})
    assert made.status_code == 201
    assert register(client, GOOD, model="digits", comment="from asha").status_code == 201
    listing = page(client, "/models", "alice")
    assert 'data-model="digits"' in listing and 'href="/models/digits"' in listing
    assert NASTY not in listing and "&lt;b&gt;x&lt;/b&gt;" in listing
    assert "data-create-model" in listing and "models.js" in listing
    detail = page(client, "/models/digits", "alice")
    rows = re.findall(r'<tr data-version="(\d+)" data-checkpoint="([^"]+)"', detail)
    assert rows == [("1", GOOD)]
    assert "from asha" in detail and "data-register-version" in detail
    assert 'name="model" value="digits"' in detail
    # another user sees neither the model nor it in the list
    assert "not found" in page(client, "/models/digits", "mallory", 404)
    assert 'data-model="digits"' not in page(client, "/models", "mallory")


def test_a_trial_page_links_its_checkpoints_to_the_register_form(
        named_app: Flask, client: FlaskClient, tmp_path: Path) -> None:
    seed_checkpoints(named_app, tmp_path / "store")
    client.post("/api/v1/models", headers=as_user("alice"), json={"name": "digits"})
    with session_scope(named_app.config["HPCDET_SESSION_FACTORY"]) as session:
        trial_id = session.get_one(Checkpoint, GOOD).trial_id
    trial = page(client, f"/trials/{trial_id}", "alice")
    linked = re.findall(r'href="/models\?checkpoint=([^"]+)" data-register-checkpoint', trial)
    assert GOOD in linked and GONE not in linked  # a deleted checkpoint is not offered
    form = page(client, f"/models?checkpoint={GOOD}", "alice")
    assert f'data-register-checkpoint="{GOOD}"' in form
    assert f'name="checkpoint_uuid" value="{GOOD}"' in form
    assert '<option value="digits">digits</option>' in form
    # a checkpoint the user may not see is the same 404 as an unknown one
    assert "checkpoint " + GOOD + " not found" in page(client, f"/models?checkpoint={GOOD}",
                                                        "mallory", 404)


def test_on_a_munge_master_the_forms_need_the_pages_csrf_token(settings: MasterSettings,
                                                               tmp_path: Path) -> None:
    import datetime as dt

    from hpcdet.master.api.auth import SESSION_COOKIE
    from hpcdet.master.security import tokens

    app = create_app(replace(settings, auth_mode="munge"), backend=SlurmBackend())
    try:
        seed_checkpoints(app, tmp_path / "store")
        with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
            cookie = tokens.issue(session, "alice", "web", dt.timedelta(hours=1))[0]
        client = app.test_client()
        client.set_cookie(SESSION_COOKIE, cookie)
        html = client.get(f"/models?checkpoint={GOOD}").get_data(as_text=True)
        found = re.search(r'<meta name="csrf-token" content="([^"]+)">', html)
        assert found and "data-create-model" in html
        body = {"name": "digits"}
        assert_error(client.post("/api/v1/models", json=body), 403, "csrf")
        made = client.post("/api/v1/models", json=body,
                           headers={"X-CSRF-Token": found.group(1)})
        assert made.status_code == 201 and made.get_json()["model"]["owner"] == "alice"
        versions = "/api/v1/models/digits/versions"
        assert_error(client.post(versions, json={"checkpoint_uuid": GOOD}), 403, "csrf")
        assert client.post(versions, json={"checkpoint_uuid": GOOD},
                           headers={"X-CSRF-Token": found.group(1)}).status_code == 201
    finally:
        app.config["HPCDET_ENGINE"].dispose()
