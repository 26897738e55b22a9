"""The checkpoint routes: list an experiment's, describe one, download one as a tar."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import create
from sqlalchemy import select, update

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Checkpoint, Trial
from hpcdet.master.security.tokens import hash_token

CONFIG = """\
name: ckpts
entrypoint: python3 train.py
hyperparameters: {{lr: 0.1}}
searcher: {{name: single, metric: loss, max_length: {{batches: 10}}}}
checkpoint_storage: {{type: shared_fs, host_path: {host}, storage_path: {host}/store}}
"""
USER = {"X-Hpcdet-User": "alice"}
TRIAL_TOKEN = "trial-secret"
# Checkpoint ids are UUIDs (they name the checkpoint directories).
A = "aaaaaaaa-0000-4000-8000-00000000000a"
B = "bbbbbbbb-0000-4000-8000-00000000000b"
C = "cccccccc-0000-4000-8000-00000000000c"



@pytest.fixture
def setup(client: FlaskClient, app: Flask, tmp_path: Path) -> tuple[int, Trial, Path]:
    """An experiment with one trial, and where its checkpoints go."""
    response = create(client, CONFIG.format(host=tmp_path / "shared"))
    assert response.status_code == 201, response.get_json()
    exp_id = response.get_json()["experiment"]["id"]
    sessions = make_session_factory(app.config["HPCDET_ENGINE"])
    make_reconciler(app.config["HPCDET_SETTINGS"], sessions, SlurmBackend()).search()
    with sessions() as session:
        trial = session.scalars(select(Trial).where(Trial.experiment_id == exp_id)).one()
        trial.token = hash_token(TRIAL_TOKEN)  # never submitted: no job files, so set one
        session.commit()
        session.refresh(trial)
    return exp_id, trial, tmp_path / "shared" / "store"


def save(client: FlaskClient, trial: Trial, root: Path, uuid: str, steps: int,
         loss: float | None) -> None:
    bearer = {"Authorization": f"Bearer {TRIAL_TOKEN}"}
    if loss is not None:
        client.post(f"/api/v1/trials/{trial.id}/metrics", headers=bearer, json={
            "group": "validation",
            "reports": [{"steps_completed": steps, "metrics": {"loss": loss}}]})
    (root / uuid / "sub").mkdir(parents=True)
    (root / uuid / "model.pt").write_bytes(b"w" * 1500)
    (root / uuid / "sub" / "opt.pt").write_bytes(b"o" * 10)
    response = client.post(f"/api/v1/trials/{trial.id}/checkpoints", headers=bearer,
                           json={"uuid": uuid, "steps_completed": steps,
                                 "metadata": {"steps_completed": steps, "note": "n"}})
    assert response.status_code == 201, response.get_json()


def three(client: FlaskClient, trial: Trial, root: Path) -> None:
    save(client, trial, root, A, 10, 0.5)
    save(client, trial, root, B, 20, 0.2)
    save(client, trial, root, C, 30, None)


def mark_deleted(app: Flask, uuid: str) -> None:
    with make_session_factory(app.config["HPCDET_ENGINE"]).begin() as session:
        session.execute(update(Checkpoint).where(Checkpoint.uuid == uuid)
                        .values(state="DELETED"))


def test_list_is_sorted_by_trial_then_steps_and_filters_by_state(
        client: FlaskClient, app: Flask, setup: tuple[int, Trial, Path]) -> None:
    exp_id, trial, root = setup
    three(client, trial, root)
    mark_deleted(app, A)
    url = f"/api/v1/experiments/{exp_id}/checkpoints"
    body = client.get(url, headers=USER).get_json()
    assert [c["uuid"] for c in body["checkpoints"]] == [B, C]
    assert (body["searcher_metric"], body["smaller_is_better"]) == ("loss", True)
    every = client.get(url + "?state=all", headers=USER).get_json()["checkpoints"]
    assert [(c["uuid"], c["state"]) for c in every] == [
        (A, "DELETED"), (B, "ACTIVE"), (C, "ACTIVE")]
    deleted = client.get(url + "?state=DELETED", headers=USER).get_json()["checkpoints"]
    assert [c["uuid"] for c in deleted] == [A]


def test_list_best_n_ranks_by_the_searcher_metric(
        client: FlaskClient, setup: tuple[int, Trial, Path]) -> None:
    exp_id, trial, root = setup
    three(client, trial, root)
    body = client.get(f"/api/v1/experiments/{exp_id}/checkpoints?best=5",
                      headers=USER).get_json()
    assert [c["uuid"] for c in body["checkpoints"]] == [B, A]


def test_list_rejects_a_bad_state_and_an_unknown_experiment(
        client: FlaskClient, setup: tuple[int, Trial, Path]) -> None:
    exp_id = setup[0]
    bad = client.get(f"/api/v1/experiments/{exp_id}/checkpoints?state=GONE", headers=USER)
    assert bad.status_code == 400
    assert "state: must be one of ACTIVE, DELETED, ALL" in bad.get_json()["error"]["message"]
    assert client.get("/api/v1/experiments/999/checkpoints", headers=USER).status_code == 404


def test_describe_shows_where_it_lives_and_its_metrics(
        client: FlaskClient, setup: tuple[int, Trial, Path]) -> None:
    exp_id, trial, root = setup
    three(client, trial, root)
    c = client.get(f"/api/v1/checkpoints/{B}", headers=USER).get_json()["checkpoint"]
    assert (c["experiment_id"], c["trial_id"], c["steps_completed"]) == (exp_id, trial.id, 20)
    assert c["storage_path"] == str(root / B)
    assert (c["searcher_metric"], c["searcher_metric_value"]) == ("loss", 0.2)
    assert c["validation_metrics"] == {"loss": 0.2}
    assert c["metadata"]["note"] == "n" and c["state"] == "ACTIVE"
    missing = client.get("/api/v1/checkpoints/nope-nope", headers=USER)
    assert missing.status_code == 404
    assert missing.get_json()["error"]["message"] == "checkpoint nope-nope not found"


def test_download_streams_the_directory_as_a_tar(
        client: FlaskClient, setup: tuple[int, Trial, Path]) -> None:
    _, trial, root = setup
    three(client, trial, root)
    response = client.get(f"/api/v1/checkpoints/{A}/download", headers=USER)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/x-tar"
    data = response.get_data()
    assert int(response.headers["Content-Length"]) == len(data)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        names = sorted(tar.getnames())
        assert tar.extractfile("model.pt").read() == b"w" * 1500  # type: ignore[union-attr]
        assert tar.extractfile("sub/opt.pt").read() == b"o" * 10  # type: ignore[union-attr]
    assert names == ["model.pt", "sub", "sub/opt.pt"]


def test_download_of_a_deleted_checkpoint_is_gone_and_of_missing_files_not_found(
        client: FlaskClient, app: Flask, setup: tuple[int, Trial, Path]) -> None:
    _, trial, root = setup
    three(client, trial, root)
    mark_deleted(app, A)
    gone = client.get(f"/api/v1/checkpoints/{A}/download", headers=USER)
    assert (gone.status_code, gone.get_json()["error"]["code"]) == (410, "gone")
    shutil.rmtree(root / B)
    missing = client.get(f"/api/v1/checkpoints/{B}/download", headers=USER)
    assert missing.status_code == 404
    assert "its files are not at" in missing.get_json()["error"]["message"]
