"""The master with gcs and azure checkpoint storage, their client libraries installed: the
experiment is accepted, the checkpoint GC deletes the objects its policy drops, the
download route streams the objects, and an azure connection string never leaves the master.

The stores are the local emulators of ``scripts/gcs-test-server`` (gcp-storage-emulator)
and ``scripts/azure-test-server`` (Azurite), stand-ins for the real services.
"""

from __future__ import annotations

import io
import tarfile
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import create, job_token
from sqlalchemy import select

from hpcdet.dispatcher import JobPhase
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Checkpoint, Job, Trial
from hpcdet.master.scheduling.reconciler import Reconciler

HEAD = """\
name: cloud
entrypoint: python3 train.py
hyperparameters: {lr: 0.1}
searcher: {name: single, metric: loss, max_length: {batches: 10}}
checkpoint_storage:
"""
H = {"X-Hpcdet-User": "alice"}


@dataclass
class Store:
    """One emulated store: the experiment's storage section and direct access to objects."""

    kind: str
    scheme_root: str  # gs://<bucket> or azure://<container>
    storage_yaml: str
    put: Callable[[str, bytes], object]
    names: Callable[[], set[str]]
    secret: str | None = None


def gcs_store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Store:
    from google.cloud import storage

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", request.getfixturevalue("gcs_emulator"))
    client = storage.Client()
    bucket = client.create_bucket(f"master-{uuidlib.uuid4().hex[:12]}")
    return Store("gcs", f"gs://{bucket.name}",
                 f"  type: gcs\n  bucket: {bucket.name}\n  prefix: exp/\n",
                 lambda key, data: bucket.blob(key).upload_from_string(data),
                 lambda: {b.name for b in client.list_blobs(bucket.name)})


def azure_store(request: pytest.FixtureRequest) -> Store:
    from azure.storage.blob import BlobServiceClient

    conn = request.getfixturevalue("azure_connection_string")
    name = f"master-{uuidlib.uuid4().hex[:12]}"
    container = BlobServiceClient.from_connection_string(conn).create_container(name)
    return Store("azure", f"azure://{name}",
                 f"  type: azure\n  container: {name}/exp\n  connection_string: '{conn}'\n",
                 lambda key, data: container.upload_blob(key, data),
                 lambda: {b.name for b in container.list_blobs()}, secret=conn)


@pytest.fixture(params=["gcs", "azure"])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Store:
    if request.param == "gcs":
        return gcs_store(request, monkeypatch)
    return azure_store(request)


def start(client: FlaskClient, reconciler: Reconciler, store: Store) -> tuple[int, Trial]:
    response = create(client, HEAD + store.storage_yaml)
    assert response.status_code == 201, response.get_json()
    exp_id = int(response.get_json()["experiment"]["id"])
    reconciler.cycle()
    with make_session_factory(client.application.config["HPCDET_ENGINE"])() as session:
        trial = session.scalars(select(Trial).where(Trial.experiment_id == exp_id)).one()
    return exp_id, trial


def save(client: FlaskClient, store: Store, trial: Trial, steps: int) -> str:
    """Upload a checkpoint's objects and register it, as the harness does."""
    uuid = str(uuidlib.uuid4())
    for name, data in {"model.pt": b"w" * steps, "sub/opt.pt": b"o"}.items():
        store.put(f"exp/{uuid}/{name}", data)
    response = client.post(f"/api/v1/trials/{trial.id}/checkpoints",
                           headers={"Authorization": f"Bearer {job_token(trial)}"},
                           json={"uuid": uuid, "steps_completed": steps})
    assert response.status_code == 201, response.get_json()
    return uuid


def finish(app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler, trial: Trial) -> None:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        job_id = session.scalars(select(Job.job_id).where(Job.trial_id == trial.id)).one()
    fake.phases[str(job_id)] = JobPhase.COMPLETED
    reconciler.cycle()


def test_the_experiment_is_accepted_and_gc_deletes_the_dropped_checkpoints_objects(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
        store: Store) -> None:
    _exp_id, trial = start(client, reconciler, store)
    old = save(client, store, trial, 5)
    new = save(client, store, trial, 10)
    assert len(store.names()) == 4
    finish(app, fake, reconciler, trial)
    assert store.names() == {f"exp/{new}/model.pt", f"exp/{new}/sub/opt.pt"}
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        states = {c.uuid: c.state for c in session.scalars(select(Checkpoint))}
    assert states == {old: "DELETED", new: "ACTIVE"}


def test_the_download_route_streams_the_objects_as_a_tar(
        client: FlaskClient, reconciler: Reconciler, store: Store) -> None:
    exp_id, trial = start(client, reconciler, store)
    uuid = save(client, store, trial, 3)
    described = client.get(f"/api/v1/checkpoints/{uuid}", headers=H).get_json()["checkpoint"]
    assert described["storage_path"] == f"{store.scheme_root}/exp/{uuid}"
    response = client.get(f"/api/v1/checkpoints/{uuid}/download", headers=H)
    assert response.status_code == 200
    assert int(response.headers["Content-Length"]) == len(response.data)
    with tarfile.open(fileobj=io.BytesIO(response.data)) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()  # type: ignore[union-attr]
                 if m.isfile()}
    assert files == {"model.pt": b"www", "sub/opt.pt": b"o"}
    if store.secret:  # the azure connection string stays on the master
        shown = client.get(f"/api/v1/experiments/{exp_id}", headers=H).get_data(as_text=True)
        assert store.secret not in shown and "AccountKey" not in shown


def test_deleting_a_checkpoint_then_the_experiment_deletes_their_objects(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
        store: Store) -> None:
    exp_id, trial = start(client, reconciler, store)
    old = save(client, store, trial, 5)
    new = save(client, store, trial, 10)
    response = client.delete("/api/v1/checkpoints", headers=H, json={"uuids": [old]})
    assert response.status_code == 200, response.get_json()
    assert store.names() == {f"exp/{new}/model.pt", f"exp/{new}/sub/opt.pt"}
    finish(app, fake, reconciler, trial)
    response = client.delete(f"/api/v1/experiments/{exp_id}", headers=H)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["left_behind"] == [] and store.names() == set()
