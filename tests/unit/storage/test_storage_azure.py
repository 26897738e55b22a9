"""The azure storage manager against a real Azure Blob Storage API server (Azurite, started
by ``scripts/azure-test-server``): upload, list, download, delete, safe names, errors without
secrets, and the checkpoint context of the harness on azure."""

from __future__ import annotations

import base64
import os
import pathlib
import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient

from hpcdet.core._checkpoint import CheckpointContext
from hpcdet.core._distributed import DummyDistributedContext
from hpcdet.core._info import Info
from hpcdet.core._train import DummyTrainContext
from hpcdet.storage import AzureStorage, CheckpointMissingError, StorageError, manager_for

MIB = 1024 * 1024


@pytest.fixture
def service(azure_connection_string: str) -> Any:
    return BlobServiceClient.from_connection_string(azure_connection_string)


@pytest.fixture
def container(service: Any) -> str:
    name = f"ckpt-{uuidlib.uuid4().hex[:12]}"
    service.create_container(name)
    return name


@pytest.fixture
def manager(azure_connection_string: str, container: str) -> AzureStorage:
    return AzureStorage(f"{container}/team/exp-1", connection_string=azure_connection_string)


def blobs(service: Any, container: str) -> dict[str, int]:
    return {b.name: int(b.size) for b in service.get_container_client(container).list_blobs()}


def checkpoint_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    src = tmp_path / "src"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "empty").mkdir()
    (src / "model.pt").write_bytes(b"weights" * 100)
    (src / "sub" / "deeper" / "opt.pt").write_bytes(b"\0\1\2")
    (src / "metadata.json").write_text('{"steps_completed": 3}\n')
    return src


def test_a_checkpoint_goes_up_as_one_blob_per_file_and_comes_back_the_same(
        manager: AzureStorage, service: Any, container: str, tmp_path: pathlib.Path) -> None:
    storage_id = str(uuidlib.uuid4())
    manager.upload(checkpoint_dir(tmp_path), storage_id)
    base = f"team/exp-1/{storage_id}/"
    assert blobs(service, container) == {base + "empty/": 0, base + "metadata.json": 23,
                                         base + "model.pt": 700, base + "sub/deeper/opt.pt": 3}
    assert manager.list_files(storage_id) == {"metadata.json": 23, "model.pt": 700,
                                              "sub/deeper/opt.pt": 3}
    assert manager.location(storage_id) == f"azure://{container}/team/exp-1/{storage_id}"
    dst = tmp_path / "dst"
    manager.download(storage_id, dst)
    assert (dst / "model.pt").read_bytes() == b"weights" * 100
    assert (dst / "sub" / "deeper" / "opt.pt").read_bytes() == b"\0\1\2"
    assert (dst / "empty").is_dir() and not any((dst / "empty").iterdir())
    assert b"".join(manager.read_chunks(storage_id, "model.pt")) == b"weights" * 100


def test_an_upload_creates_a_missing_container_as_determined_does(
        azure_connection_string: str, service: Any, tmp_path: pathlib.Path) -> None:
    name = f"new-{uuidlib.uuid4().hex[:12]}"
    src = tmp_path / "src"
    src.mkdir()
    payload = os.urandom(9 * MIB)  # over the single-put size: goes up in blocks
    (src / "weights.bin").write_bytes(payload)
    manager = AzureStorage(name, connection_string=azure_connection_string)
    manager.upload(src, "first")
    assert blobs(service, name) == {"first/weights.bin": 9 * MIB}
    manager.download("first", tmp_path / "back")
    assert (tmp_path / "back" / "weights.bin").read_bytes() == payload


def test_delete_removes_the_checkpoint_and_spares_a_neighbour_sharing_its_prefix(
        manager: AzureStorage, service: Any, container: str, tmp_path: pathlib.Path) -> None:
    src = checkpoint_dir(tmp_path)
    manager.upload(src, "doomed")
    manager.upload(src, "doomed-not")
    manager.delete("doomed")
    left = blobs(service, container)
    assert len(left) == 4 and all(k.startswith("team/exp-1/doomed-not/") for k in left)
    manager.delete("doomed")  # already gone: not an error


def test_a_missing_checkpoint_is_reported_as_missing(manager: AzureStorage,
                                                     tmp_path: pathlib.Path) -> None:
    with pytest.raises(CheckpointMissingError, match="checkpoint nope not found at azure://"):
        manager.download("nope", tmp_path / "dst")


def test_names_that_would_escape_the_target_are_not_downloaded(
        manager: AzureStorage, service: Any, container: str, tmp_path: pathlib.Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    client = service.get_container_client(container)
    client.upload_blob("team/exp-1/evil/ok.txt", b"ok")
    real_list = manager._list

    def listing_with_a_hostile_name(prefix: str) -> Iterator[tuple[str, int]]:
        # Azure normalizes '..' out of a blob's URL, so no client can write one; a hostile
        # listing (or a store that allows it) must still not reach outside the target.
        yield from real_list(prefix)
        yield f"{prefix}../../../escaped.txt", 1

    monkeypatch.setattr(manager, "_list", listing_with_a_hostile_name)
    target = tmp_path / "a" / "b" / "c"
    manager.download("evil", target)
    assert (target / "ok.txt").read_bytes() == b"ok"
    assert not list(tmp_path.rglob("escaped.txt"))


def test_a_wrong_account_key_is_a_storage_error_that_names_no_secret(
        azure_connection_string: str, container: str) -> None:
    wrong_key = base64.b64encode(b"not-the-account-key-" * 3).decode()
    conn = azure_connection_string.replace(
        azure_connection_string.split("AccountKey=")[1].split(";")[0], wrong_key)
    manager = AzureStorage(container, connection_string=conn)
    with pytest.raises(StorageError) as caught:
        manager.list_files("abc")
    message = str(caught.value)
    assert message.startswith(f"listing checkpoint abc at azure://{container}/abc: "
                              "AuthorizationFailure: Server failed to authenticate")
    assert wrong_key not in message + repr(manager) and conn not in message


def test_a_sas_signature_in_the_account_url_is_never_shown(
        azure_connection_string: str) -> None:
    endpoint = azure_connection_string.split("BlobEndpoint=")[1].rstrip(";")
    url = f"{endpoint}?sv=2021-08-06&ss=b&srt=co&sp=rl&sig=VERYSECRETSIGNATURE"
    manager = AzureStorage("nonexistent-container", account_url=url, credential=None)
    with pytest.raises(StorageError, match="AuthorizationFailure") as caught:
        manager.list_files("abc")
    assert "VERYSECRETSIGNATURE" not in str(caught.value) + repr(manager)
    assert manager.redact(f"GET {url}") == f"GET {endpoint}?********"


def test_the_harness_checkpoint_context_stores_and_restores_on_azure(
        azure_connection_string: str, container: str, tmp_path: pathlib.Path) -> None:
    storage = manager_for({"type": "azure", "container": container,
                           "connection_string": azure_connection_string})
    dist = DummyDistributedContext()
    registered: list[dict[str, Any]] = []
    ckpt = CheckpointContext(tmp_path / "staging", dist, info=Info.dummy({"lr": 0.1}),
                             train=DummyTrainContext(dist), registrar=registered.append,
                             storage=storage)
    with ckpt.store_path({"steps_completed": 7}) as (path, storage_id):
        (path / "model.pt").write_bytes(b"m" * 50)
    assert set(storage.list_files(storage_id)) == {"metadata.json", "model.pt"}
    assert registered[0]["uuid"] == storage_id
    with ckpt.restore_path(storage_id) as restored:
        assert (restored / "model.pt").read_bytes() == b"m" * 50


@pytest.mark.parametrize(("settings", "message"), [
    ({}, "exactly one of connection_string or account_url must be set"),
    ({"connection_string": "c", "account_url": "https://a"},
     "exactly one of connection_string or account_url must be set"),
    ({"connection_string": "c", "credential": "k"},
     "credential and connection_string must not both be set"),
])
def test_the_account_settings_are_checked(settings: dict[str, str], message: str) -> None:
    with pytest.raises(StorageError, match=message):
        AzureStorage("c", **settings)
    with pytest.raises(StorageError, match="an azure storage needs a container"):
        AzureStorage.from_config({"type": "azure", "account_url": "https://a"})
