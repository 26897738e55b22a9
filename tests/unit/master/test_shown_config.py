"""Secrets in a config are shown to its owner only (issue 28, "also seen": workspace viewers
read ``HF_TOKEN`` in ``environment_variables`` and the S3 ``access_key``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error, create

from hpcdet.master.app import create_app
from hpcdet.master.security.shown_config import masked_variables, shown_config
from hpcdet.master.settings.core import MasterSettings
from hpcdet.storage import MASK

ALICE, BOB = {"X-Hpcdet-User": "alice"}, {"X-Hpcdet-User": "bob"}
TOKEN = "hf_live_token_0123456789"
CONFIG = f"""
name: secrets
entrypoint: model_def:Trial
searcher: {{name: single, metric: loss, max_length: {{batches: 1}}}}
environment:
  environment_variables: ["HF_TOKEN={TOKEN}", "MODE=fast=yes"]
"""


def test_a_reader_who_is_not_the_owner_sees_names_not_values() -> None:
    config = {"environment": {"environment_variables": {"cpu": ["A=1"], "cuda": ["B=2", "C"]}},
              "checkpoint_storage": {"type": "s3", "access_key": "AKIA", "secret_key": "s"}}
    other = shown_config(config, to_owner=False)
    assert other["environment"]["environment_variables"] == {
        "cpu": [f"A={MASK}"], "cuda": [f"B={MASK}", "C"]}
    assert other["checkpoint_storage"] == {"type": "s3", "access_key": MASK, "secret_key": MASK}
    owner = shown_config(config, to_owner=True)
    assert owner["environment"] == config["environment"]
    assert owner["checkpoint_storage"]["access_key"] == "AKIA"
    assert owner["checkpoint_storage"]["secret_key"] == MASK  # never leaves the master
    assert masked_variables(other) == ["A", "B"]
    assert masked_variables(config) == []
    assert config["checkpoint_storage"]["access_key"] == "AKIA"  # the stored one is intact


@pytest.fixture
def team_app(settings: MasterSettings, fake: FakeSchedulerBackend) -> Iterator[Flask]:
    app = create_app(replace(settings, require_user=True), backend=fake)
    client = app.test_client()
    assert client.post("/api/v1/workspaces", json={"name": "team"},
                       headers=ALICE).status_code == 201
    member = client.put("/api/v1/workspaces/team/members/bob", json={"role": "editor"},
                        headers=ALICE)
    assert member.status_code in (200, 201), member.get_json()
    yield app
    app.config["HPCDET_ENGINE"].dispose()


def test_a_workspace_member_reads_no_variable_value_anywhere(team_app: Flask) -> None:
    client: FlaskClient = team_app.test_client()
    made = create(client, CONFIG, workspace="team")
    assert made.status_code == 201, made.get_json()
    exp_id = made.get_json()["experiment"]["id"]
    assert client.put("/api/v1/templates/team-env", json={"config": CONFIG, "workspace": "team"},
                      headers=ALICE).status_code in (200, 201)
    owner_view = client.get(f"/api/v1/experiments/{exp_id}", headers=ALICE).get_json()
    assert f"HF_TOKEN={TOKEN}" in json.dumps(owner_view)
    member_reads = [client.get(f"/api/v1/experiments/{exp_id}", headers=BOB),
                    client.get("/api/v1/templates/team-env", headers=BOB),
                    client.get("/api/v1/templates", headers=BOB)]
    for path in (f"/experiments/{exp_id}", f"/experiments/{exp_id}/fork"):
        client.set_cookie("hpcdet_user", "bob")
        member_reads.append(client.get(path))
    client.delete_cookie("hpcdet_user")
    for answer in member_reads:
        text = answer.get_data(as_text=True)
        assert answer.status_code == 200, text[:300]
        assert TOKEN not in text and "fast=yes" not in text
        assert re.search(r"HF_TOKEN=\*{8}", text), text[:300]


def test_a_fork_cannot_copy_a_value_the_forker_was_not_shown(team_app: Flask) -> None:
    client = team_app.test_client()
    made = create(client, CONFIG, workspace="team")
    exp_id = made.get_json()["experiment"]["id"]
    shown = client.get(f"/api/v1/experiments/{exp_id}", headers=BOB).get_json()
    text = json.dumps(shown["experiment"]["config"])
    refused = client.post(f"/api/v1/experiments/{exp_id}/fork", json={"config": text},
                          headers=BOB)
    message = assert_error(refused, 400, "bad_request")
    assert "HF_TOKEN" in message and "MODE" in message and "only its owner" in message
    mine = text.replace(f"HF_TOKEN={MASK}", "HF_TOKEN=bobs").replace(f"MODE={MASK}", "MODE=b")
    forked = client.post(f"/api/v1/experiments/{exp_id}/fork", json={"config": mine},
                         headers=BOB)
    assert forked.status_code == 201, forked.get_json()
