"""``store_path(shard=True)``: every rank writes its own files into one checkpoint.

The chief picks the id and creates ``<id>.partial/`` in the trial's checkpoint directory
(a filesystem every rank sees, as for any hpcdet checkpoint); after the block, the ranks
agree whether all of them succeeded, the chief merges their metadata (Determined's
rules) and finishes, uploads and registers the checkpoint as a single-writer one, and
tells the others the outcome. Every step is a collective, so a rank that fails still
takes part in them: the others get an error instead of hanging.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from hpcdet.core._checkpoint_files import check_steps, conflict_message, merge_metadata
from hpcdet.core._distributed import DistributedContext

_PARTIAL_SUFFIX = ".partial"


class CheckpointWriter(Protocol):
    """What a sharded store needs of :class:`hpcdet.core.CheckpointContext` (described here,
    so that this helper of ``_checkpoint`` does not import it back)."""

    checkpoint_dir: Path
    _dist: DistributedContext

    def _finish(self, partial: Path, storage_id: str,
                user: Mapping[str, Any]) -> dict[str, Any]: ...

    def _publish(self, storage_id: str, metadata: dict[str, Any]) -> None: ...


@contextlib.contextmanager
def store_sharded(
    context: CheckpointWriter, metadata: Mapping[str, Any] | None
) -> Iterator[tuple[Path, str]]:
    """The sharded ``store_path``; every rank must enter it at the same point."""
    dist = context._dist
    chosen = None
    if dist.is_chief:  # create it before anyone hears the id: nobody looks too early
        chosen = str(uuid.uuid4())
        (context.checkpoint_dir / (chosen + _PARTIAL_SUFFIX)).mkdir(parents=True)
    storage_id: str = dist.broadcast(chosen)
    partial = context.checkpoint_dir / (storage_id + _PARTIAL_SUFFIX)
    # It must be the same directory everywhere.
    if not all(dist.allgather(partial.is_dir())):
        _chief_cleanup(context, partial)
        raise RuntimeError(f"store_path(shard=True): {partial} is not visible on every rank; "
                           "the checkpoint directory must be on a shared filesystem")
    failure: Exception | None = None
    try:
        yield partial, storage_id
    except Exception as exc:  # take part in the collectives below, then re-raise
        failure = exc
    outcomes = dist.allgather((failure is None, dict(metadata or {})))
    error = _agree(context, partial, storage_id, outcomes)
    if failure is not None:
        raise failure
    if error is not None:
        raise RuntimeError(error)


def _agree(context: CheckpointWriter, partial: Path, storage_id: str,
           outcomes: list[tuple[bool, dict[str, Any]]]) -> str | None:
    """The chief finishes or discards the checkpoint; every rank learns the outcome (None
    when stored, else the error message)."""
    dist = context._dist
    error: str | None = None
    if dist.is_chief:
        error = _finish_on_chief(context, partial, storage_id, outcomes)
    result: str | None = dist.broadcast(error)
    return result


def _finish_on_chief(context: CheckpointWriter, partial: Path, storage_id: str,
                     outcomes: list[tuple[bool, dict[str, Any]]]) -> str | None:
    failed = [rank for rank, (ok, _) in enumerate(outcomes) if not ok]
    merged, conflicts = merge_metadata([rank_metadata for _, rank_metadata in outcomes])
    if failed:
        error: str | None = f"store_path(shard=True) failed on ranks {failed}; not stored"
    elif conflicts:
        error = conflict_message(conflicts)
    else:
        error = _store(context, partial, storage_id, merged)
    if error is not None:
        shutil.rmtree(partial, ignore_errors=True)
    return error


def _store(context: CheckpointWriter, partial: Path, storage_id: str,
           merged: dict[str, Any]) -> str | None:
    """Finish, upload and register, as a single-writer checkpoint; the error, or None."""
    try:
        check_steps(merged)
        final = context._finish(partial, storage_id, merged)
    except Exception as exc:  # the other ranks must hear of it
        return f"store_path(shard=True): {exc}"
    # A failed upload or registration leaves a complete checkpoint on disk, as store_path
    # does: the other ranks hear of it, then it is raised here.
    try:
        context._publish(storage_id, final)
    except Exception as exc:
        context._dist.broadcast(f"store_path(shard=True): {exc}")
        raise
    return None


def _chief_cleanup(context: CheckpointWriter, partial: Path) -> None:
    if context._dist.is_chief:
        shutil.rmtree(partial, ignore_errors=True)
