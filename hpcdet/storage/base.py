"""The one interface every checkpoint storage implements, and what the managers share.

A checkpoint is a directory of files named by its storage id (a UUID). A manager copies
such a directory into its storage (:meth:`StorageManager.upload`), back out
(:meth:`StorageManager.download`), lists its files and deletes it. The harness, the master's
checkpoint GC and the download paths all go through this interface
(:func:`hpcdet.storage.manager_for` picks the manager for a ``checkpoint_storage`` config).
"""

from __future__ import annotations

import abc
import contextlib
import pathlib
import posixpath
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import TextIO

from hpcdet.errors import HpcdetError

_STORAGE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Transfers smaller than this print no progress; larger ones print a line now and then.
PROGRESS_MIN_BYTES = 64 * 1024 * 1024
PROGRESS_EVERY_SECONDS = 10.0


class StorageError(HpcdetError):
    """A storage operation failed; the message names the storage and the checkpoint."""


class CheckpointMissingError(StorageError):
    """The storage holds no file of this checkpoint."""


def check_storage_id(storage_id: str) -> str:
    """``storage_id`` if it is one plain name (never a path); :class:`StorageError` if not."""
    if not _STORAGE_ID.match(storage_id) or storage_id.endswith(".partial"):
        raise StorageError(f"{storage_id!r} is not a checkpoint id")
    return storage_id


def safe_relative(name: str) -> str | None:
    """``name`` as a relative POSIX path inside a checkpoint, or None when it would escape it
    (absolute, ``..`` components, empty)."""
    if not name or name.startswith("/") or "\\" in name or "\0" in name:
        return None
    normal = posixpath.normpath(name)
    if normal in (".", "") or normal == ".." or normal.startswith("../"):
        return None
    return normal


class StorageManager(abc.ABC):
    """Where one experiment's checkpoints live; each checkpoint is ``<location>/<id>/``."""

    #: False for a storage the trial writes in place (a shared filesystem); True for an
    #: object store, which the harness uploads to after writing locally.
    remote: bool = False

    @abc.abstractmethod
    def location(self, storage_id: str) -> str:
        """Where the checkpoint lives, for people (a path or an ``s3://`` URL)."""

    @abc.abstractmethod
    def upload(self, src: pathlib.Path, storage_id: str) -> None:
        """Copy the directory ``src`` into the storage as checkpoint ``storage_id``."""

    @abc.abstractmethod
    def download(self, storage_id: str, dst: pathlib.Path) -> None:
        """Copy checkpoint ``storage_id`` into the directory ``dst`` (created if missing);
        :class:`CheckpointMissingError` when the storage has none of its files."""

    @abc.abstractmethod
    def list_files(self, storage_id: str) -> dict[str, int]:
        """``{relative path: size}`` of the checkpoint's files (empty if it has none)."""

    @abc.abstractmethod
    def delete(self, storage_id: str) -> None:
        """Delete every file of the checkpoint; deleting a missing one is not an error."""

    @contextlib.contextmanager
    def restored(self, storage_id: str, scratch: pathlib.Path) -> Iterator[pathlib.Path]:
        """Download the checkpoint into a fresh directory under ``scratch``, yield it, and
        remove it afterwards (what ``restore_path`` gives a trial on an object store)."""
        check_storage_id(storage_id)
        scratch.mkdir(parents=True, exist_ok=True)
        target = pathlib.Path(tempfile.mkdtemp(prefix=f".restore-{storage_id}-", dir=scratch))
        try:
            self.download(storage_id, target)
            yield target
        finally:
            shutil.rmtree(target, ignore_errors=True)


class Progress:
    """Prints how far a long transfer is, at most every :data:`PROGRESS_EVERY_SECONDS`.

    A boto3 transfer calls it from several threads with the bytes just moved; transfers
    under :data:`PROGRESS_MIN_BYTES` print nothing.
    """

    def __init__(self, what: str, total: int, *, out: TextIO | None = None,
                 min_bytes: int = PROGRESS_MIN_BYTES,
                 every: float = PROGRESS_EVERY_SECONDS) -> None:
        self.what, self.total, self.done = what, total, 0
        self._out = out or sys.stderr
        self._quiet = total < min_bytes
        self._every = every
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def __call__(self, moved: int) -> None:
        with self._lock:
            self.done += moved
            now = time.monotonic()
            if self._quiet or now - self._last < self._every:
                return
            self._last = now
            self._print()

    def finish(self) -> None:
        """The closing line (only for a transfer large enough to have shown progress)."""
        if not self._quiet:
            self._print()

    def _print(self) -> None:
        percent = 100.0 * self.done / self.total if self.total else 100.0
        print(f"hpcdet storage: {self.what}: {percent:.0f}% ({_mib(self.done)} of "
              f"{_mib(self.total)})", file=self._out, flush=True)


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"
