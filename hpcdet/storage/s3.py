"""Checkpoints in an S3-compatible object store (AWS S3, MinIO, Ceph RGW, ...).

Checkpoint ``<id>`` is the objects under ``<prefix>/<id>/`` of ``bucket`` (Determined's
layout), one object per file; an empty directory is an empty object whose key ends in
``/``, as the S3 console writes one. ``endpoint_url`` points at a non-AWS service.
Credentials are ``access_key``/``secret_key`` when the config gives both, else boto3's own
chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE``, ``~/.aws/credentials``,
an instance role). They never appear in a message or a ``repr``.

boto3 is imported on first use, so code that only names this module (``det --help``, a
``shared_fs`` trial) does not need it. Files over ``multipart_threshold`` go up and down in
parts (boto3's ``TransferConfig``), several at a time; transfers over
:data:`hpcdet.storage.base.PROGRESS_MIN_BYTES` print their progress.
"""

from __future__ import annotations

import os
import pathlib
import posixpath
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from hpcdet.storage.base import (
    CheckpointMissingError,
    Progress,
    StorageError,
    StorageManager,
    check_storage_id,
    safe_relative,
)

MULTIPART_THRESHOLD = 64 * 1024 * 1024
MULTIPART_CHUNKSIZE = 64 * 1024 * 1024
_DELETE_BATCH = 1000  # the most keys one DeleteObjects call takes
_READ_CHUNK = 1024 * 1024


def normalize_prefix(prefix: str | None) -> str:
    """Determined's normalization: the normalized path without leading slashes ('' for none);
    a ``..`` component is refused (the schema refuses it too)."""
    if not prefix:
        return ""
    if ".." in prefix.split("/"):
        raise StorageError(f"checkpoint_storage.prefix: {prefix!r} must not contain a '..' "
                           "component")
    normal = posixpath.normpath(prefix).lstrip("/")
    return "" if normal == "." else normal


class S3Storage(StorageManager):
    """Checkpoints under ``s3://<bucket>/<prefix>/``."""

    remote = True

    def __init__(self, bucket: str, *, prefix: str | None = None,
                 endpoint_url: str | None = None, access_key: str | None = None,
                 secret_key: str | None = None,
                 multipart_threshold: int = MULTIPART_THRESHOLD,
                 multipart_chunksize: int = MULTIPART_CHUNKSIZE) -> None:
        if not bucket:
            raise StorageError("checkpoint_storage.bucket: an s3 storage needs a bucket")
        self.bucket = bucket
        self.prefix = normalize_prefix(prefix)
        self.endpoint_url = endpoint_url or None
        self._access_key = access_key or None
        self._secret_key = secret_key or None
        self._threshold = multipart_threshold
        self._chunksize = multipart_chunksize
        self._s3: Any = None

    @classmethod
    def from_config(cls, storage: Mapping[str, Any]) -> S3Storage:
        """The manager for an ``s3`` ``checkpoint_storage`` section."""
        return cls(str(storage.get("bucket") or ""), prefix=storage.get("prefix"),
                   endpoint_url=storage.get("endpoint_url"),
                   access_key=storage.get("access_key"), secret_key=storage.get("secret_key"))

    def __repr__(self) -> str:  # no credentials, ever
        return f"S3Storage(bucket={self.bucket!r}, prefix={self.prefix!r}, " \
               f"endpoint_url={self.endpoint_url!r})"

    def key_prefix(self, storage_id: str) -> str:
        """``<prefix>/<id>/``: every key of the checkpoint starts with it."""
        check_storage_id(storage_id)
        return f"{self.prefix}/{storage_id}/" if self.prefix else f"{storage_id}/"

    def root_location(self) -> str:
        """``s3://<bucket>/<prefix>``: where every checkpoint of the storage lives."""
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def location(self, storage_id: str) -> str:
        return f"s3://{self.bucket}/{self.key_prefix(storage_id).rstrip('/')}"

    @property
    def client(self) -> Any:
        """The boto3 S3 client, made on first use."""
        if self._s3 is None:
            try:
                import boto3
                from botocore.config import Config
            except ImportError as exc:
                raise StorageError("checkpoint storage type s3 needs the boto3 package "
                                   "(pip install 'hpcdet[s3]')") from exc
            # Both or neither: one alone would make boto3 ignore the environment's pair.
            keys = ((self._access_key, self._secret_key)
                    if self._access_key and self._secret_key else (None, None))
            self._s3 = boto3.session.Session().client(
                "s3", endpoint_url=self.endpoint_url, aws_access_key_id=keys[0],
                aws_secret_access_key=keys[1],
                # Bounded waits: the master's GC runs in its reconciler loop.
                config=Config(connect_timeout=10, read_timeout=60,
                              retries={"max_attempts": 4, "mode": "standard"}))
        return self._s3

    def _transfer_config(self) -> Any:
        from boto3.s3.transfer import TransferConfig
        return TransferConfig(multipart_threshold=self._threshold,
                              multipart_chunksize=self._chunksize)

    def upload(self, src: pathlib.Path, storage_id: str) -> None:
        base = self.key_prefix(storage_id)
        files, empty_dirs = _walk(src)
        progress = Progress(f"uploading checkpoint {storage_id} to {self.location(storage_id)}",
                            sum(size for _, size in files.values()))
        with self._errors(f"uploading checkpoint {storage_id} to {self.location(storage_id)}"):
            for rel in empty_dirs:
                self.client.put_object(Bucket=self.bucket, Key=f"{base}{rel}/", Body=b"")
            config = self._transfer_config()
            for rel, (path, _size) in sorted(files.items()):
                self.client.upload_file(str(path), self.bucket, base + rel, Config=config,
                                        Callback=progress)
        progress.finish()
        print(f"hpcdet storage: uploaded checkpoint {storage_id} to "
              f"{self.location(storage_id)} ({len(files)} file(s), {progress.total} bytes)",
              file=sys.stderr, flush=True)

    def download(self, storage_id: str, dst: pathlib.Path) -> None:
        where = self.location(storage_id)
        objects = self._objects(storage_id)
        if not objects:
            raise CheckpointMissingError(f"checkpoint {storage_id} not found at {where}")
        progress = Progress(f"downloading checkpoint {storage_id} from {where}",
                            sum(objects.values()))
        config = self._transfer_config()
        base = self.key_prefix(storage_id)
        with self._errors(f"downloading checkpoint {storage_id} from {where}"):
            for rel in sorted(objects):
                target = dst / rel.rstrip("/")
                if rel.endswith("/"):
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                self.client.download_file(self.bucket, base + rel, str(target), Config=config,
                                          Callback=progress)
        progress.finish()
        print(f"hpcdet storage: downloaded checkpoint {storage_id} from {where} "
              f"({len(objects)} object(s), {sum(objects.values())} bytes)", file=sys.stderr,
              flush=True)

    def list_files(self, storage_id: str) -> dict[str, int]:
        return {rel: size for rel, size in self._objects(storage_id).items()
                if not rel.endswith("/")}

    def read_chunks(self, storage_id: str, rel: str) -> Iterator[bytes]:
        """The bytes of one file of the checkpoint, a chunk at a time (the master's tar)."""
        key = self.key_prefix(storage_id) + rel
        with self._errors(f"reading {rel} of checkpoint {storage_id}"):
            body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
            try:
                yield from body.iter_chunks(_READ_CHUNK)
            finally:
                body.close()

    def delete(self, storage_id: str) -> None:
        keys = [key for key, _ in self._listing(storage_id)]
        with self._errors(f"deleting checkpoint {storage_id} at {self.location(storage_id)}"):
            for start in range(0, len(keys), _DELETE_BATCH):
                batch = [{"Key": key} for key in keys[start:start + _DELETE_BATCH]]
                answer = self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
                if answer.get("Errors"):
                    first = answer["Errors"][0]
                    raise StorageError(
                        f"deleting checkpoint {storage_id} at {self.location(storage_id)}: "
                        f"{len(answer['Errors'])} object(s) not deleted, e.g. "
                        f"{first.get('Key')}: {first.get('Code')} {first.get('Message')}")

    def _listing(self, storage_id: str) -> Iterator[tuple[str, int]]:
        """``(key, size)`` of every object under the checkpoint's prefix."""
        base = self.key_prefix(storage_id)
        with self._errors(f"listing checkpoint {storage_id} at {self.location(storage_id)}"):
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=base)
            for page in pages:
                for item in page.get("Contents") or []:
                    yield str(item["Key"]), int(item["Size"])

    def _objects(self, storage_id: str) -> dict[str, int]:
        """``{relative key: size}`` under the checkpoint's prefix; unsafe names are left out
        (a key such as ``<id>/../x`` must not reach a path outside the target)."""
        base = self.key_prefix(storage_id)
        found: dict[str, int] = {}
        for key, size in self._listing(storage_id):
            rel = key[len(base):]
            safe = safe_relative(rel.rstrip("/"))
            if safe is not None:
                found[safe + ("/" if rel.endswith("/") else "")] = size
        return found

    def _errors(self, doing: str) -> _S3Errors:
        return _S3Errors(doing)


class _S3Errors:
    """Turns boto3's errors into :class:`StorageError` with what was being done."""

    def __init__(self, doing: str) -> None:
        self.doing = doing

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> None:
        if exc is None or isinstance(exc, StorageError):
            return
        try:
            from boto3.exceptions import Boto3Error
            from botocore.exceptions import BotoCoreError, ClientError
        except ImportError:  # pragma: no cover - the client could not have been made
            return
        if isinstance(exc, ClientError):
            error = exc.response.get("Error") or {}
            raise StorageError(f"{self.doing}: {error.get('Code', 'error')}: "
                               f"{error.get('Message') or exc}") from exc
        if isinstance(exc, BotoCoreError | Boto3Error | OSError):
            raise StorageError(f"{self.doing}: {exc}") from exc


def _walk(src: pathlib.Path) -> tuple[dict[str, tuple[pathlib.Path, int]], list[str]]:
    """``({relative path: (file, size)}, [empty directories])`` under ``src``; a symlink to
    a file is uploaded as the file's content, a symlink to a directory is not followed."""
    files: dict[str, tuple[pathlib.Path, int]] = {}
    empty: list[str] = []
    for dirpath, dirnames, filenames in os.walk(src):
        here = pathlib.Path(dirpath)
        dirnames.sort()
        for name in sorted(filenames):
            path = here / name
            if path.is_file():
                files[path.relative_to(src).as_posix()] = (path, path.stat().st_size)
        if here != src and not dirnames and not filenames:
            empty.append(here.relative_to(src).as_posix())
    return files, empty
