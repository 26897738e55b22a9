"""Checkpoints in Google Cloud Storage (Determined's ``type: gcs``).

Checkpoint ``<id>`` is the objects ``<prefix>/<id>/<file>`` of ``bucket``. As in
Determined, credentials come from the environment only, Google's "Application Default
Credentials": ``GOOGLE_APPLICATION_CREDENTIALS`` naming a service-account key file, the
``gcloud`` login, or the VM's service account. ``STORAGE_EMULATOR_HOST`` points the client at
an emulator instead (what the tests do). Files over :data:`RESUMABLE_THRESHOLD` go up in
:data:`CHUNK_SIZE` chunks of a resumable upload.

google-cloud-storage is imported on first use (``pip install 'hpcdet[gcs]'``).
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from hpcdet.storage.base import Progress, StorageError
from hpcdet.storage.object_store import READ_CHUNK, ObjectStore

RETRY_SECONDS = 30.0  # the master's GC waits this long at most on an unreachable GCS
RESUMABLE_THRESHOLD = 64 * 1024 * 1024
CHUNK_SIZE = 64 * 1024 * 1024  # a multiple of 256 KiB, as GCS requires
_TIMEOUT = (10, 120)  # connect, read: the master's GC runs in its reconciler loop


class GCSStorage(ObjectStore):
    """Checkpoints under ``gs://<bucket>/<prefix>/``."""

    scheme = "gs"

    def __init__(self, bucket: str, *, prefix: str | None = None) -> None:
        if not bucket:
            raise StorageError("checkpoint_storage.bucket: a gcs storage needs a bucket")
        super().__init__(bucket, prefix)
        self.bucket_name = bucket
        self._client: Any = None

    @classmethod
    def from_config(cls, storage: Mapping[str, Any]) -> GCSStorage:
        """The manager for a ``gcs`` ``checkpoint_storage`` section."""
        return cls(str(storage.get("bucket") or ""), prefix=storage.get("prefix"))

    def __repr__(self) -> str:
        return f"GCSStorage(bucket={self.bucket_name!r}, prefix={self.prefix!r})"

    @property
    def client(self) -> Any:
        """The google-cloud-storage client, made on first use."""
        if self._client is None:
            try:
                from google.cloud import storage
            except ImportError as exc:
                raise StorageError("checkpoint storage type gcs needs the google-cloud-storage "
                                   "package (pip install 'hpcdet[gcs]')") from exc
            with self._errors(f"connecting to {self.root_location()}"):
                self._client = storage.Client()
        return self._client

    @property
    def bucket(self) -> Any:
        """The bucket handle (no request is made until it is used)."""
        return self.client.bucket(self.bucket_name)

    def _put_empty(self, key: str) -> None:
        self.bucket.blob(key).upload_from_string(b"", timeout=_TIMEOUT)

    def _put_file(self, key: str, path: pathlib.Path, progress: Progress) -> None:
        size = path.stat().st_size
        chunk = CHUNK_SIZE if size > RESUMABLE_THRESHOLD else None
        self.bucket.blob(key, chunk_size=chunk).upload_from_filename(str(path),
                                                                      timeout=_TIMEOUT)
        progress(size)

    def _get_file(self, key: str, target: pathlib.Path, progress: Progress) -> None:
        blob = self.bucket.blob(key)
        blob.download_to_filename(str(target), timeout=_TIMEOUT)
        progress(target.stat().st_size)

    def _list(self, prefix: str) -> Iterable[tuple[str, int]]:
        for blob in self.client.list_blobs(self.bucket_name, prefix=prefix, timeout=_TIMEOUT,
                                           retry=_retry()):
            yield str(blob.name), int(blob.size or 0)

    def _read(self, key: str) -> Iterator[bytes]:
        with self.bucket.blob(key).open("rb", chunk_size=READ_CHUNK) as stream:
            while chunk := stream.read(READ_CHUNK):
                yield chunk

    def _delete_keys(self, keys: list[str], storage_id: str) -> None:
        from google.api_core.exceptions import NotFound

        for key in keys:  # one request each: Determined saw batched deletes fail
            try:
                self.bucket.blob(key).delete(timeout=_TIMEOUT, retry=_retry())
            except NotFound:
                pass  # deleted meanwhile

    def _describe_error(self, exc: BaseException) -> str | None:
        try:
            from google.api_core.exceptions import GoogleAPICallError, GoogleAPIError
            from google.auth.exceptions import DefaultCredentialsError, GoogleAuthError
        except ImportError:  # pragma: no cover - the client could not have been made
            return None
        if isinstance(exc, DefaultCredentialsError):
            return ("no Google credentials found (set GOOGLE_APPLICATION_CREDENTIALS to a "
                    "service-account key file, or run where Application Default Credentials "
                    "are available)")
        if isinstance(exc, GoogleAPICallError):
            reason = f"{exc.code} {exc.reason}" if exc.reason else str(exc.code)
            return f"{reason}: {exc.message}"
        if isinstance(exc, GoogleAPIError | GoogleAuthError | OSError):
            return str(exc) or type(exc).__name__
        if type(exc).__module__.startswith(("requests", "urllib3", "google")):
            return str(exc) or type(exc).__name__
        return None


def _retry() -> Any:
    """google-cloud-storage's retry policy, given up after :data:`RETRY_SECONDS` (its own
    default waits 120 s, in the master's reconciler loop for the GC)."""
    from google.cloud.storage.retry import DEFAULT_RETRY

    return DEFAULT_RETRY.with_timeout(RETRY_SECONDS)
