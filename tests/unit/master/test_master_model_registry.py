"""The model registry routes (/api/v1/models): models, versions, roles, bad input, the GC pin."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.app import create_app
from hpcdet.master.db import session_scope
from hpcdet.master.models import Checkpoint, Experiment, Trial
from hpcdet.master.reports.checkpoint_gc import CheckpointCollector
from hpcdet.master.settings.core import MasterSettings

GOOD = "aaaaaaaa-0000-4000-8000-00000000000a"
OTHER = "bbbbbbbb-0000-4000-8000-00000000000b"
GONE = "cccccccc-0000-4000-8000-00000000000c"
BOBS = "dddddddd-0000-4000-8000-00000000000d"


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


def seed_checkpoints(app: Flask, store: Path) -> int:
    """alice's ended experiment with checkpoints GOOD, OTHER (ACTIVE) and GONE (DELETED);
    bob's with BOBS. Returns alice's experiment id."""
    config = {"checkpoint_storage": {"type": "shared_fs", "host_path": str(store),
                                     "save_trial_best": 0, "save_trial_latest": 0},
              "searcher": {"name": "single", "metric": "loss"}}
    with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
        ids = []
        for owner, uuids in (("alice", (GOOD, OTHER, GONE)), ("bob", (BOBS,))):
            exp = Experiment(name="e", owner=owner, state="COMPLETED", config=config,
                             original_config="", context=b"", searcher_name="single")
            session.add(exp)
            session.flush()
            trial = Trial(experiment_id=exp.id, state="COMPLETED", hparams={}, seed=1,
                          token="x")
            session.add(trial)
            session.flush()
            for step, uuid in enumerate(uuids, start=1):
                session.add(Checkpoint(uuid=uuid, trial_id=trial.id, steps_completed=step,
                                       state="DELETED" if uuid == GONE else "ACTIVE"))
            ids.append(exp.id)
    return ids[0]


def make_model(client: FlaskClient, name: str = "mnist", user: str = "alice",
               **more: Any) -> Any:
    return client.post("/api/v1/models", json={"name": name, **more}, headers=as_user(user))


def register(client: FlaskClient, uuid: str, model: str = "mnist", user: str = "alice",
             **more: Any) -> Any:
    return client.post(f"/api/v1/models/{model}/versions",
                       json={"checkpoint_uuid": uuid, **more}, headers=as_user(user))


def test_create_get_patch_list_and_delete_a_model(client: FlaskClient) -> None:
    made = make_model(client, description="digits", metadata={"a": 1, "b": 2},
                      labels=["x", "y", "x"])
    assert made.status_code == 201, made.get_json()
    model = made.get_json()["model"]
    assert (model["name"], model["owner"], model["labels"], model["num_versions"]) == (
        "mnist", "alice", ["x", "y"], 0)
    by_id = client.get(f"/api/v1/models/{model['id']}", headers=as_user("alice"))
    assert by_id.get_json()["model"]["name"] == "mnist"
    patched = client.patch("/api/v1/models/mnist", headers=as_user("alice"),
                           json={"metadata": {"b": None, "c": 3}, "notes": "n",
                                 "labels": ["z"], "description": "d2"}).get_json()["model"]
    assert patched["metadata"] == {"a": 1, "c": 3}
    assert (patched["notes"], patched["labels"], patched["description"]) == ("n", ["z"], "d2")
    assert make_model(client, "b-model").status_code == 201
    listed = client.get("/api/v1/models?sort_by=name&order_by=desc",
                        headers=as_user("alice")).get_json()
    assert [m["name"] for m in listed["models"]] == ["mnist", "b-model"]
    assert listed["pagination"]["total"] == 2
    only = client.get("/api/v1/models?name=MNI&label=z", headers=as_user("alice")).get_json()
    assert [m["name"] for m in only["models"]] == ["mnist"]
    assert client.delete("/api/v1/models/mnist", headers=as_user("alice")).status_code == 200
    assert_error(client.get("/api/v1/models/mnist", headers=as_user("alice")), 404,
                 "not_found")


def test_bad_input_is_a_4xx_in_the_common_shape(client: FlaskClient) -> None:
    assert make_model(client).status_code == 201
    assert "already exists" in assert_error(make_model(client, user="bob"), 409, "conflict")
    for name in ("", "   ", "a  b", "a/b", "123", 7, "x" * 300, "tab\there"):
        assert_error(make_model(client, name), 400, "bad_request")  # type: ignore[arg-type]
    assert "metadata" in assert_error(make_model(client, "m2", metadata=[1]), 400,
                                      "bad_request")
    assert_error(make_model(client, "m3", labels="x"), 400, "bad_request")
    nan = client.post("/api/v1/models", data='{"name": "m5", "metadata": {"x": [NaN]}}',
                      content_type="application/json", headers=as_user("alice"))
    message = assert_error(nan, 400, "bad_request")
    assert "metadata.x[0]: NaN and Infinity are not JSON numbers" in message
    assert_error(make_model(client, "m4", colour="red"), 400, "bad_request")
    assert_error(client.patch("/api/v1/models/mnist", json={"metadata": "x"},
                              headers=as_user("alice")), 400, "bad_request")
    assert_error(client.patch("/api/v1/models/mnist", json=[1], headers=as_user("alice")),
                 400, "bad_request")
    assert_error(client.get("/api/v1/models?sort_by=colour", headers=as_user("alice")), 400,
                 "bad_request")
    assert_error(client.get("/api/v1/models?archived=maybe", headers=as_user("alice")), 400,
                 "bad_request")
    assert_error(register(client, 17), 400, "bad_request")  # type: ignore[arg-type]
    assert_error(register(client, "no-such-uuid"), 404, "not_found")
    assert_error(client.get("/api/v1/models/mnist/versions/1", headers=as_user("alice")),
                 404, "not_found")
    assert_error(client.post("/api/v1/models", headers=as_user("alice")), 400, "bad_request")
    assert_error(client.get("/api/v1/models/mnist"), 401, "unauthorized")


def test_versions_are_numbered_point_at_visible_completed_checkpoints(
        named_app: Flask, client: FlaskClient, tmp_path: Path) -> None:
    seed_checkpoints(named_app, tmp_path / "store")
    assert make_model(client).status_code == 201
    first = register(client, GOOD, name="best", comment="asha", metadata={"k": 1})
    assert first.status_code == 201, first.get_json()
    body = first.get_json()["model_version"]
    assert (body["version"], body["checkpoint_uuid"], body["name"]) == (1, GOOD, "best")
    assert body["checkpoint"]["uuid"] == GOOD and body["checkpoint"]["experiment_id"] > 0
    assert register(client, OTHER).get_json()["model_version"]["version"] == 2
    assert register(client, GOOD).get_json()["model_version"]["version"] == 3
    assert "DELETED" in assert_error(register(client, GONE), 409, "conflict")
    # bob's checkpoint is not alice's to see: the same 404 as an unknown one
    assert_error(register(client, BOBS), 404, "not_found")
    listed = client.get("/api/v1/models/mnist/versions?order_by=desc",
                        headers=as_user("alice")).get_json()
    assert [v["version"] for v in listed["model_versions"]] == [3, 2, 1]
    assert listed["model"]["num_versions"] == 3
    patched = client.patch("/api/v1/models/mnist/versions/2", headers=as_user("alice"),
                           json={"comment": "c", "metadata": {"x": [1]}, "labels": ["l"]})
    assert patched.get_json()["model_version"]["metadata"] == {"x": [1]}
    assert client.delete("/api/v1/models/mnist/versions/2",
                         headers=as_user("alice")).status_code == 200
    assert register(client, OTHER).get_json()["model_version"]["version"] == 4
    archived = client.post("/api/v1/models/mnist/archive", headers=as_user("alice"))
    assert archived.get_json()["model"]["archived"] is True
    assert "archived" in assert_error(register(client, OTHER), 409, "conflict")
    assert client.get("/api/v1/models?archived=false", headers=as_user("alice")).get_json()[
        "models"] == []
    client.post("/api/v1/models/mnist/unarchive", headers=as_user("alice"))
    assert register(client, OTHER).status_code == 201


def test_workspace_roles_viewers_read_strangers_see_nothing(named_app: Flask,
                                                            client: FlaskClient,
                                                            tmp_path: Path) -> None:
    seed_checkpoints(named_app, tmp_path / "store")
    assert client.post("/api/v1/workspaces", json={"name": "team"},
                       headers=as_user("alice")).status_code == 201
    client.put("/api/v1/workspaces/team/members/vic", json={"role": "viewer"},
               headers=as_user("alice"))
    client.put("/api/v1/workspaces/team/members/ed", json={"role": "editor"},
               headers=as_user("alice"))
    assert make_model(client, workspace="team").get_json()["model"]["workspace"] == "team"
    assert register(client, GOOD).status_code == 201
    assert client.get("/api/v1/models/mnist/versions", headers=as_user("vic")).status_code \
        == 200
    assert_error(client.patch("/api/v1/models/mnist", json={"notes": "x"},
                              headers=as_user("vic")), 403, "forbidden")
    assert_error(client.delete("/api/v1/models/mnist/versions/1", headers=as_user("vic")),
                 403, "forbidden")
    for path in ("/api/v1/models/mnist", "/api/v1/models/mnist/versions/1"):
        assert_error(client.get(path, headers=as_user("mallory")), 404, "not_found")
    assert_error(client.delete("/api/v1/models/mnist", headers=as_user("mallory")), 404,
                 "not_found")
    assert client.get("/api/v1/models", headers=as_user("mallory")).get_json()["models"] == []
    # an editor changes it, but registers only checkpoints they may see (alice's are not)
    assert client.patch("/api/v1/models/mnist", json={"notes": "x"},
                        headers=as_user("ed")).status_code == 200
    assert_error(register(client, OTHER, user="ed"), 404, "not_found")
    assert_error(make_model(client, "v-model", user="vic", workspace="team"), 403,
                 "forbidden")
    assert_error(client.post("/api/v1/models/mnist/move", json={"where": "x"},
                             headers=as_user("alice")), 400, "bad_request")
    moved = client.post("/api/v1/models/mnist/move", json={"workspace": None},
                        headers=as_user("alice")).get_json()["model"]
    assert moved["workspace_id"] is None
    assert_error(client.get("/api/v1/models/mnist", headers=as_user("vic")), 404, "not_found")


def test_checkpoint_gc_keeps_a_registered_checkpoint(named_app: Flask, client: FlaskClient,
                                                     tmp_path: Path) -> None:
    store = tmp_path / "store"
    exp_id = seed_checkpoints(named_app, store)
    for uuid in (GOOD, OTHER):
        (store / uuid).mkdir(parents=True)
        (store / uuid / "state_dict.pth").write_bytes(b"w")
    assert make_model(client).status_code == 201
    assert register(client, GOOD).status_code == 201
    # det e set gc-policy's preview names what the collector will delete: not GOOD
    preview = client.get(f"/api/v1/experiments/{exp_id}/preview-gc", headers=as_user("alice"))
    assert preview.status_code == 200, preview.get_json()
    assert GOOD not in str(preview.get_json())
    assert OTHER in str(preview.get_json())
    # the store is under the master's state_dir (tmp_path): an allowed storage root
    gc = CheckpointCollector(named_app.config["HPCDET_SESSION_FACTORY"],
                      named_app.config["HPCDET_SETTINGS"])
    deleted, failed = gc.collect_experiment(exp_id)
    assert (deleted, failed) == ([OTHER], [])
    assert (store / GOOD / "state_dict.pth").exists() and not (store / OTHER).exists()


def test_a_registered_checkpoint_or_its_experiment_cannot_be_deleted(
        named_app: Flask, client: FlaskClient, tmp_path: Path) -> None:
    """409 naming the checkpoint and the way out, and nothing deleted (the version's foreign
    key would otherwise make the experiment's deletion a 500)."""
    store = tmp_path / "store"
    exp_id = seed_checkpoints(named_app, store)
    for uuid in (GOOD, OTHER):
        (store / uuid).mkdir(parents=True)
    assert make_model(client).status_code == 201
    assert register(client, GOOD).status_code == 201
    alice = as_user("alice")
    refused = client.delete("/api/v1/checkpoints", json={"uuids": [OTHER, GOOD]}, headers=alice)
    assert GOOD in assert_error(refused, 409, "conflict")
    refused = client.delete(f"/api/v1/experiments/{exp_id}", headers=alice)
    assert "model version" in assert_error(refused, 409, "conflict")
    assert (store / GOOD).exists() and (store / OTHER).exists()
    assert client.get(f"/api/v1/experiments/{exp_id}", headers=alice).status_code == 200
    assert client.delete("/api/v1/models/mnist/versions/1", headers=alice).status_code in (200,
                                                                                         204)
    assert client.delete(f"/api/v1/experiments/{exp_id}", headers=alice).status_code == 200
    assert not (store / GOOD).exists() and not (store / OTHER).exists()
