"""The checkpoint context: write checkpoints atomically on shared storage, register them.

A checkpoint is a directory ``<checkpoint_dir>/<uuid>/``. It is written as
``<uuid>.partial/`` and renamed once complete, so a reader (a resumed trial, the
master's garbage collector) never sees half a checkpoint, even if the job is killed
while writing. Only complete checkpoints are registered with the master.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import pathlib
import re
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import hpcdet.core._checkpoint_sharded as _sharded
from hpcdet.core._checkpoint_files import (
    DownloadMode,
    Selector,
    check_steps,
    copy_selected,
    read_metadata,
)
from hpcdet.core._distributed import DistributedContext
from hpcdet.core._info import Info
from hpcdet.core._train import TrainContext
from hpcdet.errors import HpcdetError
from hpcdet.job.trial_info import JOB_DIR_VAR
from hpcdet.jobfiles import write_latest_checkpoint
from hpcdet.storage import CheckpointMissingError, StorageManager

METADATA_FILE = "metadata.json"
PARTIAL_SUFFIX = ".partial"
_STORAGE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

Registrar = Callable[[dict[str, Any]], None]


class CheckpointNotFoundError(HpcdetError):
    """No complete checkpoint with this id exists in the checkpoint directory."""


class CheckpointContext:
    """Saves checkpoints under the trial's ``checkpoint_dir`` and restores them.

    By default only the chief writes (save the model from the chief, as DDP replicas are
    identical); ``store_path(shard=True)`` and ``upload(shard=True)`` let every rank add
    its own files to one checkpoint.

    Example::

        if core_context.distributed.is_chief:
            with core_context.checkpoint.store_path({"steps_completed": steps}) as (path, uuid):
                torch.save(model.state_dict(), path / "model.pt")

        if core_context.info.latest_checkpoint:
            with core_context.checkpoint.restore_path(core_context.info.latest_checkpoint) as path:
                model.load_state_dict(torch.load(path / "model.pt"))
    """

    def __init__(
        self,
        checkpoint_dir: pathlib.Path,
        distributed: DistributedContext,
        *,
        info: Info,
        train: TrainContext,
        registrar: Registrar | None = None,
        storage: StorageManager | None = None,
    ) -> None:
        self.checkpoint_dir = checkpoint_dir
        # An object store (s3, gcs, azure): checkpoints are written in checkpoint_dir,
        # uploaded, and only their metadata.json stays there (hpcdet.storage,
        # docs/checkpoints.md).
        self._storage = storage if storage is not None and storage.remote else None
        self._dist = distributed
        self._info = info
        self._train = train
        # Tells the master of a new checkpoint; None: registered nowhere (outside a job).
        self._register = registrar

    def store_path(
        self, metadata: Mapping[str, Any] | None = None, *, shard: bool = False
    ) -> contextlib.AbstractContextManager[tuple[pathlib.Path, str]]:
        """Yield ``(path, uuid)`` of an empty directory to write a checkpoint into.

        On a clean exit the directory gets ``metadata.json``, is flushed to disk, renamed
        into place and registered with the master. If the block raises, the directory
        is deleted and nothing is registered. Put ``steps_completed`` in ``metadata``;
        without it the last reported ``steps_completed`` is used. If the master still
        refuses the registration after retries, ``hpcdet.errors.MasterError`` is raised
        and the checkpoint stays on disk.

        ``shard=False``: chief only. ``shard=True``: every rank must call it, in step; all
        get the same ``(path, uuid)`` (the checkpoint directory must be on a filesystem
        every rank sees), each writes its own files, and the ranks' ``metadata`` are
        merged with Determined's rules (dicts merge, other keys must agree).
        """
        if shard:
            return _sharded.store_sharded(self, metadata)
        return self._store_single(metadata)

    @contextlib.contextmanager
    def _store_single(
        self, metadata: Mapping[str, Any] | None
    ) -> Iterator[tuple[pathlib.Path, str]]:
        if not self._dist.is_chief:
            raise RuntimeError(
                f"checkpoint.store_path() is chief-only, called on rank {self._dist.rank}: "
                "save from rank 0 (check core_context.distributed.is_chief), "
                "or pass shard=True from every rank"
            )
        check_steps(metadata)
        storage_id = str(uuid.uuid4())
        partial = self.checkpoint_dir / (storage_id + PARTIAL_SUFFIX)
        partial.mkdir(parents=True)
        try:
            yield partial, storage_id
            final_metadata = self._finish(partial, storage_id, metadata or {})
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        self._publish(storage_id, final_metadata)

    def _publish(self, storage_id: str, metadata: dict[str, Any]) -> None:
        """Upload a finished checkpoint (object stores) and register it with the master."""
        if self._storage is not None:
            self._storage.upload(self.checkpoint_dir / storage_id, storage_id)
        self._register_checkpoint(storage_id, metadata)
        if self._storage is not None:
            _keep_only_metadata(self.checkpoint_dir / storage_id)

    @contextlib.contextmanager
    def restore_path(
        self,
        storage_id: str,
        download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload,
        *,
        selector: Selector | None = None,
    ) -> Iterator[pathlib.Path]:
        """Yield the directory of checkpoint ``storage_id`` (read it, do not modify it).

        On ``shared_fs``/``directory`` storage that is the checkpoint itself; on an object
        store a temporary download, removed afterwards. ``download_mode`` (any
        :class:`DownloadMode`) and ``selector`` are accepted for Determined's signature:
        every file is readable, and no rank waits for another.
        """
        DownloadMode(download_mode)  # refuse what Determined refuses
        del selector  # a filter of what to download: everything is readable anyway
        if not _STORAGE_ID.match(storage_id) or storage_id.endswith(PARTIAL_SUFFIX):
            raise CheckpointNotFoundError(f"{storage_id!r} is not a checkpoint id")
        if self._storage is not None:
            try:
                with self._storage.restored(storage_id, self.checkpoint_dir) as restored:
                    yield restored
            except CheckpointMissingError as exc:
                raise CheckpointNotFoundError(str(exc)) from None
            return
        path = self.checkpoint_dir / storage_id
        if not path.is_dir():
            raise CheckpointNotFoundError(f"checkpoint {storage_id} not found in {path.parent}")
        yield path

    def upload(
        self,
        ckpt_dir: str | os.PathLike[str] | None,
        metadata: Mapping[str, Any] | None = None,
        *,
        shard: bool = False,
        selector: Selector | None = None,
    ) -> str:
        """Store the files of ``ckpt_dir`` (those ``selector`` accepts, by relative path) as
        a new checkpoint; returns its storage id. The name of ``ckpt_dir`` is not kept.

        ``shard=False``: chief only. ``shard=True``: every rank calls it; a rank with
        nothing to add passes ``ckpt_dir=None``; the checkpoint holds the union.
        """
        if not shard:
            if ckpt_dir is None:
                raise RuntimeError("upload(ckpt_dir=None, shard=False) would store nothing")
            if not self._dist.is_chief:
                raise RuntimeError(f"cannot call upload(shard=False) from non-chief worker "
                                   f"(rank={self._dist.rank})")
        if selector is not None and ckpt_dir is None:
            raise RuntimeError("ckpt_dir has to be provided if selector is not None")
        with self.store_path(metadata, shard=shard) as (path, storage_id):
            if ckpt_dir is not None:
                copy_selected(pathlib.Path(ckpt_dir), path, selector)
        return storage_id

    def download(
        self,
        storage_id: str,
        ckpt_dir: str | os.PathLike[str],
        download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload,
        *,
        selector: Selector | None = None,
    ) -> None:
        """Copy checkpoint ``storage_id`` (the files ``selector`` accepts) into ``ckpt_dir``,
        created if missing."""
        with self.restore_path(storage_id, download_mode) as path:
            copy_selected(path, pathlib.Path(ckpt_dir), selector)

    def get_metadata(self, storage_id: str) -> dict[str, Any]:
        """The checkpoint's ``metadata.json``, as stored with it ({} if it has none)."""
        local = self.checkpoint_dir / storage_id
        if _STORAGE_ID.match(storage_id) and (local / METADATA_FILE).is_file():
            return read_metadata(local)  # object stores keep a local copy of it too
        with self.restore_path(storage_id, DownloadMode.NoSharedDownload) as path:
            return read_metadata(path)

    def delete(self, storage_id: str) -> None:
        """Delete checkpoint ``storage_id``'s files from the storage.

        The master keeps its record (marked deleted by its GC, or use
        ``det checkpoint delete``, which does both): a trial cannot delete records.
        """
        if not _STORAGE_ID.match(storage_id) or storage_id.endswith(PARTIAL_SUFFIX):
            raise CheckpointNotFoundError(f"{storage_id!r} is not a checkpoint id")
        if self._storage is not None:
            self._storage.delete(storage_id)
        shutil.rmtree(self.checkpoint_dir / storage_id, ignore_errors=True)

    def _finish(
        self, partial: pathlib.Path, storage_id: str, user: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Write metadata.json, flush everything to disk, rename into place."""
        metadata = self._metadata(user)
        (partial / METADATA_FILE).write_text(json.dumps(metadata, indent=2, default=str) + "\n")
        _fsync_tree(partial)
        final = self.checkpoint_dir / storage_id
        os.replace(partial, final)
        _fsync_dir(self.checkpoint_dir)
        return metadata

    def _metadata(self, user: Mapping[str, Any]) -> dict[str, Any]:
        steps = user.get("steps_completed", self._train.steps_completed or 0)
        metadata: dict[str, Any] = {"steps_completed": steps, "hparams": self._info.hparams}
        framework = _framework()
        if framework:
            metadata["framework"] = framework
        metadata.update(user)
        # The ids are the master's, not the script's to choose.
        metadata.update(trial_id=self._info.trial_id, experiment_id=self._info.experiment_id)
        latest = self._train.latest_validation
        if latest is not None and latest.steps_completed == steps:
            metadata.setdefault("validation_metrics", latest.metrics)
        return metadata

    def _register_checkpoint(self, storage_id: str, metadata: dict[str, Any]) -> None:
        if self._register is None:
            return
        # Ship queued metrics first, so the master already has this step's validation
        # when it learns of the checkpoint.
        self._train.flush()
        path = self.checkpoint_dir / storage_id
        self._register(
            {
                "uuid": storage_id,
                "steps_completed": metadata["steps_completed"],
                "metadata": metadata,
                "resources": resources_of(path),
            }
        )
        _remember_latest(storage_id, metadata["steps_completed"])


class DummyCheckpointContext(CheckpointContext):
    """Checkpoints in a local directory, registered nowhere (outside a hpcdet job): a
    :class:`CheckpointContext` made without a registrar."""


def _remember_latest(storage_id: str, steps_completed: int) -> None:
    """Note the checkpoint in the job directory, where a requeued job looks for it.

    Slurm reruns a requeued job with the ``trial.json`` it was submitted with, which names
    an older checkpoint (or none); see :mod:`hpcdet.jobfiles`.
    """
    job_dir = os.environ.get(JOB_DIR_VAR)
    if not job_dir:
        return
    try:
        write_latest_checkpoint(job_dir, storage_id, steps_completed)
    except OSError as exc:  # the checkpoint is saved and registered; only a requeue loses it
        print(f"hpcdet core: could not note checkpoint {storage_id} in {job_dir}: {exc}",
              file=sys.stderr, flush=True)


def _keep_only_metadata(path: pathlib.Path) -> None:
    """Remove an uploaded checkpoint's local files but its metadata.json (a resumed run
    reads its steps there)."""
    for entry in path.iterdir():
        if entry.name == METADATA_FILE:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def resources_of(path: pathlib.Path) -> dict[str, int]:
    """``{relative posix path: size in bytes}`` of every file under ``path``."""
    return {
        file.relative_to(path).as_posix(): file.stat().st_size
        for file in sorted(path.rglob("*"))
        if file.is_file()
    }


def _framework() -> str | None:
    try:
        return "torch-" + importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def _fsync_tree(root: pathlib.Path) -> None:
    """fsync every file and directory under ``root``: the rename must not outrun the data."""
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(pathlib.Path(dirpath))


def _fsync_dir(path: pathlib.Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
