"""Checkpoints as directories on a filesystem every node and the master see.

The trial writes ``<root>/<id>/`` in place (:mod:`hpcdet.core._checkpoint`), so
:meth:`SharedFSStorage.upload` only matters for copies (tests, tools). Symlinks are never
followed: a deleted link is the link, a copied link stays a link.
"""

from __future__ import annotations

import pathlib
import shutil

from hpcdet.storage.base import (
    CheckpointMissingError,
    StorageError,
    StorageManager,
    check_storage_id,
)


class SharedFSStorage(StorageManager):
    """Checkpoints under the directory ``root`` (``shared_fs`` and ``directory`` storage)."""

    remote = False

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root

    def path(self, storage_id: str) -> pathlib.Path:
        """The checkpoint's directory (the id is checked to be one plain name)."""
        return self.root / check_storage_id(storage_id)

    def location(self, storage_id: str) -> str:
        return str(self.path(storage_id))

    def upload(self, src: pathlib.Path, storage_id: str) -> None:
        target = self.path(storage_id)
        if src.resolve() == target.resolve():
            return
        try:
            shutil.copytree(src, target, symlinks=True, dirs_exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot copy checkpoint {storage_id} to {target}: {exc}") from exc

    def download(self, storage_id: str, dst: pathlib.Path) -> None:
        source = self.path(storage_id)
        if source.is_symlink() or not source.is_dir():
            raise CheckpointMissingError(f"checkpoint {storage_id} not found at {source}")
        try:
            shutil.copytree(source, dst, symlinks=True, dirs_exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot copy checkpoint {storage_id} from {source}: "
                               f"{exc}") from exc

    def list_files(self, storage_id: str) -> dict[str, int]:
        source = self.path(storage_id)
        if source.is_symlink() or not source.is_dir():
            return {}
        return {file.relative_to(source).as_posix(): file.stat().st_size
                for file in sorted(source.rglob("*"))
                if file.is_file() and not file.is_symlink()}

    def delete(self, storage_id: str) -> None:
        path = self.path(storage_id)
        try:
            if path.is_symlink() or path.is_file():
                path.unlink()
            elif path.exists():
                shutil.rmtree(path)  # does not follow links inside the directory
        except OSError as exc:
            raise StorageError(f"cannot delete checkpoint {storage_id} at {path}: "
                               f"{exc}") from exc
