"""Checkpoints in S3-compatible object storage, end to end on the dev Slurm cluster.

The object store is the local S3-API server of ``scripts/s3-test-server`` (moto in server
mode, a stand-in for a real S3 endpoint) on 127.0.0.1, reached by the master and by the
trial's job on the same host. The stand-in trial (``standin/standin.py``: the digits
trial's checkpoints through the Core API, on the standard library; paced, so there is
time to strike) runs with ``checkpoint_storage.type: s3``; the test checks that

1. its checkpoints are objects under ``<prefix>/<uuid>/`` and only metadata.json stays in
   the job directory;
2. after ``scontrol requeue`` (a preemption) the trial restores its latest checkpoint from
   the store and completes;
3. the master's checkpoint GC deletes the objects of the checkpoints the policy drops;
4. ``det checkpoint download`` fetches the kept one from the store through the master;

and that a ``gcs`` experiment (gcp-storage-emulator, ``scripts/gcs-test-server``) and an
``azure`` one (Azurite, ``scripts/azure-test-server``), stand-ins for the real services,
store their checkpoints as objects, which GC deletes and ``det checkpoint download``
fetches. (A gcs/azure experiment on a master without the client library is refused at
submission: tests/unit/master/test_master_s3_storage.py; the dev install has them.)
"""

from __future__ import annotations

import subprocess
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
import yaml
from it_helpers import (
    STANDIN_ENTRYPOINT,
    LiveMaster,
    experiment_with_trials,
    standin_context,
    trials_of,
)

pytestmark = [pytest.mark.slurm]
EPOCHS = 6
SECRET = "it-secret-value"


@pytest.fixture
def bucket(s3_endpoint: str) -> str:
    name = f"it-{uuidlib.uuid4().hex[:12]}"
    store(s3_endpoint).create_bucket(Bucket=name)
    return name


@pytest.fixture(autouse=True)
def cancel_leftover_jobs(slurm: dict[str, str]) -> Iterator[None]:
    """A failed test must not leave its trial's job running into the next one."""
    yield
    listing = subprocess.run(["squeue", "-h", "-O", "JobID:|,Comment:|"], env=slurm,
                             capture_output=True, text=True).stdout
    ours = [line.split("|")[0] for line in listing.splitlines() if "|hpcdet:it:" in line]
    if ours:
        subprocess.run(["scancel", *ours], env=slurm, check=False)


def store(endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="it-key", aws_secret_access_key=SECRET)


def objects(endpoint: str, bucket: str, prefix: str) -> dict[str, int]:
    pages = store(endpoint).get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                      Prefix=prefix)
    return {o["Key"]: o["Size"] for page in pages for o in page.get("Contents") or []}


def config(bucket: str, endpoint: str) -> dict[str, Any]:
    return {
        "name": "s3-checkpoints",
        "entrypoint": STANDIN_ENTRYPOINT,
        "hyperparameters": {"lr": 0.01, "hidden_size": 64, "global_batch_size": 64},
        "scheduling_unit": 1,
        "min_validation_period": {"epochs": 1},
        "min_checkpoint_period": {"epochs": 1},
        "searcher": {"name": "single", "metric": "validation_loss", "smaller_is_better": True,
                     "max_length": {"epochs": EPOCHS}},
        "resources": {"slots_per_trial": 1},
        "environment": {"environment_variables": ["STANDIN_BATCH_SLEEP=0.05"]},
        "checkpoint_storage": {"type": "s3", "bucket": bucket, "prefix": "team/run",
                               "endpoint_url": endpoint, "access_key": "it-key",
                               "secret_key": SECRET, "save_experiment_best": 0,
                               "save_trial_best": 0, "save_trial_latest": 1},
        "reproducibility": {"experiment_seed": 5},
        "max_restarts": 2,
        "preemption_timeout": 120,
    }


def create(master: LiveMaster, tmp_path: Path, doc: dict[str, Any]) -> int:
    context = standin_context(tmp_path / "context")
    path = tmp_path / "s3.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = master.det("experiment", "create", str(path), str(context), check=True).stdout
    return int(next(li for li in out.splitlines() if li.startswith("Created")).split()[-1])


def wait_for(probe: Callable[[], Any], what: str, timeout: float = 300) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = probe()
        except (httpx.TransportError, ValueError, KeyError, IndexError):
            value = None
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def checkpoints(master: LiveMaster, exp_id: int) -> list[dict[str, Any]]:
    return list(master.api(f"/experiments/{exp_id}/checkpoints?state=ALL")["checkpoints"])


def explain(master: LiveMaster, trial_id: int) -> str:
    logs = master.det("trial", "logs", str(trial_id), "--tail", "80").stdout
    return f"{master.api(f'/trials/{trial_id}')}\n{logs}\n{master.log.read_text()[-3000:]}"


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_s3_checkpoints_save_restore_after_requeue_and_gc(
        master: LiveMaster, tmp_path: Path, s3_endpoint: str, bucket: str) -> None:
    exp_id = create(master, tmp_path, config(bucket, s3_endpoint))
    trial_id = int(wait_for(lambda: trials_of(master, exp_id)[0]["id"],
                            "the trial to exist", 60))

    def validated(epochs: int) -> dict[str, Any] | None:
        trial = master.api(f"/trials/{trial_id}")["trial"]
        latest = (trial.get("latest_validation") or {}).get("metrics") or {}
        return trial if trial["state"] == "RUNNING" and latest.get("epochs", 0) >= epochs \
            else None

    trial = wait_for(lambda: validated(2), "two validated epochs")
    # 1. The checkpoints so far are objects in the store; the job dir keeps metadata only.
    saved = wait_for(lambda: checkpoints(master, exp_id), "a registered checkpoint")
    for c in saved:
        found = objects(s3_endpoint, bucket, f"team/run/{c['uuid']}/")
        assert f"team/run/{c['uuid']}/metadata.json" in found, found
        assert set(c["resources"]) == {k.split("/", 3)[3] for k in found}
        assert c["storage_path"] == f"s3://{bucket}/team/run/{c['uuid']}"
        staged = next(master.job_root.rglob(f"trial-{trial_id}")) / "checkpoints" / c["uuid"]
        assert [p.name for p in staged.iterdir()] == ["metadata.json"]
    # 2. A preemption: Slurm requeues the job, which must restore from the store.
    job = next(j for j in reversed(trial["jobs"]) if j["active"])
    subprocess.run(["scontrol", "requeue", job["job_id"]], env=master.env, check=True)
    answer = wait_for(lambda: (lambda a: a if a["experiment"]["ended_at"] else None)(
        master.api(f"/experiments/{exp_id}")), "the experiment to end", 480)
    assert answer["experiment"]["state"] == "COMPLETED", explain(master, trial_id)
    ended = master.api(f"/trials/{trial_id}")["trial"]
    assert ended["interruptions"] >= 1 and ended["restarts"] == 0, ended
    # The requeued run's own output (Slurm truncates the job's output files on a requeue;
    # read them where the job wrote them).
    job_dir = next(master.job_root.rglob(f"trial-{trial_id}"))
    output = "".join(p.read_text() for p in sorted(job_dir.glob("slurm-*.err")))
    restored = [li for li in output.splitlines() if "hpcdet storage: downloaded checkpoint" in li]
    assert restored and f"from s3://{bucket}/team/run/" in restored[0], output[-3000:]
    resumed_from = restored[0].split("downloaded checkpoint ")[1].split()[0]
    assert resumed_from in {c["uuid"] for c in checkpoints(master, exp_id)}
    assert ended["latest_validation"]["metrics"]["epochs"] == EPOCHS
    # 3. GC keeps the latest checkpoint only; the others' objects are gone from the store.
    final = wait_for(lambda: (lambda cs: cs if sum(c["state"] == "DELETED" for c in cs)
                              == len(cs) - 1 else None)(checkpoints(master, exp_id)),
                     "checkpoint GC", 120)
    assert len(final) >= 3, final
    [kept] = [c for c in final if c["state"] == "ACTIVE"]
    assert kept["steps_completed"] == max(c["steps_completed"] for c in final)
    left = objects(s3_endpoint, bucket, "team/run/")
    assert {k.split("/")[2] for k in left} == {kept["uuid"]}, sorted(left)
    # 4. det checkpoint download reads the kept one from the store, through the master.
    target = tmp_path / "downloaded"
    out = master.det("checkpoint", "download", kept["uuid"], "-o", str(target), check=True)
    assert "from the master" in out.stdout
    for key in left:
        rel = key.split("/", 3)[3]
        body = store(s3_endpoint).get_object(Bucket=bucket, Key=key)["Body"].read()
        assert (target / rel).read_bytes() == body
    assert SECRET not in str(experiment_with_trials(master, exp_id))


def run_until_gc(master: LiveMaster, tmp_path: Path, storage: dict[str, Any],
                 env: list[str]) -> dict[str, Any]:
    """Train the stand-in trial for 3 epochs with ``storage``; the one checkpoint GC keeps
    (after checking that it deleted every other one)."""
    doc = config("unused", "http://unused")
    doc["searcher"]["max_length"] = {"epochs": 3}
    doc["environment"]["environment_variables"] = env
    doc["checkpoint_storage"] = {**storage, "save_experiment_best": 0, "save_trial_best": 0,
                                 "save_trial_latest": 1}
    exp_id = create(master, tmp_path, doc)
    answer = wait_for(lambda: (lambda a: a if a["experiment"]["ended_at"] else None)(
        experiment_with_trials(master, exp_id)), "the experiment to end", 480)
    assert answer["experiment"]["state"] == "COMPLETED", \
        explain(master, int(answer["trials"][0]["id"]))
    final = wait_for(lambda: (lambda cs: cs if sum(c["state"] == "DELETED" for c in cs)
                              == len(cs) - 1 else None)(checkpoints(master, exp_id)),
                     "checkpoint GC", 120)
    [kept] = [c for c in final if c["state"] == "ACTIVE"]
    assert len(final) >= 3, final
    shown = str(experiment_with_trials(master, exp_id))
    assert "AccountKey" not in shown
    return dict(kept)


def check_download(master: LiveMaster, tmp_path: Path, uuid: str,
                   objects: dict[str, bytes]) -> None:
    """``det checkpoint download`` gives exactly these ``{relative path: bytes}``."""
    target = tmp_path / "downloaded"
    master.det("checkpoint", "download", uuid, "-o", str(target), check=True)
    got = {p.relative_to(target).as_posix(): p.read_bytes() for p in target.rglob("*")
           if p.is_file()}
    assert got == objects


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_azure_checkpoints_are_blobs_that_gc_deletes_and_download_fetches(
        master: LiveMaster, tmp_path: Path, azure_connection_string: str) -> None:
    from azure.storage.blob import BlobServiceClient

    container = f"it-{uuidlib.uuid4().hex[:12]}"  # the harness's first upload creates it
    kept = run_until_gc(master, tmp_path, {"type": "azure", "container": f"{container}/team",
                                           "connection_string": azure_connection_string}, [])
    assert kept["storage_path"] == f"azure://{container}/team/{kept['uuid']}"
    blobs = BlobServiceClient.from_connection_string(azure_connection_string) \
        .get_container_client(container)
    left = {b.name.split("/", 2)[2]: blobs.download_blob(b.name).readall()
            for b in blobs.list_blobs()}
    assert {b.name.split("/")[1] for b in blobs.list_blobs()} == {kept["uuid"]}
    assert set(kept["resources"]) == set(left)
    check_download(master, tmp_path, kept["uuid"], left)


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_gcs_checkpoints_are_objects_that_gc_deletes_and_download_fetches(
        master: LiveMaster, tmp_path: Path, gcs_emulator: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from google.cloud import storage

    # Credentials come from the environment (here: the emulator's address), in the master's
    # process and in the job alike.
    master.stop()
    master.env["STORAGE_EMULATOR_HOST"] = gcs_emulator
    master.start()
    bucket = f"it-{uuidlib.uuid4().hex[:12]}"
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_emulator)
    client = storage.Client()
    client.create_bucket(bucket)
    kept = run_until_gc(master, tmp_path, {"type": "gcs", "bucket": bucket, "prefix": "team"},
                        [f"STORAGE_EMULATOR_HOST={gcs_emulator}"])
    assert kept["storage_path"] == f"gs://{bucket}/team/{kept['uuid']}"
    names = [b.name for b in client.list_blobs(bucket)]
    assert {name.split("/")[1] for name in names} == {kept["uuid"]}
    left = {name.split("/", 2)[2]: client.bucket(bucket).blob(name).download_as_bytes()
            for name in names}
    assert set(kept["resources"]) == set(left)
    check_download(master, tmp_path, kept["uuid"], left)
