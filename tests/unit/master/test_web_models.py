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
from test_master_model_registry import GONE, GOOD, OTHER, as_user, register, seed_checkpoints

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


# ---- issue 33: words, download, "load in Python", the picker, the edit form --------------


def _digits_with_version(named_app: Flask, client: FlaskClient, store: Path) -> int:
    """alice's model "digits" with GOOD as version 1 (its file on disk); her experiment id."""
    exp_id = seed_checkpoints(named_app, store)
    (store / GOOD).mkdir(parents=True)
    (store / GOOD / "model.pt").write_bytes(b"weights")
    client.post("/api/v1/models", headers=as_user("alice"), json={"name": "digits"})
    assert register(client, GOOD, model="digits").status_code == 201
    return exp_id


def test_a_version_has_words_a_download_link_and_metadata_as_a_table(
        named_app: Flask, client: FlaskClient, tmp_path: Path) -> None:
    _digits_with_version(named_app, client, tmp_path / "store")
    detail = page(client, "/models/digits", "alice")
    row = re.search(r'<tr data-version="1".*?</tr>', detail, re.S)
    assert row and 'title="ACTIVE">Active</span>' in row.group(0) and ">ACTIVE<" not in detail
    assert f'href="/checkpoints/{GOOD}/download" data-download' in row.group(0)
    assert re.search(r'data-fact="metadata">none</dd>', detail)  # not "{}"
    client.patch("/api/v1/models/digits", headers=as_user("alice"),
                 json={"metadata": {"team": NASTY, "acc": 0.97}})
    detail = page(client, "/models/digits", "alice")
    assert '<tr data-metadata-key="acc"><th scope="row">acc</th><td>0.97</td></tr>' in detail
    assert "<td>&lt;b&gt;x&lt;/b&gt;</td>" in detail and NASTY not in detail


def test_the_load_in_python_snippet_runs_against_the_master(
        named_app: Flask, client: FlaskClient, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import ast
    import html

    import httpx

    from hpcdet.experimental import client as sdk

    _digits_with_version(named_app, client, tmp_path / "store")
    found = re.search(r'data-snippet="1">.*?<code>(.*?)</code>', page(client, "/models/digits",
                                                                      "alice"), re.S)
    assert found
    snippet = html.unescape(found.group(1))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DET_USER_TOKEN", raising=False)
    monkeypatch.chdir(tmp_path)
    sdk.login("http://localhost:8080", user="alice",
              transport=httpx.WSGITransport(app=named_app))
    # Everything but loading the trial (that needs the trial's own module) runs for real.
    lines = snippet.splitlines()
    cut = next(i for i, line in enumerate(lines) if line.startswith("trial = "))
    scope: dict[str, object] = {}
    exec(compile("\n".join(lines[:cut]), "snippet", "exec"), scope)  # noqa: S102
    assert (Path(str(scope["path"])) / "model.pt").read_bytes() == b"weights"
    assert callable(scope["load_trial_from_checkpoint_path"])
    ast.parse(snippet)  # and the rest is Python


def test_the_picker_offers_the_experiments_kept_checkpoints_best_first(
        named_app: Flask, client: FlaskClient, tmp_path: Path) -> None:
    exp_id = _digits_with_version(named_app, client, tmp_path / "store")
    with session_scope(named_app.config["HPCDET_SESSION_FACTORY"]) as session:
        for uuid, loss in ((GOOD, 0.5), (OTHER, 0.1)):
            session.get_one(Checkpoint, uuid).validation_metrics = {"loss": loss}
        trial_id = session.get_one(Checkpoint, GOOD).trial_id
    for query in (f"experiment={exp_id}", f"trial={trial_id}"):
        form = page(client, f"/models/digits?{query}", "alice")
        options = re.findall(r'<option value="([^"]*)">([^<]*)</option>', form)
        assert [uuid for uuid, _ in options] == [OTHER, GOOD, ""]  # GONE's files are gone
        assert options[0][1] == f"trial {trial_id} · step 2 · loss 0.1 · {OTHER[:8]}"
        assert 'name="checkpoint_uuid_typed"' in form  # the UUID stays as the fallback
    assert "must be a number" in page(client, "/models/digits?experiment=x%3Cb", "alice", 400)
    bobs = page(client, f"/models/digits?experiment={exp_id + 1}", "alice", 404)
    assert f"experiment {exp_id + 1} not found" in bobs  # bob's: as if unknown
    assert 'name="checkpoint_uuid" required' in page(client, "/models/digits", "alice")


def test_only_who_may_change_the_model_gets_the_edit_and_register_forms(
        named_app: Flask, client: FlaskClient, tmp_path: Path) -> None:
    _digits_with_version(named_app, client, tmp_path / "store")
    client.patch("/api/v1/models/digits", headers=as_user("alice"),
                 json={"labels": ["prod", "v2"],
                       "metadata": {"acc": 0.97, "team": "ml", "ver": "2"}})
    mine = page(client, "/models/digits", "alice")
    assert 'data-edit-model="digits"' in mine and 'name="labels" value="prod, v2"' in mine
    # the text "2" is written as JSON text, so that saving the form keeps it text
    assert ">acc = 0.97\nteam = ml\nver = &#34;2&#34;</textarea>" in mine
    assert 'data-metadata-was>{"acc": 0.97, "team": "ml", "ver": "2"}</script>' in mine
    # a workspace viewer reads the model but may not change it: no forms (the API's 403)
    client.post("/api/v1/workspaces", json={"name": "team"}, headers=as_user("alice"))
    client.put("/api/v1/workspaces/team/members/vic", json={"role": "viewer"},
               headers=as_user("alice"))
    client.post("/api/v1/models/digits/move", json={"workspace": "team"},
                headers=as_user("alice"))
    seen = page(client, "/models/digits", "vic")
    assert 'data-version="1"' in seen and 'data-snippet="1"' in seen
    assert "data-edit-model" not in seen and "data-register-version" not in seen
    assert "data-edit-model" not in page(client, "/models/digits", "mallory", 404)
