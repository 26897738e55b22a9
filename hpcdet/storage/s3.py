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

import pathlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from hpcdet.storage.base import Progress, StorageError
from hpcdet.storage.object_store import READ_CHUNK, ObjectStore, normalize_prefix

__all__ = ["MULTIPART_CHUNKSIZE", "MULTIPART_THRESHOLD", "S3Storage", "normalize_prefix"]

MULTIPART_THRESHOLD = 64 * 1024 * 1024
MULTIPART_CHUNKSIZE = 64 * 1024 * 1024
_DELETE_BATCH = 1000  # the most keys one DeleteObjects call takes


class S3Storage(ObjectStore):
    """Checkpoints under ``s3://<bucket>/<prefix>/``."""

    scheme = "s3"

    def __init__(self, bucket: str, *, prefix: str | None = None,
                 endpoint_url: str | None = None, access_key: str | None = None,
                 secret_key: str | None = None,
                 multipart_threshold: int = MULTIPART_THRESHOLD,
                 multipart_chunksize: int = MULTIPART_CHUNKSIZE) -> None:
        if not bucket:
            raise StorageError("checkpoint_storage.bucket: an s3 storage needs a bucket")
        super().__init__(bucket, prefix)
        self.bucket = bucket
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

    def _put_empty(self, key: str) -> None:
        self.client.put_object(Bucket=self.bucket, Key=key, Body=b"")

    def _put_file(self, key: str, path: pathlib.Path, progress: Progress) -> None:
        # Over the threshold boto3 uploads in parts, several at a time.
        self.client.upload_file(str(path), self.bucket, key, Config=self._transfer_config(),
                                Callback=progress)

    def _get_file(self, key: str, target: pathlib.Path, progress: Progress) -> None:
        self.client.download_file(self.bucket, key, str(target),
                                  Config=self._transfer_config(), Callback=progress)

    def _list(self, prefix: str) -> Iterable[tuple[str, int]]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix)
        for page in pages:
            for item in page.get("Contents") or []:
                yield str(item["Key"]), int(item["Size"])

    def _read(self, key: str) -> Iterator[bytes]:
        body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
        try:
            yield from body.iter_chunks(READ_CHUNK)
        finally:
            body.close()

    def _delete_keys(self, keys: list[str], storage_id: str) -> None:
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

    def _secrets(self) -> Iterable[str]:
        return (self._secret_key or "",)

    def _describe_error(self, exc: BaseException) -> str | None:
        try:
            from boto3.exceptions import Boto3Error
            from botocore.exceptions import BotoCoreError, ClientError
        except ImportError:  # pragma: no cover - the client could not have been made
            return None
        if isinstance(exc, ClientError):
            error = exc.response.get("Error") or {}
            return f"{error.get('Code', 'error')}: {error.get('Message') or exc}"
        if isinstance(exc, BotoCoreError | Boto3Error | OSError):
            return str(exc)
        return None
