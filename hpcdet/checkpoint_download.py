"""Download a checkpoint's files: shared by ``det checkpoint download`` and the Python SDK
(:meth:`hpcdet.experimental.Checkpoint.download`).

The files are copied straight from the checkpoint's storage path when this host can read it
(the cluster's shared filesystem); otherwise the master streams them as a tar. Either way
they land in a temporary directory beside the target that is renamed into place only once
complete, so an interrupted download never leaves half a checkpoint.

No click here (the SDK does not print): the CLI passes its progress bar as ``progress``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hpcdet.errors import HpcdetError

if TYPE_CHECKING:
    from hpcdet.client import MasterClient

_CHUNK = 1024 * 1024
# Where the files come from: the storage path if readable, else the master ("auto"); only
# the storage path ("direct"); only the master ("master"). Determined's DownloadMode.
SOURCES = ("auto", "direct", "master")


class DownloadError(HpcdetError):
    """A checkpoint that cannot be downloaded (deleted, unreadable, target in the way)."""


class Progress(Protocol):
    """A progress bar: told how many bytes came, used as a context manager."""

    def update(self, n: int) -> None: ...

    def __enter__(self) -> Progress: ...

    def __exit__(self, *exc: object) -> None: ...


ProgressFactory = Callable[[int, str], Progress]


class NoProgress:
    """Shows nothing."""

    def update(self, n: int) -> None:
        """Nothing to show."""

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def no_progress(total: int, uuid: str) -> Progress:
    """The default :data:`ProgressFactory`: no bar."""
    return NoProgress()


def download(client: MasterClient, uuid: str, target: Path, *, force: bool = False,
             source: str = "auto", progress: ProgressFactory = no_progress,
             force_hint: str = "pass force=True to replace it") -> str:
    """Put checkpoint ``uuid``'s files in directory ``target``; return how they came
    (``"copied from <path>"`` or ``"from the master"``).

    A non-empty ``target`` is refused unless ``force`` (then it is replaced, only once the
    new files are complete); ``force_hint`` says how to force in the refusal.
    """
    import shutil  # here, as tempfile and tarfile: they cost det's other commands ~10 ms
    import tempfile

    if source not in SOURCES:
        raise DownloadError(f"download mode {source!r}: must be one of {', '.join(SOURCES)}")
    check_target(target, force=force, force_hint=force_hint)
    info = client.get(f"/checkpoints/{uuid}")["checkpoint"]
    if info.get("state") == "DELETED":
        raise DownloadError(f"checkpoint {uuid} was deleted by checkpoint garbage collection")
    readable = None if source == "master" else readable_dir(info.get("storage_path"))
    if source == "direct" and readable is None:
        raise DownloadError(f"checkpoint {uuid}: its storage path "
                            f"{info.get('storage_path')!r} cannot be read from this host")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        files = staging / "files"
        if readable is not None:
            shutil.copytree(readable, files, symlinks=True)
        else:
            _fetch_tar(client, uuid, staging / "checkpoint.tar", files, progress)
        _move_into_place(files, target, force=force)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return "copied from " + str(readable) if readable is not None else "from the master"


def check_target(target: Path, *, force: bool, force_hint: str) -> None:
    """Refuse a target that is a file, or a non-empty directory without ``force``."""
    if target.exists() and not target.is_dir():
        raise DownloadError(f"{target} exists and is not a directory")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise DownloadError(f"{target} is not empty: {force_hint}")


def readable_dir(path: Any) -> Path | None:
    """``path`` if it is a directory this process can list and read, else None."""
    if not isinstance(path, str) or not path:
        return None
    candidate = Path(path)
    return candidate if candidate.is_dir() and os.access(candidate, os.R_OK | os.X_OK) else None


def _fetch_tar(client: MasterClient, uuid: str, archive: Path, files: Path,
               progress: ProgressFactory) -> None:
    """Stream the master's tar of the checkpoint to ``archive`` and unpack it into ``files``."""
    with client.stream(f"/checkpoints/{uuid}/download") as response:
        total = int(response.headers.get("Content-Length") or 0)
        with archive.open("wb") as out, progress(total, uuid) as bar:
            for chunk in response.iter_bytes(_CHUNK):
                out.write(chunk)
                bar.update(len(chunk))
    import tarfile

    files.mkdir()
    with tarfile.open(archive, mode="r:") as tar:
        tar.extractall(files, filter="data")


def _move_into_place(files: Path, target: Path, *, force: bool) -> None:
    """Rename ``files`` to ``target``; with ``force`` the old ``target`` goes only after."""
    if target.is_dir() and any(target.iterdir()):
        if not force:  # it filled up while we downloaded
            raise DownloadError(f"{target} is not empty")
        old = files.parent / "replaced"
        target.rename(old)
    elif target.is_dir():
        target.rmdir()
    files.rename(target)
