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

With ``security.jobs_run_as: owner`` a root is shared by every user, so an experiment's
directory must also lie in its owner's own part of a root, ``<root>/<owner>``
(:func:`check_owner_part`): the part must not be another user's (a link resolving into
``<job_storage_root>/user_a`` is user_a's), and nobody else may have made it or be able to
replace it. The run-as helper makes ``<job_storage_root>/<owner>`` (and its
``checkpoints``, the default storage) as the owner and refuses one someone else made; in
any other root the owner makes ``<root>/<owner>`` first.
"""

from __future__ import annotations

import os
import pwd
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hpcdet.errors import ConfigError, ValidationError
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.experiment_config import checkpoint_dir

# The owner's default checkpoint directory in their root of the job storage root (the run-as
# helper makes it, as the owner; hpcdet/runas/helper.py CHECKPOINT_DIR).
CHECKPOINTS = "checkpoints"
_UUID = re.compile(r"^[0-9a-fA-F]{8}(-?[0-9a-fA-F]{4}){3}-?[0-9a-fA-F]{12}$")


class StorageError(ValueError):
    """A checkpoint directory or id outside what the master may touch; the message says why."""


class NotOwnersError(StorageError):
    """With jobs run as their owner: a checkpoint directory that is not the owner's own."""


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


def confined_dir(settings: MasterSettings, config: Mapping[str, Any],
                 owner: str | None = None) -> Path:
    """The experiment's checkpoint directory, resolved; :class:`StorageError` if it is not
    under an allowed root or lies inside a checkpoint directory. ``owner``: the experiment's
    owner, whose own part of a root it must lie in when jobs run as their owner (None: the
    roots alone, for garbage collection and deletion)."""
    wanted = checkpoint_dir(config)
    if not os.path.isabs(wanted):
        raise StorageError(f"{wanted!r} is not an absolute path")
    resolved = os.path.realpath(wanted)
    roots = allowed_roots(settings)
    holding = [root for root in roots if _within(resolved, root)]
    if not holding:
        shown = f"{wanted} (resolved: {resolved})" if resolved != wanted else wanted
        raise StorageError(f"{shown} is not under an allowed storage root "
                           f"({', '.join(roots)}; security.storage_roots in master.yaml)")
    inside = Path(os.path.relpath(resolved, holding[0])).parts
    if any(is_uuid(part) for part in inside):
        raise StorageError(f"{wanted} is inside a checkpoint directory")
    if owner is not None and settings.runas.owner_mode:
        check_owner_part(settings, wanted, resolved, owner)
    return Path(resolved)


def _within(path: str, root: str) -> bool:
    """``path`` is ``root`` or below it (both resolved)."""
    return os.path.commonpath([root, path]) == root


def owner_parts(settings: MasterSettings, owner: str) -> list[str]:
    """``<root>/<owner>`` of every allowed root: where ``owner``'s checkpoints may lie when
    jobs run as their owner."""
    return [os.path.join(root, owner) for root in allowed_roots(settings)]


def check_owner_part(settings: MasterSettings, wanted: str, resolved: str, owner: str) -> None:
    """:class:`StorageError` unless ``resolved`` (the realpath of ``wanted``) lies in
    ``<root>/<owner>`` of an allowed root, a part only ``owner`` controls."""
    if not owner or owner in (".", "..") or "/" in owner:
        raise NotOwnersError(f"{wanted}: the experiment has no owner to keep it for")
    for root in allowed_roots(settings):
        part = os.path.join(root, owner)
        if _within(resolved, part):
            _check_private(settings, root, part, owner)
            return
    raise NotOwnersError(
        f"{wanted} is not in {owner}'s own part of a storage root "
        f"({', '.join(owner_parts(settings, owner))}): with security.jobs_run_as: owner "
        "every user's checkpoints stay in their own directory; leave checkpoint_storage out "
        f"for the default {job_root(settings) / owner / CHECKPOINTS}")


def _check_private(settings: MasterSettings, root: str, part: str, owner: str) -> None:
    """``root`` lets nobody replace ``part``, and ``part`` is a directory of ``owner``'s that
    nobody else may write to; in the job storage root the helper makes a missing ``part``."""
    try:
        _check_root(root, part)
        mine = os.lstat(part)
    except FileNotFoundError:
        if root == str(job_root(settings)):
            return  # the run-as helper makes it, as the owner, before the first job
        raise NotOwnersError(f"{part} does not exist: {owner} makes it first (mkdir -m 0700 "
                           f"{part}), so that nobody else can") from None
    except OSError as exc:
        raise NotOwnersError(f"cannot check {part}: {exc.strerror}") from None
    if not stat.S_ISDIR(mine.st_mode) or mine.st_uid != owner_uid(owner) or \
            mine.st_mode & 0o002:
        raise NotOwnersError(f"{part} is not a directory of {owner}'s that only they may "
                           "write to (someone else made it?); ask the administrator to "
                           "remove it")


def _check_root(root: str, part: str) -> None:
    """:class:`StorageError` when users other than root and the master could rename
    ``part`` away (and put their own in its place)."""
    info = os.stat(root)
    if info.st_uid not in (0, os.getuid()) or \
            (info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX):
        raise NotOwnersError(f"storage root {root} lets other users replace {part}: it must "
                           "belong to root or the master's account, and be sticky (like "
                           "/tmp) if others may write to it")


def owner_uid(owner: str) -> int:
    """The Unix uid of ``owner`` on the master's host; :class:`StorageError` if unknown."""
    try:
        return pwd.getpwnam(owner).pw_uid
    except KeyError:
        raise NotOwnersError(f"no Unix user {owner} on the master's host") from None


def job_root(settings: MasterSettings) -> Path:
    """The job storage root, resolved."""
    return Path(os.path.realpath(Path(settings.resource_manager.job_storage_root).expanduser()))


def check_storage(settings: MasterSettings, config: Mapping[str, Any], *, owner: str) -> None:
    """Raise :class:`ConfigError` naming the field when ``config``'s checkpoint directory
    is not allowed for an experiment of ``owner`` (only for storages the master reaches as
    a directory)."""
    field = _directory_field(config)
    if field is None:
        return
    try:
        confined_dir(settings, config, owner)
    except StorageError as exc:
        title = ("checkpoint storage outside the owner's own directory"
                 if isinstance(exc, NotOwnersError)
                 else "checkpoint storage outside the allowed roots")
        raise ConfigError([f"<config>.checkpoint_storage.{field}: {exc}"], title=title) from exc


def check_run_storage(settings: MasterSettings, config: Mapping[str, Any], owner: str) -> None:
    """Before a trial's job of ``owner`` is submitted as the owner: :class:`ValidationError`
    (one line) when its checkpoint directory is not the owner's own, e.g. the shared
    ``<job_storage_root>/checkpoints`` an older master stored as the default (anyone could
    have replaced what a resumed trial would load)."""
    field = _directory_field(config)
    if field is None or not settings.runas.owner_mode:
        return
    try:
        confined_dir(settings, config, owner)
    except StorageError as exc:
        raise ValidationError(f"checkpoint_storage.{field}: {exc}") from exc


def _directory_field(config: Mapping[str, Any]) -> str | None:
    """The field naming the checkpoint directory of a storage the master reaches as a
    directory; None for an object store."""
    storage = config.get("checkpoint_storage") or {}
    if storage.get("type") not in ("shared_fs", "directory"):
        return None
    return "container_path" if storage.get("type") == "directory" else "host_path"


def checkpoint_path(settings: MasterSettings, config: Mapping[str, Any], uuid: str,
                    owner: str | None = None) -> Path:
    """``<confined dir>/<uuid>``; :class:`StorageError` for a bad id or directory
    (``owner``: as for :func:`confined_dir`)."""
    if not is_uuid(uuid):
        raise StorageError(f"checkpoint id {uuid!r} is not a UUID")
    return confined_dir(settings, config, owner) / uuid
