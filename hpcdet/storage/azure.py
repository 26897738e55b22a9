"""Checkpoints in Azure Blob Storage (Determined's ``type: azure``).

Checkpoint ``<id>`` is the block blobs ``<id>/<file>`` of ``container``. Determined's azure
storage has no ``prefix``; as there, a ``container`` of the form ``name/some/path`` puts the
checkpoints under ``some/path/`` of container ``name``. The account is reached with exactly
one of ``connection_string`` or ``account_url`` (with an optional ``credential``: an account
key or a SAS token; without one, a SAS in the URL or anonymous access, as in Determined).
Like Determined, an upload first creates the container if it does not exist. Large files go
up and down in blocks, several at a time. Credentials never appear in a message or a
``repr`` (a URL's SAS signature is masked too).

azure-storage-blob is imported on first use (``pip install 'hpcdet[azure]'``).
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from hpcdet.storage.base import Progress, StorageError
from hpcdet.storage.object_store import ObjectStore

_CONCURRENCY = 4  # blocks of one large blob moved at once
_TIMEOUT = 120  # seconds for one request: the master's GC runs in its reconciler loop


class AzureStorage(ObjectStore):
    """Checkpoints under ``azure://<container>/<path>/``."""

    scheme = "azure"

    def __init__(self, container: str, *, connection_string: str | None = None,
                 account_url: str | None = None, credential: str | None = None) -> None:
        name, _, path = (container or "").strip("/").partition("/")
        if not name:
            raise StorageError("checkpoint_storage.container: an azure storage needs a "
                               "container")
        if bool(connection_string) == bool(account_url):
            raise StorageError("checkpoint_storage: exactly one of connection_string or "
                               "account_url must be set")
        if connection_string and credential:
            raise StorageError("checkpoint_storage: credential and connection_string must "
                               "not both be set")
        super().__init__(name, path)
        self.container = name
        self._connection_string = connection_string or None
        self.account_url = account_url or None
        self._credential = credential or None
        self._container_client: Any = None

    @classmethod
    def from_config(cls, storage: Mapping[str, Any]) -> AzureStorage:
        """The manager for an ``azure`` ``checkpoint_storage`` section."""
        return cls(str(storage.get("container") or ""),
                   connection_string=storage.get("connection_string"),
                   account_url=storage.get("account_url"), credential=storage.get("credential"))

    def __repr__(self) -> str:  # no credentials, ever
        url = self.redact(self.account_url.split("?")[0]) if self.account_url else None
        return f"AzureStorage(container={self.container!r}, prefix={self.prefix!r}, " \
               f"account_url={url!r})"

    @property
    def client(self) -> Any:
        """The container's client (azure-storage-blob), made on first use."""
        if self._container_client is None:
            try:
                from azure.storage.blob import BlobServiceClient
            except ImportError as exc:
                raise StorageError("checkpoint storage type azure needs the azure-storage-blob "
                                   "package (pip install 'hpcdet[azure]')") from exc
            with self._errors(f"connecting to {self.root_location()}"):
                if self._connection_string:
                    service = BlobServiceClient.from_connection_string(self._connection_string)
                else:
                    service = BlobServiceClient(str(self.account_url),
                                                credential=self._credential)
                self._container_client = service.get_container_client(self.container)
        return self._container_client

    def _prepare_upload(self) -> None:
        from azure.core.exceptions import HttpResponseError, ResourceExistsError

        try:
            self.client.create_container(timeout=_TIMEOUT)
        except ResourceExistsError:
            pass
        except HttpResponseError:
            # E.g. a SAS scoped to the container may not create one; the upload itself
            # says what is wrong if the container is really missing.
            pass

    def _put_empty(self, key: str) -> None:
        self.client.upload_blob(key, b"", overwrite=True, timeout=_TIMEOUT)

    def _put_file(self, key: str, path: pathlib.Path, progress: Progress) -> None:
        with path.open("rb") as data:
            self.client.upload_blob(key, data, overwrite=True, max_concurrency=_CONCURRENCY,
                                    progress_hook=_deltas(progress), timeout=_TIMEOUT)

    def _get_file(self, key: str, target: pathlib.Path, progress: Progress) -> None:
        with target.open("wb") as out:
            self.client.download_blob(key, max_concurrency=_CONCURRENCY,
                                      progress_hook=_deltas(progress),
                                      timeout=_TIMEOUT).readinto(out)

    def _list(self, prefix: str) -> Iterable[tuple[str, int]]:
        for blob in self.client.list_blobs(name_starts_with=prefix, timeout=_TIMEOUT):
            yield str(blob.name), int(blob.size or 0)

    def _read(self, key: str) -> Iterator[bytes]:
        yield from self.client.download_blob(key, timeout=_TIMEOUT).chunks()

    def _delete_keys(self, keys: list[str], storage_id: str) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        for key in keys:
            try:
                self.client.delete_blob(key, timeout=_TIMEOUT)
            except ResourceNotFoundError:
                pass  # deleted meanwhile

    def _secrets(self) -> Iterable[str]:
        found = [self._credential or "", self._connection_string or ""]
        for part in (self._connection_string or "").split(";"):
            field, _, value = part.partition("=")
            if field.strip().lower() in ("accountkey", "sharedaccesssignature") and value:
                found.append(value)
        if self.account_url and "?" in self.account_url:
            found.append(self.account_url.split("?", 1)[1])
        return sorted(found, key=len, reverse=True)  # the longest first: no partial masks

    def _describe_error(self, exc: BaseException) -> str | None:
        try:
            from azure.core.exceptions import AzureError, HttpResponseError
        except ImportError:  # pragma: no cover - the client could not have been made
            return None
        if isinstance(exc, HttpResponseError):
            code = getattr(exc, "error_code", None) or exc.status_code
            code = getattr(code, "value", code)  # a StorageErrorCode: its service name
            return f"{code}: {exc.reason or 'error'}"
        if isinstance(exc, AzureError | OSError):
            return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, ValueError):  # a malformed connection string or URL
            return str(exc)
        return None


def _deltas(progress: Progress) -> Callable[[int, int | None], None]:
    """An azure ``progress_hook`` (bytes so far, total) feeding :class:`Progress` deltas."""
    seen = [0]

    def hook(current: int, total: int | None) -> None:
        progress(current - seen[0])
        seen[0] = current

    return hook
