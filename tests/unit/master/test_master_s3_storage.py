"""The master with object storage: s3 experiments (GC deletes objects, the download route
streams them, the secret never leaves the master), gcs/azure refused at submission on a
master without their client library.

The object store is the local S3-API server of ``scripts/s3-test-server`` (moto).
"""

from __future__ import annotations

import io
import json
import tarfile
import uuid as uuidlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error, create, job_token
from sqlalchemy import func, select

from hpcdet.dispatcher import JobPhase
from hpcdet.master.app import create_app
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Checkpoint, Experiment, Job, Trial
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.settings.core import MasterSettings
from hpcdet.storage import S3Storage, StorageError

SECRET = "unit-secret-value"
S3_CONFIG = """\
name: s3
entrypoint: python3 train.py
hyperparameters: {{lr: 0.1}}
searcher: {{name: single, metric: loss, max_length: {{batches: 10}}}}
checkpoint_storage:
  type: s3
  bucket: {bucket}
  prefix: exp/
  endpoint_url: {endpoint}
  access_key: unit-key
  secret_key: {secret}
  save_trial_best: 0
  save_trial_latest: 1
"""
CLOUD = {"gcs": "  type: gcs\n  bucket: b\n",
         "azure": "  type: azure\n  container: c\n  account_url: https://a.example\n"}
CLIENT_MODULE = {"gcs": "google.cloud.storage", "azure": "azure.storage.blob"}
H = {"X-Hpcdet-User": "alice"}


@pytest.fixture
def bucket(s3_endpoint: str) -> str:
    name = f"master-{uuidlib.uuid4().hex[:12]}"
    s3_client(s3_endpoint).create_bucket(Bucket=name)
    return name


def s3_client(endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="unit-key", aws_secret_access_key=SECRET)


def keys(endpoint: str, bucket: str) -> set[str]:
    listing = s3_client(endpoint).list_objects_v2(Bucket=bucket)
    return {o["Key"] for o in listing.get("Contents") or []}


def start(flask_client: FlaskClient, reconciler: Reconciler, endpoint: str,
          bucket: str) -> tuple[int, Trial]:
    response = create(flask_client, S3_CONFIG.format(bucket=bucket, endpoint=endpoint,
                                                     secret=SECRET))
    assert response.status_code == 201, response.get_json()
    exp_id = int(response.get_json()["experiment"]["id"])
    reconciler.cycle()
    return exp_id, the_trial(flask_client.application, exp_id)


def the_trial(app: Flask, exp_id: int) -> Trial:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return session.scalars(select(Trial).where(Trial.experiment_id == exp_id)).one()


def save(flask_client: FlaskClient, endpoint: str, bucket: str, trial: Trial,
         steps: int) -> str:
    """Upload a checkpoint's objects and register it, as the harness does."""
    uuid = str(uuidlib.uuid4())
    for name, data in {"model.pt": b"w" * steps, "sub/opt.pt": b"o"}.items():
        s3_client(endpoint).put_object(Bucket=bucket, Key=f"exp/{uuid}/{name}", Body=data)
    response = flask_client.post(
        f"/api/v1/trials/{trial.id}/checkpoints",
        headers={"Authorization": f"Bearer {job_token(trial)}"},
        json={"uuid": uuid, "steps_completed": steps})
    assert response.status_code == 201, response.get_json()
    return uuid


def finish(app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
           trial: Trial) -> None:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        job_id = session.scalars(select(Job.job_id).where(Job.trial_id == trial.id)).one()
    fake.phases[str(job_id)] = JobPhase.COMPLETED
    reconciler.cycle()


def test_gc_deletes_the_objects_of_checkpoints_the_policy_drops(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
        s3_endpoint: str, bucket: str) -> None:
    _exp_id, trial = start(client, reconciler, s3_endpoint, bucket)
    old = save(client, s3_endpoint, bucket, trial, 5)
    new = save(client, s3_endpoint, bucket, trial, 10)
    assert len(keys(s3_endpoint, bucket)) == 4
    finish(app, fake, reconciler, trial)
    assert keys(s3_endpoint, bucket) == {f"exp/{new}/model.pt", f"exp/{new}/sub/opt.pt"}
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        states = {c.uuid: c.state for c in session.scalars(select(Checkpoint))}
    assert states == {old: "DELETED", new: "ACTIVE"}


def test_deleting_a_checkpoint_or_the_experiment_deletes_their_objects(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
        s3_endpoint: str, bucket: str) -> None:
    exp_id, trial = start(client, reconciler, s3_endpoint, bucket)
    save(client, s3_endpoint, bucket, trial, 5)
    kept = save(client, s3_endpoint, bucket, trial, 10)
    finish(app, fake, reconciler, trial)  # the GC keeps only the trial's latest
    other_id, other = start(client, reconciler, s3_endpoint, bucket)
    lone = save(client, s3_endpoint, bucket, other, 3)
    finish(app, fake, reconciler, other)
    assert {k.split("/")[1] for k in keys(s3_endpoint, bucket)} == {kept, lone}
    assert client.delete(f"/api/v1/experiments/{exp_id}", headers=H).status_code == 200
    assert {k.split("/")[1] for k in keys(s3_endpoint, bucket)} == {lone}
    assert client.delete("/api/v1/checkpoints", json={"uuids": [lone]},
                         headers=H).status_code == 200
    assert keys(s3_endpoint, bucket) == set(), other_id


def test_the_download_route_streams_the_objects_as_a_tar(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
        s3_endpoint: str, bucket: str) -> None:
    _exp_id, trial = start(client, reconciler, s3_endpoint, bucket)
    uuid = save(client, s3_endpoint, bucket, trial, 3)
    described = client.get(f"/api/v1/checkpoints/{uuid}", headers=H).get_json()["checkpoint"]
    assert described["storage_path"] == f"s3://{bucket}/exp/{uuid}"
    response = client.get(f"/api/v1/checkpoints/{uuid}/download", headers=H)
    assert response.status_code == 200
    assert int(response.headers["Content-Length"]) == len(response.data)
    with tarfile.open(fileobj=io.BytesIO(response.data)) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()  # type: ignore[union-attr]
                 if m.isfile()}
    assert files == {"model.pt": b"www", "sub/opt.pt": b"o"}


def test_a_checkpoint_missing_from_the_store_is_404(
        client: FlaskClient, reconciler: Reconciler, s3_endpoint: str, bucket: str) -> None:
    _exp_id, trial = start(client, reconciler, s3_endpoint, bucket)
    uuid = save(client, s3_endpoint, bucket, trial, 3)
    store = s3_client(s3_endpoint)
    for key in keys(s3_endpoint, bucket):
        store.delete_object(Bucket=bucket, Key=key)
    message = assert_error(client.get(f"/api/v1/checkpoints/{uuid}/download", headers=H),
                           404, "not_found")
    assert f"s3://{bucket}/exp/{uuid}" in message


def test_the_secret_key_never_leaves_the_master(
        client: FlaskClient, fake: FakeSchedulerBackend, reconciler: Reconciler,
        s3_endpoint: str, bucket: str) -> None:
    exp_id, trial = start(client, reconciler, s3_endpoint, bucket)
    shown = client.get(f"/api/v1/experiments/{exp_id}", headers=H).get_data(as_text=True)
    assert SECRET not in shown
    storage = json.loads(shown)["experiment"]["config"]["checkpoint_storage"]
    assert storage["secret_key"] == "********" and storage["access_key"] == "unit-key"
    page = client.get(f"/experiments/{exp_id}", headers=H).get_data(as_text=True)
    assert SECRET not in page
    # The job gets it in its private trial.json, and stages checkpoints in its job dir.
    info_path = Path(trial.job_dir) / "trial.json"
    info = json.loads(info_path.read_text())
    assert info["experiment_config"]["checkpoint_storage"]["secret_key"] == SECRET
    assert info["checkpoint_dir"] == str(Path(trial.job_dir) / "checkpoints")
    assert info_path.stat().st_mode & 0o077 == 0
    [submission] = fake.submitted
    assert "hpcdet.harness" in submission.script and SECRET not in submission.script


@pytest.mark.parametrize("kind", ["gcs", "azure"])
def test_gcs_and_azure_are_refused_at_submission_and_nothing_is_created(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, tmp_path: Path,
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import hpcdet.storage as storage

    real = storage._importable  # as on a master without the client library
    monkeypatch.setattr(storage, "_importable",
                        lambda module: module != CLIENT_MODULE[kind] and real(module))
    head = S3_CONFIG.format(bucket="b", endpoint="e", secret="s").split("checkpoint_storage:")[0]
    config = head + "checkpoint_storage:\n" + CLOUD[kind]
    for dry_run in (True, False):
        response = create(client, config, dry_run=dry_run)
        message = assert_error(response, 400, "invalid_config")
        assert message == "the checkpoint storage is not available on this master"
        [detail] = response.get_json()["error"]["details"]
        assert detail.startswith(f"<config>.checkpoint_storage.type: checkpoint storage type "
                                 f"{kind} is not available on this master (")
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        assert session.scalar(select(func.count()).select_from(Experiment)) == 0
    assert not (tmp_path / "jobs").exists() or not any((tmp_path / "jobs").iterdir())
    assert fake.submitted == []


def test_an_unreachable_store_keeps_the_rows_and_is_tried_once_per_pass(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
        s3_endpoint: str, bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _exp_id, trial = start(client, reconciler, s3_endpoint, bucket)
    first = save(client, s3_endpoint, bucket, trial, 5)
    second = save(client, s3_endpoint, bucket, trial, 6)
    save(client, s3_endpoint, bucket, trial, 7)
    tried: list[str] = []

    def unreachable(self: S3Storage, storage_id: str) -> None:
        tried.append(storage_id)
        raise StorageError(f"deleting checkpoint {storage_id}: could not connect")

    monkeypatch.setattr(S3Storage, "delete", unreachable)
    finish(app, fake, reconciler, trial)
    assert len(tried) == 1 and tried[0] in {first, second}
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        assert {c.state for c in session.scalars(select(Checkpoint))} == {"ACTIVE"}
    assert len(keys(s3_endpoint, bucket)) == 6


def test_a_fork_of_the_shown_config_gets_the_source_secret_only_for_who_may_change_it(
        settings: MasterSettings, fake: FakeSchedulerBackend, s3_endpoint: str,
        bucket: str) -> None:
    """``det experiment fork`` sends the config the API showed, secret masked: the owner's
    fork gets the real secret back; a workspace viewer's fork is refused (its trials, the
    viewer's own, would read the secret)."""
    app = create_app(replace(settings, require_user=True), backend=fake)
    client = app.test_client()
    try:
        assert client.post("/api/v1/workspaces", json={"name": "team"},
                           headers=H).status_code == 201
        member = client.put("/api/v1/workspaces/team/members/bob", json={"role": "viewer"},
                            headers=H)
        assert member.status_code in (200, 201), member.get_json()
        made = create(client, S3_CONFIG.format(bucket=bucket, endpoint=s3_endpoint,
                                               secret=SECRET), workspace="team")
        assert made.status_code == 201, made.get_json()
        exp_id = int(made.get_json()["experiment"]["id"])
        shown = client.get(f"/api/v1/experiments/{exp_id}", headers=H).get_json()
        text = json.dumps(shown["experiment"]["config"])  # JSON is YAML
        bob = {"X-Hpcdet-User": "bob"}
        refused = client.post(f"/api/v1/experiments/{exp_id}/fork", json={"config": text},
                              headers=bob)
        assert "secret_key" in assert_error(refused, 400, "bad_request")
        fork = client.post(f"/api/v1/experiments/{exp_id}/fork", json={"config": text},
                           headers=H)
        assert fork.status_code == 201, fork.get_json()
        with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
            forked = session.get(Experiment, int(fork.get_json()["experiment"]["id"]))
            assert forked is not None
            assert forked.config["checkpoint_storage"]["secret_key"] == SECRET
    finally:
        app.config["HPCDET_ENGINE"].dispose()
