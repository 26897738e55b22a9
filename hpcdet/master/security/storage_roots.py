"""Checkpoint storage confined to the directories the site allows (``security.storage_roots``).

An experiment names its checkpoint directory (``checkpoint_storage.host_path`` joined with
``storage_path``, or a ``directory`` storage's ``container_path``); the master lists,
downloads and deletes checkpoints there as itself. So the directory must resolve, with
every symbolic link followed (``realpath``), to a place under one of the allowed roots
(themselves resolved), and no component of it below the root may be a checkpoint
directory (a UUID): an experiment cannot point into another's checkpoint. Checkpoint ids
are UUIDs, so ``<dir>/<uuid>`` is always one plain component inside the directory.

The roots default to the master's own directories: its state dir, its job storage root
and the ``host_path`` of the cluster's ``checkpoint_storage`` in ``master.yaml``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hpcdet.errors import ConfigError
from hpcdet.master.scheduling.jobspec import checkpoint_dir
from hpcdet.master.settings.core import MasterSettings

_UUID = re.compile(r"^[0-9a-fA-F]{8}(-?[0-9a-fA-F]{4}){3}-?[0-9a-fA-F]{12}$")


class StorageError(ValueError):
    """A checkpoint directory or id outside what the master may touch; the message says why."""


def is_uuid(text: object) -> bool:
    """True for a UUID written as 32 hex digits, with or without the four dashes."""
    return isinstance(text, str) and _UUID.match(text) is not None


def allowed_roots(settings: MasterSettings) -> list[str]:
    """The resolved roots: ``security.storage_roots``, else the master's own directories."""
    roots = list(settings.hardening.storage_roots)
    if not roots:
        roots = [settings.state_dir, settings.resource_manager.job_storage_root]
        host = (settings.checkpoint_storage or {}).get("host_path")
        if isinstance(host, str) and host:
            roots.append(host)
    return [os.path.realpath(Path(root).expanduser()) for root in roots]


def confined_dir(settings: MasterSettings, config: Mapping[str, Any]) -> Path:
    """The experiment's checkpoint directory, resolved; :class:`StorageError` if it is not
    under an allowed root or lies inside a checkpoint directory."""
    wanted = checkpoint_dir(config)
    if not os.path.isabs(wanted):
        raise StorageError(f"{wanted!r} is not an absolute path")
    resolved = os.path.realpath(wanted)
    roots = allowed_roots(settings)
    for root in roots:
        if os.path.commonpath([root, resolved]) == root:
            inside = Path(os.path.relpath(resolved, root)).parts
            if any(is_uuid(part) for part in inside):
                raise StorageError(f"{wanted} is inside a checkpoint directory")
            return Path(resolved)
    shown = f"{wanted} (resolved: {resolved})" if resolved != wanted else wanted
    raise StorageError(f"{shown} is not under an allowed storage root "
                       f"({', '.join(roots)}; security.storage_roots in master.yaml)")


def check_storage(settings: MasterSettings, config: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` naming the field when ``config``'s checkpoint directory
    is not allowed (only for storages the master reaches as a directory)."""
    storage = config.get("checkpoint_storage") or {}
    if storage.get("type") not in ("shared_fs", "directory"):
        return
    field = "container_path" if storage.get("type") == "directory" else "host_path"
    try:
        confined_dir(settings, config)
    except StorageError as exc:
        raise ConfigError([f"<config>.checkpoint_storage.{field}: {exc}"],
                          title="checkpoint storage outside the allowed roots") from exc


def checkpoint_path(settings: MasterSettings, config: Mapping[str, Any], uuid: str) -> Path:
    """``<confined dir>/<uuid>``; :class:`StorageError` for a bad id or directory."""
    if not is_uuid(uuid):
        raise StorageError(f"checkpoint id {uuid!r} is not a UUID")
    return confined_dir(settings, config) / uuid
