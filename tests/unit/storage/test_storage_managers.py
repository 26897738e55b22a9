"""The storage interface as the harness and the master use it: the checkpoint context on
s3 (against the local S3-API server), the shared_fs manager, availability, masking."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import uuid as uuidlib
from typing import Any

import boto3
import pytest

from hpcdet.core import CheckpointNotFoundError
from hpcdet.core._checkpoint import CheckpointContext
from hpcdet.core._distributed import DummyDistributedContext
from hpcdet.core._info import Info
from hpcdet.core._train import DummyTrainContext
from hpcdet.errors import ConfigError
from hpcdet.storage import (
    MASK,
    AzureStorage,
    GCSStorage,
    S3Storage,
    SharedFSStorage,
    StorageError,
    check_available,
    manager_for,
    masked_config,
    object_store_for,
    unavailable_reason,
)


@pytest.fixture
def s3(s3_endpoint: str) -> S3Storage:
    bucket = f"ctx-{uuidlib.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1",
                 aws_access_key_id="t", aws_secret_access_key="t").create_bucket(Bucket=bucket)
    return S3Storage(bucket, prefix="runs", endpoint_url=s3_endpoint, access_key="t",
                     secret_key="t")


def context(directory: pathlib.Path, registered: list[dict[str, Any]],
            storage: S3Storage | None) -> CheckpointContext:
    dist = DummyDistributedContext()
    return CheckpointContext(directory, dist, info=Info.dummy({"lr": 0.1}),
                             train=DummyTrainContext(dist), registrar=registered.append,
                             storage=storage)


def test_a_checkpoint_on_s3_is_uploaded_registered_and_only_its_metadata_stays_local(
        s3: S3Storage, tmp_path: pathlib.Path) -> None:
    registered: list[dict[str, Any]] = []
    ckpt = context(tmp_path / "staging", registered, s3)
    with ckpt.store_path({"steps_completed": 7}) as (path, storage_id):
        (path / "model.pt").write_bytes(b"m" * 50)
        (path / "opt").mkdir()
        (path / "opt" / "state.pt").write_bytes(b"o" * 5)
    assert set(s3.list_files(storage_id)) == {"metadata.json", "model.pt", "opt/state.pt"}
    [entry] = registered
    assert entry["uuid"] == storage_id and entry["resources"]["model.pt"] == 50
    local = tmp_path / "staging" / storage_id
    assert [p.name for p in local.iterdir()] == ["metadata.json"]
    assert json.loads((local / "metadata.json").read_text())["steps_completed"] == 7
    with ckpt.restore_path(storage_id) as restored:
        assert (restored / "model.pt").read_bytes() == b"m" * 50
        assert (restored / "opt" / "state.pt").read_bytes() == b"o" * 5
    assert not restored.exists()  # the downloaded copy is removed after the block


def test_a_failed_upload_registers_nothing(tmp_path: pathlib.Path) -> None:
    registered: list[dict[str, Any]] = []
    unreachable = S3Storage("b", endpoint_url="http://127.0.0.1:9", access_key="k",
                            secret_key="s")
    unreachable.client.meta.config.retries = {"max_attempts": 1}
    ckpt = context(tmp_path, registered, unreachable)
    with pytest.raises(StorageError, match="uploading checkpoint"):
        with ckpt.store_path({"steps_completed": 1}) as (path, _id):
            (path / "model.pt").write_bytes(b"x")
    assert registered == []


def test_restoring_a_checkpoint_the_store_lacks_is_checkpoint_not_found(
        s3: S3Storage, tmp_path: pathlib.Path) -> None:
    ckpt = context(tmp_path, [], s3)
    with pytest.raises(CheckpointNotFoundError, match="not found at s3://"):
        with ckpt.restore_path(str(uuidlib.uuid4())):
            pass


def test_shared_fs_manager_copies_lists_and_deletes_without_following_links(
        tmp_path: pathlib.Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    src = tmp_path / "src"
    src.mkdir()
    (src / "model.pt").write_bytes(b"abc")
    (src / "link").symlink_to(outside)
    manager = SharedFSStorage(tmp_path / "root")
    manager.upload(src, "one")
    assert manager.list_files("one") == {"model.pt": 3}
    manager.download("one", tmp_path / "copy")
    assert (tmp_path / "copy" / "model.pt").read_bytes() == b"abc"
    manager.delete("one")
    assert not (tmp_path / "root" / "one").exists()
    assert (outside / "keep.txt").read_text() == "keep"
    manager.delete("one")  # gone already: fine
    with pytest.raises(StorageError, match="is not a checkpoint id"):
        manager.delete("../outside")


def without_module(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    """Make this process look as if ``missing`` were not installed."""
    import hpcdet.storage as storage

    real = storage._importable
    monkeypatch.setattr(storage, "_importable", lambda module: module != missing and real(module))


def test_manager_for_picks_by_type(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(manager_for({"type": "shared_fs", "host_path": "/x"}, directory="/x"),
                      SharedFSStorage)
    assert isinstance(manager_for({"type": "s3", "bucket": "b"}), S3Storage)
    assert isinstance(manager_for({"type": "gcs", "bucket": "b"}), GCSStorage)
    assert isinstance(manager_for({"type": "azure", "container": "c",
                                   "account_url": "https://a.example"}), AzureStorage)
    assert object_store_for({"checkpoint_storage": {"type": "shared_fs"}}) is None
    assert isinstance(object_store_for({"checkpoint_storage": {"type": "s3", "bucket": "b"}}),
                      S3Storage)
    without_module(monkeypatch, "google.cloud.storage")
    with pytest.raises(StorageError, match="gcs is not available on this master"):
        manager_for({"type": "gcs", "bucket": "b"})


@pytest.mark.parametrize(("kind", "module", "package"),
                         [("gcs", "google.cloud.storage", "google-cloud-storage"),
                          ("azure", "azure.storage.blob", "azure-storage-blob")])
def test_gcs_and_azure_are_unavailable_without_their_client_library(
        kind: str, module: str, package: str, monkeypatch: pytest.MonkeyPatch) -> None:
    without_module(monkeypatch, module)
    reason = unavailable_reason(kind)
    assert reason is not None
    assert reason.startswith(f"checkpoint storage type {kind} is not available on this master (")
    assert package in reason
    with pytest.raises(ConfigError) as caught:
        check_available({"checkpoint_storage": {"type": kind}})
    assert caught.value.errors == [f"<config>.checkpoint_storage.type: {reason}"]


def test_gcs_and_azure_are_available_with_their_client_library(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import hpcdet.storage as storage

    monkeypatch.setattr(storage, "_importable", lambda module: True)
    for kind in ("s3", "gcs", "azure"):
        assert unavailable_reason(kind) is None
        check_available({"checkpoint_storage": {"type": kind}})


def test_s3_is_unavailable_on_a_master_without_boto3(monkeypatch: pytest.MonkeyPatch) -> None:
    import hpcdet.storage as storage

    monkeypatch.setattr(storage, "_importable", lambda module: module != "boto3")
    assert unavailable_reason("s3") == (
        "checkpoint storage type s3 is not available on this master (its client library boto3 "
        "is not installed; install it into the master's and the jobs' Python environment, or "
        "use shared_fs)")


def test_s3_and_directories_are_available_here() -> None:
    for kind in ("s3", "shared_fs", "directory"):
        assert unavailable_reason(kind) is None
        check_available({"checkpoint_storage": {"type": kind}})


def test_secrets_are_masked_in_configs_people_see() -> None:
    config: dict[str, Any] = {"name": "x", "checkpoint_storage": {"type": "s3", "bucket": "b",
                                                  "access_key": "AKID", "secret_key": "s3cr3t"}}
    shown = masked_config(config)
    assert shown["checkpoint_storage"] == {"type": "s3", "bucket": "b", "access_key": "AKID",
                                           "secret_key": MASK}
    assert config["checkpoint_storage"]["secret_key"] == "s3cr3t"  # the original is untouched
    azure = masked_config({"checkpoint_storage": {"type": "azure", "connection_string": "c",
                                                  "credential": None}})
    assert azure["checkpoint_storage"] == {"type": "azure", "connection_string": MASK,
                                           "credential": None}
    sas = masked_config({"checkpoint_storage": {
        "type": "azure", "account_url": "https://a.blob.example/?sv=1&sig=SECRETSIG"}})
    assert sas["checkpoint_storage"]["account_url"] == f"https://a.blob.example/?{MASK}"


def test_importing_the_storage_package_imports_no_client_library() -> None:
    code = ("import sys, hpcdet.storage, hpcdet.core._checkpoint; "
            "print(*(m in sys.modules for m in ('boto3', 'botocore', 'google.cloud.storage', "
            "'google.api_core', 'azure.storage.blob', 'azure.core')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["False"] * 6


def test_a_masked_sas_in_an_account_url_comes_back_for_the_same_store_only() -> None:
    from hpcdet.storage import masked_fields, unmask_from

    source = {"checkpoint_storage": {"type": "azure", "container": "c",
                                     "account_url": "https://a.example/?sv=1&sig=SECRETSIG"}}
    shown = masked_config(source)
    assert masked_fields(shown) == ["account_url"]
    assert unmask_from(shown, source) == []
    assert shown == source
    other = masked_config(source)
    other["checkpoint_storage"]["container"] = "elsewhere"
    assert unmask_from(other, source) == ["account_url"]
