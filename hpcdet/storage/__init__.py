"""Checkpoint storage managers: one interface for every place checkpoints live.

- ``shared_fs`` / ``directory``: a directory the trials and the master see
  (:class:`~hpcdet.storage.shared_fs.SharedFSStorage`);
- ``s3``: any S3-compatible object store (:class:`~hpcdet.storage.s3.S3Storage`);
- ``gcs``: Google Cloud Storage (:class:`~hpcdet.storage.gcs.GCSStorage`);
- ``azure``: Azure Blob Storage (:class:`~hpcdet.storage.azure.AzureStorage`).

The object stores share :class:`~hpcdet.storage.object_store.ObjectStore`. Each needs its
client library; without it, submission refuses the storage (:func:`unavailable_reason`).

The harness (:mod:`hpcdet.core._checkpoint`), the master's checkpoint GC and the checkpoint
download route get their manager from :func:`manager_for`. Nothing here imports a cloud
client library until a manager first talks to its storage.
"""

from __future__ import annotations

import copy
import importlib.util
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

from hpcdet.errors import ConfigError
from hpcdet.storage.azure import AzureStorage
from hpcdet.storage.base import (
    CheckpointMissingError,
    StorageError,
    StorageManager,
    check_storage_id,
    safe_relative,
)
from hpcdet.storage.gcs import GCSStorage
from hpcdet.storage.object_store import MASK, ObjectStore
from hpcdet.storage.s3 import S3Storage
from hpcdet.storage.shared_fs import SharedFSStorage

__all__ = [
    "DIRECTORY_TYPES", "MASK", "OBJECT_STORE_TYPES", "AzureStorage", "CheckpointMissingError",
    "GCSStorage", "ObjectStore", "S3Storage",
    "SharedFSStorage", "StorageError", "StorageManager", "check_available",
    "check_storage_id", "manager_for", "masked_config", "object_store_for", "safe_relative",
    "unavailable_reason",
]

DIRECTORY_TYPES = ("shared_fs", "directory")
OBJECT_STORE_TYPES = ("s3", "gcs", "azure")
# type -> (module to import, package to install).
CLIENT_LIBRARIES = {"s3": ("boto3", "boto3"),
                    "gcs": ("google.cloud.storage", "google-cloud-storage"),
                    "azure": ("azure.storage.blob", "azure-storage-blob")}
_OBJECT_STORES: dict[str, type[S3Storage] | type[GCSStorage] | type[AzureStorage]] = {
    "s3": S3Storage, "gcs": GCSStorage, "azure": AzureStorage}
SECRET_FIELDS = ("secret_key", "connection_string", "credential")


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing or broken
        return False


def unavailable_reason(storage_type: str) -> str | None:
    """Why this master cannot use ``storage_type`` (None when it can).

    An object store needs its client library importable here (the master deletes and
    serves the objects).
    """
    if storage_type not in CLIENT_LIBRARIES:
        return None
    module, package = CLIENT_LIBRARIES[storage_type]
    if not _importable(module):
        return (f"checkpoint storage type {storage_type} is not available on this master "
                f"(its client library {package} is not installed; install it into the "
                "master's and the jobs' Python environment, or use shared_fs"
                + (")" if storage_type == "s3" else " or s3)"))
    return None


def check_available(config: Mapping[str, Any]) -> None:
    """Refuse (:class:`~hpcdet.errors.ConfigError`) an experiment config whose checkpoint
    storage this master cannot use; what submission calls before anything is stored."""
    kind = (config.get("checkpoint_storage") or {}).get("type")
    reason = unavailable_reason(str(kind)) if isinstance(kind, str) else None
    if reason:
        raise ConfigError([f"<config>.checkpoint_storage.type: {reason}"],
                          title="the checkpoint storage is not available on this master")


def manager_for(storage: Mapping[str, Any], *,
                directory: str | pathlib.Path | None = None) -> StorageManager:
    """The manager of a ``checkpoint_storage`` section.

    ``directory`` is the checkpoint directory of a ``shared_fs``/``directory`` storage as
    the caller resolved it (the master confines it to its storage roots first).
    """
    kind = storage.get("type")
    if kind in DIRECTORY_TYPES:
        if directory is None:
            raise StorageError(f"checkpoint storage {kind}: no directory given")
        return SharedFSStorage(pathlib.Path(directory))
    if kind in _OBJECT_STORES and unavailable_reason(str(kind)) is None:
        return _OBJECT_STORES[str(kind)].from_config(storage)
    reason = unavailable_reason(str(kind))
    raise StorageError(reason or f"checkpoint storage type {kind!r} is not supported")


def object_store_for(config: Mapping[str, Any]) -> ObjectStore | None:
    """The object-store manager of an experiment config's checkpoint storage; None for a
    directory storage (the trial writes those in place). :class:`StorageError` when this
    process cannot use the storage (its client library is missing)."""
    storage = config.get("checkpoint_storage") or {}
    if storage.get("type") in DIRECTORY_TYPES or not storage.get("type"):
        return None
    manager = manager_for(storage)
    assert isinstance(manager, ObjectStore)  # every non-directory manager is one
    return manager


def masked_config(config: Mapping[str, Any], *, also: Sequence[str] = ()) -> dict[str, Any]:
    """A copy of an experiment config (or template) with the storage's secrets masked.

    What the API and the web pages show: ``secret_key`` (s3) and ``connection_string`` /
    ``credential`` (azure) become ``********``, and so does the query (a SAS token) of an
    azure ``account_url``; so do the storage fields named in ``also`` (what only the
    config's owner is shown).
    """
    out = copy.deepcopy(dict(config))
    storage = out.get("checkpoint_storage")
    if isinstance(storage, dict):
        for field in (*SECRET_FIELDS, *also):
            if storage.get(field):
                storage[field] = MASK
        url = storage.get("account_url")
        if isinstance(url, str) and "?" in url:
            storage["account_url"] = url.split("?", 1)[0] + "?" + MASK
    return out


def masked_fields(config: Mapping[str, Any]) -> list[str]:
    """The storage secret fields of ``config`` that hold :data:`MASK`: a config copied from
    what the API showed (``det experiment fork`` builds its config that way); an azure
    ``account_url`` whose query is masked counts too."""
    storage = config.get("checkpoint_storage")
    if not isinstance(storage, Mapping):
        return []
    url = storage.get("account_url")
    return [f for f in SECRET_FIELDS if storage.get(f) == MASK] + (
        ["account_url"] if isinstance(url, str) and url.endswith("?" + MASK) else [])


def _without_query(url: Any) -> Any:
    return url.split("?", 1)[0] if isinstance(url, str) else url


def unmask_from(config: dict[str, Any], source: Mapping[str, Any]) -> list[str]:
    """Put the source config's secrets back where ``config`` holds :data:`MASK` and names
    the same store (type, bucket or container, endpoint); the fields still masked."""
    storage, original = config.get("checkpoint_storage"), source.get("checkpoint_storage")
    left = masked_fields(config)
    if not left or not isinstance(storage, dict) or not isinstance(original, Mapping):
        return left
    same_store = all(storage.get(k) == original.get(k)
                     for k in ("type", "bucket", "container", "endpoint_url")) and \
        _without_query(storage.get("account_url")) == _without_query(original.get("account_url"))
    if not same_store:
        return left
    for field in left:
        if original.get(field):
            storage[field] = original[field]
    return masked_fields(config)
