"""The gcs storage manager against a real GCS API server (gcp-storage-emulator, started by
``scripts/gcs-test-server``): upload, list, download, delete, safe names, errors, and the
checkpoint context of the harness on gcs."""

from __future__ import annotations

import json
import os
import pathlib
import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

import pytest
from google.cloud import storage as gcs

from hpcdet.core import CheckpointNotFoundError
from hpcdet.core._checkpoint import CheckpointContext
from hpcdet.core._distributed import DummyDistributedContext
from hpcdet.core._info import Info
from hpcdet.core._train import DummyTrainContext
from hpcdet.storage import CheckpointMissingError, GCSStorage, StorageError, manager_for
from hpcdet.storage import gcs as gcs_module

KIB = 1024


@pytest.fixture
def emulated(gcs_emulator: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A google-cloud-storage client of the emulator (which the managers use too)."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_emulator)
    return gcs.Client()


@pytest.fixture
def bucket(emulated: Any) -> str:
    name = f"ckpt-{uuidlib.uuid4().hex[:12]}"
    emulated.create_bucket(name)
    return name


@pytest.fixture
def manager(bucket: str) -> GCSStorage:
    return GCSStorage(bucket, prefix="/team/exp-1/")


def blobs(client: Any, bucket: str) -> dict[str, int]:
    return {b.name: int(b.size) for b in client.list_blobs(bucket)}


def checkpoint_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    src = tmp_path / "src"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "empty").mkdir()
    (src / "model.pt").write_bytes(b"weights" * 100)
    (src / "sub" / "deeper" / "opt.pt").write_bytes(b"\0\1\2")
    (src / "metadata.json").write_text('{"steps_completed": 3}\n')
    return src


def test_a_checkpoint_goes_up_as_one_object_per_file_and_comes_back_the_same(
        manager: GCSStorage, emulated: Any, bucket: str, tmp_path: pathlib.Path) -> None:
    storage_id = str(uuidlib.uuid4())
    src = checkpoint_dir(tmp_path)
    manager.upload(src, storage_id)
    base = f"team/exp-1/{storage_id}/"
    assert blobs(emulated, bucket) == {base + "empty/": 0, base + "metadata.json": 23,
                                       base + "model.pt": 700, base + "sub/deeper/opt.pt": 3}
    assert manager.list_files(storage_id) == {"metadata.json": 23, "model.pt": 700,
                                              "sub/deeper/opt.pt": 3}
    assert manager.location(storage_id) == f"gs://{bucket}/team/exp-1/{storage_id}"
    dst = tmp_path / "dst"
    manager.download(storage_id, dst)
    assert (dst / "model.pt").read_bytes() == b"weights" * 100
    assert (dst / "sub" / "deeper" / "opt.pt").read_bytes() == b"\0\1\2"
    assert (dst / "empty").is_dir() and not any((dst / "empty").iterdir())
    assert b"".join(manager.read_chunks(storage_id, "model.pt")) == b"weights" * 100


def test_a_large_file_goes_up_in_chunks_and_comes_back_whole(
        manager: GCSStorage, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setattr(gcs_module, "RESUMABLE_THRESHOLD", 256 * KIB)
    monkeypatch.setattr(gcs_module, "CHUNK_SIZE", 256 * KIB)  # GCS's smallest chunk
    src = tmp_path / "big"
    src.mkdir()
    payload = os.urandom(700 * KIB)
    (src / "weights.bin").write_bytes(payload)
    manager.upload(src, "big-one")
    manager.download("big-one", tmp_path / "back")
    assert (tmp_path / "back" / "weights.bin").read_bytes() == payload


def test_delete_removes_the_checkpoint_and_spares_a_neighbour_sharing_its_prefix(
        manager: GCSStorage, emulated: Any, bucket: str, tmp_path: pathlib.Path) -> None:
    src = checkpoint_dir(tmp_path)
    manager.upload(src, "doomed")
    manager.upload(src, "doomed-not")
    manager.delete("doomed")
    left = blobs(emulated, bucket)
    assert len(left) == 4 and all(k.startswith("team/exp-1/doomed-not/") for k in left)
    manager.delete("doomed")  # already gone: not an error


def test_a_missing_checkpoint_is_reported_as_missing(manager: GCSStorage,
                                                     tmp_path: pathlib.Path) -> None:
    with pytest.raises(CheckpointMissingError, match="checkpoint nope not found at gs://"):
        manager.download("nope", tmp_path / "dst")


def test_names_that_would_escape_the_target_are_not_downloaded(
        manager: GCSStorage, emulated: Any, bucket: str, tmp_path: pathlib.Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    emulated.bucket(bucket).blob("team/exp-1/evil/ok.txt").upload_from_string(b"ok")
    real_list = manager._list

    def listing_with_a_hostile_name(prefix: str) -> Iterator[tuple[str, int]]:
        # GCS accepts such a name; the emulator cannot store one, so the listing adds it.
        yield from real_list(prefix)
        yield f"{prefix}../../../escaped.txt", 1

    monkeypatch.setattr(manager, "_list", listing_with_a_hostile_name)
    target = tmp_path / "a" / "b" / "c"
    manager.download("evil", target)
    assert (target / "ok.txt").read_bytes() == b"ok"
    assert not list(tmp_path.rglob("escaped.txt"))


def test_errors_name_the_operation_and_the_location(emulated: Any) -> None:
    manager = GCSStorage("no-such-bucket")
    with pytest.raises(StorageError) as caught:
        manager.list_files("abc")
    message = str(caught.value)
    assert message.startswith("listing checkpoint abc at gs://no-such-bucket/abc: 404")


def test_missing_credentials_are_a_storage_error_without_the_key_file_content(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key_file = tmp_path / "key.json"
    key_file.write_text(json.dumps({"type": "service_account",
                                    "private_key": "very-secret-private-key"}))
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    with pytest.raises(StorageError) as caught:
        GCSStorage("b").list_files("x")
    assert str(caught.value).startswith("connecting to gs://b: ")
    assert "very-secret-private-key" not in str(caught.value)


def test_the_harness_checkpoint_context_stores_and_restores_on_gcs(
        bucket: str, tmp_path: pathlib.Path) -> None:
    storage = manager_for({"type": "gcs", "bucket": bucket, "prefix": "runs"})
    registered: list[dict[str, Any]] = []
    dist = DummyDistributedContext()
    ckpt = CheckpointContext(tmp_path / "staging", dist, info=Info.dummy({"lr": 0.1}),
                             train=DummyTrainContext(dist), registrar=registered.append,
                             storage=storage)
    with ckpt.store_path({"steps_completed": 7}) as (path, storage_id):
        (path / "model.pt").write_bytes(b"m" * 50)
    assert set(storage.list_files(storage_id)) == {"metadata.json", "model.pt"}
    assert [p.name for p in (tmp_path / "staging" / storage_id).iterdir()] == ["metadata.json"]
    with ckpt.restore_path(storage_id) as restored:
        assert (restored / "model.pt").read_bytes() == b"m" * 50
    with pytest.raises(CheckpointNotFoundError, match="not found at gs://"):
        with ckpt.restore_path(str(uuidlib.uuid4())):
            pass


def test_a_bucket_is_required_and_a_dotdot_prefix_refused() -> None:
    with pytest.raises(StorageError, match="a gcs storage needs a bucket"):
        GCSStorage.from_config({"type": "gcs"})
    with pytest.raises(StorageError, match="must not contain a '..' component"):
        GCSStorage("b", prefix="a/../b")
