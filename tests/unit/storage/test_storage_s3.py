"""The s3 storage manager against a real S3-API server (moto in server mode, started by
``scripts/s3-test-server``): upload, list, download, multipart, delete, credentials."""

from __future__ import annotations

import io
import os
import pathlib
import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from hpcdet.storage import CheckpointMissingError, S3Storage, StorageError
from hpcdet.storage.base import Progress
from hpcdet.storage.s3 import normalize_prefix

MIB = 1024 * 1024


def s3_client(endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test")


@pytest.fixture
def bucket(s3_endpoint: str) -> Iterator[str]:
    name = f"ckpt-{uuidlib.uuid4().hex[:12]}"
    s3_client(s3_endpoint).create_bucket(Bucket=name)
    yield name


@pytest.fixture
def manager(s3_endpoint: str, bucket: str) -> S3Storage:
    return S3Storage(bucket, prefix="/team/exp-1/", endpoint_url=s3_endpoint,
                     access_key="AKIDTEST", secret_key="not-a-real-secret")


def keys(endpoint: str, bucket: str) -> dict[str, int]:
    pages = s3_client(endpoint).get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return {o["Key"]: o["Size"] for page in pages for o in page.get("Contents") or []}


def checkpoint_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    src = tmp_path / "src"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "empty").mkdir()
    (src / "model.pt").write_bytes(b"weights" * 100)
    (src / "sub" / "deeper" / "opt.pt").write_bytes(b"\0\1\2")
    (src / "metadata.json").write_text('{"steps_completed": 3}\n')
    return src


def test_upload_writes_one_object_per_file_under_prefix_and_id(
        manager: S3Storage, s3_endpoint: str, bucket: str, tmp_path: pathlib.Path) -> None:
    storage_id = str(uuidlib.uuid4())
    manager.upload(checkpoint_dir(tmp_path), storage_id)
    base = f"team/exp-1/{storage_id}/"
    assert keys(s3_endpoint, bucket) == {base + "empty/": 0, base + "metadata.json": 23,
                                         base + "model.pt": 700, base + "sub/deeper/opt.pt": 3}
    assert manager.list_files(storage_id) == {"metadata.json": 23, "model.pt": 700,
                                              "sub/deeper/opt.pt": 3}
    assert manager.location(storage_id) == f"s3://{bucket}/team/exp-1/{storage_id}"


def test_download_restores_the_same_tree(manager: S3Storage, tmp_path: pathlib.Path) -> None:
    src = checkpoint_dir(tmp_path)
    manager.upload(src, "ckpt-a")
    dst = tmp_path / "dst"
    manager.download("ckpt-a", dst)
    assert (dst / "model.pt").read_bytes() == (src / "model.pt").read_bytes()
    assert (dst / "sub" / "deeper" / "opt.pt").read_bytes() == b"\0\1\2"
    assert (dst / "empty").is_dir() and not any((dst / "empty").iterdir())


def test_a_large_file_goes_up_in_parts_and_comes_back_whole(
        s3_endpoint: str, bucket: str, tmp_path: pathlib.Path) -> None:
    manager = S3Storage(bucket, endpoint_url=s3_endpoint, access_key="a", secret_key="b",
                        multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB)
    src = tmp_path / "big"
    src.mkdir()
    payload = os.urandom(12 * MIB)
    (src / "weights.bin").write_bytes(payload)
    manager.upload(src, "big-one")
    head = s3_client(s3_endpoint).head_object(Bucket=bucket, Key="big-one/weights.bin")
    assert head["ETag"].strip('"').endswith("-3")  # a multipart upload of three parts
    manager.download("big-one", tmp_path / "back")
    assert (tmp_path / "back" / "weights.bin").read_bytes() == payload


def test_delete_removes_every_object_of_the_checkpoint_only(
        manager: S3Storage, s3_endpoint: str, bucket: str, tmp_path: pathlib.Path) -> None:
    src = checkpoint_dir(tmp_path)
    manager.upload(src, "doomed")
    manager.upload(src, "doomed-not")  # shares the first letters: must survive
    manager.delete("doomed")
    left = keys(s3_endpoint, bucket)
    assert left and all(k.startswith("team/exp-1/doomed-not/") for k in left)
    manager.delete("doomed")  # already gone: not an error


def test_a_missing_checkpoint_is_reported_as_missing(manager: S3Storage,
                                                     tmp_path: pathlib.Path) -> None:
    with pytest.raises(CheckpointMissingError, match="checkpoint nope not found at s3://"):
        manager.download("nope", tmp_path / "dst")


def test_keys_that_would_escape_the_target_are_not_downloaded(
        manager: S3Storage, s3_endpoint: str, bucket: str, tmp_path: pathlib.Path) -> None:
    client = s3_client(s3_endpoint)
    client.put_object(Bucket=bucket, Key="team/exp-1/evil/ok.txt", Body=b"ok")
    client.put_object(Bucket=bucket, Key="team/exp-1/evil/../../../escaped.txt", Body=b"x")
    target = tmp_path / "a" / "b" / "c"
    manager.download("evil", target)
    assert (target / "ok.txt").read_bytes() == b"ok"
    assert not list(tmp_path.rglob("escaped.txt"))


def test_credentials_come_from_the_environment_when_the_config_has_none(
        s3_endpoint: str, bucket: str, tmp_path: pathlib.Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "env-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    manager = S3Storage.from_config({"type": "s3", "bucket": bucket, "endpoint_url": s3_endpoint})
    manager.upload(checkpoint_dir(tmp_path), "from-env")
    credentials = manager.client._request_signer._credentials
    assert (credentials.access_key, credentials.secret_key) == ("env-key", "env-secret")
    assert "from-env/model.pt" in keys(s3_endpoint, bucket)


def test_config_credentials_win_over_the_environment(
        s3_endpoint: str, bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "env-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    manager = S3Storage(bucket, endpoint_url=s3_endpoint, access_key="cfg-key",
                        secret_key="cfg-secret")
    assert manager.client._request_signer._credentials.access_key == "cfg-key"


def test_errors_name_the_operation_and_never_the_secret(s3_endpoint: str) -> None:
    manager = S3Storage("no-such-bucket", endpoint_url=s3_endpoint, access_key="k",
                        secret_key="very-secret-value")
    with pytest.raises(StorageError) as caught:
        manager.list_files("abc")
    assert "NoSuchBucket" in str(caught.value) and "s3://no-such-bucket/abc" in str(caught.value)
    assert "very-secret-value" not in str(caught.value) + repr(manager)


def test_an_unreachable_endpoint_is_a_storage_error(tmp_path: pathlib.Path) -> None:
    manager = S3Storage("b", endpoint_url="http://127.0.0.1:9", access_key="k", secret_key="s")
    manager.client.meta.config.retries = {"max_attempts": 1}
    with pytest.raises(StorageError, match="listing checkpoint x at s3://b/x"):
        manager.list_files("x")


def test_a_storage_id_that_is_a_path_is_refused(manager: S3Storage,
                                                tmp_path: pathlib.Path) -> None:
    for bad in ("../x", "a/b", "", ".hidden", "x.partial"):
        with pytest.raises(StorageError, match="is not a checkpoint id"):
            manager.upload(tmp_path, bad)


def test_read_chunks_streams_a_file(manager: S3Storage, tmp_path: pathlib.Path) -> None:
    src = checkpoint_dir(tmp_path)
    manager.upload(src, "streamed")
    assert b"".join(manager.read_chunks("streamed", "model.pt")) == b"weights" * 100


def test_progress_is_printed_only_for_large_transfers() -> None:
    out = io.StringIO()
    small = Progress("uploading x", 10, out=out)
    small(10)
    small.finish()
    assert out.getvalue() == ""
    large = Progress("uploading y", 200 * MIB, out=out, every=0.0)
    large(50 * MIB)
    large(150 * MIB)
    large.finish()
    lines = out.getvalue().splitlines()
    assert lines[0] == "hpcdet storage: uploading y: 25% (50.0 MiB of 200.0 MiB)"
    assert lines[-1] == "hpcdet storage: uploading y: 100% (200.0 MiB of 200.0 MiB)"


@pytest.mark.parametrize(("prefix", "normal"), [(None, ""), ("", ""), ("/", ""), ("./", ""),
                                                ("/a/b/", "a/b"), ("a//b/./c", "a/b/c")])
def test_prefix_is_normalized_as_determined_does(prefix: str | None, normal: str) -> None:
    assert normalize_prefix(prefix) == normal


@pytest.mark.parametrize("prefix", ["..", "../x", "a/../b", "a/.."])
def test_a_prefix_with_dotdot_is_refused(prefix: str) -> None:
    with pytest.raises(StorageError, match="must not contain a '..' component"):
        S3Storage("b", prefix=prefix)
