"""Checkpoint routes: an experiment's checkpoints, one checkpoint, and its files as a tar."""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flask import Response, request
from sqlalchemy import select

from hpcdet.jobfiles import is_real_dir, open_regular
from hpcdet.master.api.access import experiment_for
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, int_arg, json_body, settings
from hpcdet.master.errors import Forbidden, Gone, Invalid, NotFound, UpstreamFailed
from hpcdet.master.experiments.deleting import MAX_UUIDS
from hpcdet.master.experiments.deleting import delete_checkpoints as remove
from hpcdet.master.models import Checkpoint, Experiment, Trial
from hpcdet.master.reports import serialize
from hpcdet.master.reports.checkpoint_gc import ACTIVE, DELETED, STORAGE_TYPES
from hpcdet.master.reports.searcher_metric import SearcherMetric
from hpcdet.master.security import authz
from hpcdet.master.security.storage_roots import StorageError, checkpoint_path
from hpcdet.master.settings.experiment_config import checkpoint_dir
from hpcdet.storage import ObjectStore, object_store_for
from hpcdet.storage import StorageError as ManagerError

STATES = (ACTIVE, DELETED, "ALL")
_BLOCK = 512
_CHUNK = 1024 * 1024


def storage_dir(config: dict[str, Any]) -> str | None:
    """Where an experiment's checkpoints live: a directory on the master's host, or an
    object store's URL (``s3://``, ``gs://``, ``azure://``; None for anything else)."""
    storage = config.get("checkpoint_storage") or {}
    if storage.get("type") in STORAGE_TYPES:
        return checkpoint_dir(config)
    try:
        store = object_store_for(config)
    except ManagerError:  # e.g. its client library is no longer installed here
        return None
    return store.root_location() if store is not None else None


@bp.get("/experiments/<int:exp_id>/checkpoints")
def list_checkpoints(exp_id: int) -> Any:
    """An experiment's checkpoints by trial then step; ``best=N``: the N best by the metric."""
    exp = experiment_for(exp_id)
    query = select(Checkpoint).join(Trial, Trial.id == Checkpoint.trial_id).where(
        Trial.experiment_id == exp_id)
    state = _state_arg()
    if state != "ALL":
        query = query.where(Checkpoint.state == state)
    rows = list(db().scalars(query.order_by(Checkpoint.trial_id, Checkpoint.steps_completed,
                                            Checkpoint.reported_at)))
    searcher = exp.config.get("searcher") or {}
    metric = SearcherMetric.of(exp.config)
    if request.args.get("best"):
        rows = _best(rows, metric, int_arg("best", 1, lo=1))
    where = storage_dir(exp.config)
    return {"checkpoints": [serialize.checkpoint_detail(c, exp_id, where, searcher)
                            for c in rows],
            "searcher_metric": metric.name, "smaller_is_better": metric.smaller_is_better}


def _state_arg() -> str:
    state = (request.args.get("state") or ACTIVE).upper()
    if state not in STATES:
        raise Invalid("bad_request", f"query parameter state: must be one of "
                      f"{', '.join(STATES)}, got {request.args.get('state')!r}")
    return state


def _best(rows: list[Checkpoint], metric: SearcherMetric, count: int) -> list[Checkpoint]:
    """The ``count`` best checkpoints with a validation of the searcher metric, best first."""
    scored = [(metric.key(value), c) for c in rows
              if (value := metric.value_in(c.validation_metrics)) is not None]
    scored.sort(key=lambda pair: pair[0])
    return [c for _, c in scored[:count]]


def _lookup(uuid: str,
            needed: authz.Access = authz.Access.READ) -> tuple[Checkpoint, Experiment]:
    """The checkpoint and its experiment, if the caller may ``needed`` it (404 if unseen)."""
    who, what = current_user(), f"checkpoint {uuid}"
    checkpoint = db().get(Checkpoint, uuid)
    if checkpoint is None:
        raise authz.not_found(what)
    exp = db().scalars(select(Experiment).join(Trial, Trial.experiment_id == Experiment.id)
                       .where(Trial.id == checkpoint.trial_id)).one()
    authz.require(db(), settings(), who, exp, what, needed)
    return checkpoint, exp


@bp.get("/checkpoints/<uuid>")
def describe_checkpoint(uuid: str) -> Any:
    """One checkpoint: trial, experiment, steps, metadata, validation metrics, state, path."""
    checkpoint, exp = _lookup(uuid)
    searcher = exp.config.get("searcher") or {}
    return {"checkpoint": serialize.checkpoint_detail(checkpoint, exp.id,
                                                      storage_dir(exp.config), searcher)}


@bp.get("/checkpoints/<uuid>/download")
def download_checkpoint(uuid: str) -> Any:
    """The checkpoint's directory as an uncompressed tar (paths relative to it), streamed.

    404 for an unknown checkpoint or one whose files are missing; 410 once it was deleted.
    """
    checkpoint, exp = _lookup(uuid)
    return checkpoint_tar(checkpoint, exp)


def checkpoint_tar(checkpoint: Checkpoint, exp: Experiment) -> Response:
    """The tar of :func:`download_checkpoint` for a checkpoint the caller may read (the web
    pages' download route streams the same bytes after its own authorization check)."""
    uuid = checkpoint.uuid
    if checkpoint.state == DELETED:
        raise Gone("gone", f"checkpoint {uuid} was deleted by checkpoint garbage "
                   "collection")
    storage = exp.config.get("checkpoint_storage") or {}
    if storage.get("type") not in STORAGE_TYPES:
        try:
            store = object_store_for(exp.config)
        except ManagerError as exc:
            raise UpstreamFailed("bad_gateway", f"checkpoint {uuid}: {exc}") from None
        if store is not None:
            return object_store_tar(uuid, store)
    if storage_dir(exp.config) is None:
        raise NotFound("not_found", f"checkpoint {uuid}: its files are not in a "
                       "directory the master can read")
    try:  # under an allowed storage root, and the uuid one plain component
        path = checkpoint_path(settings(), exp.config, uuid, owner=exp.owner)
    except StorageError as exc:
        raise Forbidden("forbidden", f"checkpoint {uuid}: {exc}") from None
    if not is_real_dir(path):
        raise NotFound("not_found", f"checkpoint {uuid}: its files are not at {path}")
    members = tar_members(path)
    response = Response(_stream_tar(members), mimetype="application/x-tar")
    response.headers["Content-Length"] = str(tar_size(members))
    response.headers["Content-Disposition"] = f'attachment; filename="{uuid}.tar"'
    return response


def tar_members(root: Path) -> list[tuple[tarfile.TarInfo, Path]]:
    """Every entry under ``root`` (sorted; symlinks stored as links, never followed)."""
    members = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames) + sorted(filenames):
            path = Path(dirpath) / name
            info = tarfile.TarInfo(path.relative_to(root).as_posix())
            stat = path.lstat()
            info.mtime, info.mode = int(stat.st_mtime), stat.st_mode & 0o7777
            if path.is_symlink():
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
            elif path.is_dir():
                info.type = tarfile.DIRTYPE
            else:
                info.size = stat.st_size
            members.append((info, path))
    return members


def _header(info: tarfile.TarInfo) -> bytes:
    return info.tobuf(format=tarfile.PAX_FORMAT)


def _padding(size: int) -> int:
    return -size % _BLOCK


def tar_size(members: list[tuple[tarfile.TarInfo, Path]]) -> int:
    """The exact length of the tar :func:`_stream_tar` writes (for Content-Length)."""
    body = sum(len(_header(i)) + i.size + _padding(i.size) for i, _ in members)
    return body + 2 * _BLOCK


def _stream_tar(members: list[tuple[tarfile.TarInfo, Path]]) -> Iterator[bytes]:
    # Written by hand rather than with tarfile so a large file goes out a chunk at a time.
    for info, path in members:
        yield _header(info)
        if info.isreg():
            yield from _file_chunks(path, info.size)
            yield b"\0" * _padding(info.size)
    yield b"\0" * (2 * _BLOCK)


def _file_chunks(path: Path, size: int) -> Iterator[bytes]:
    """Exactly ``size`` bytes of ``path`` (zero-filled if it shrank meanwhile)."""
    left = size
    with open_regular(path) as f:  # a file swapped for a link meanwhile is not followed
        while left > 0:
            chunk = f.read(min(_CHUNK, left))
            if not chunk:
                break
            left -= len(chunk)
            yield chunk
    if left > 0:
        yield b"\0" * left


def object_store_tar(uuid: str, manager: ObjectStore) -> Response:
    """The checkpoint's objects as a tar streamed straight from the object store (nothing is
    staged on the master's disk); 404 when the store has none, 502 when it cannot be read."""
    try:
        files = manager.list_files(uuid)
    except ManagerError as exc:
        raise UpstreamFailed("bad_gateway", f"checkpoint {uuid}: {exc}") from None
    if not files:
        raise NotFound("not_found", f"checkpoint {uuid}: its files are not at "
                       f"{manager.location(uuid)}")
    members = []
    for rel, size in sorted(files.items()):
        info = tarfile.TarInfo(rel)
        info.size, info.mode = size, 0o644
        members.append(info)
    length = sum(len(_header(i)) + i.size + _padding(i.size) for i in members) + 2 * _BLOCK
    response = Response(_stream_objects(manager, uuid, members),
                        mimetype="application/x-tar")
    response.headers["Content-Length"] = str(length)
    response.headers["Content-Disposition"] = f'attachment; filename="{uuid}.tar"'
    return response


def _stream_objects(manager: ObjectStore, uuid: str,
                    members: list[tarfile.TarInfo]) -> Iterator[bytes]:
    for info in members:
        yield _header(info)
        left = info.size
        for chunk in manager.read_chunks(uuid, info.name):
            chunk = chunk[:left]  # exactly the listed size, as Content-Length promised
            left -= len(chunk)
            yield chunk
        yield b"\0" * left
        yield b"\0" * _padding(info.size)
    yield b"\0" * (2 * _BLOCK)


@bp.delete("/checkpoints")
def delete_checkpoints() -> Any:
    """Delete checkpoints (``{"uuids": [...]}``): their files, then their rows become DELETED.

    Each needs the CHANGE access to its experiment (404 unknown or unseen, 403 read-only);
    all are checked before any is deleted.
    """
    uuids = json_body().get("uuids")
    if not isinstance(uuids, list) or not uuids or not all(isinstance(u, str) for u in uuids):
        raise Invalid("bad_request", "uuids: a non-empty list of checkpoint UUIDs")
    if len(uuids) > MAX_UUIDS:
        raise Invalid("bad_request", f"uuids: at most {MAX_UUIDS} at once")
    found = [_lookup(uuid, authz.Access.CHANGE) for uuid in dict.fromkeys(uuids)]
    result = remove(db(), settings(), found)
    db().commit()
    return {"deleted": result.checkpoints}
