"""The default transport: scheduler commands are child processes of the master, and job
directories are on a filesystem this host mounts (shared with the compute nodes)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path

from hpcdet.dispatcher.commands import CommandRunner
from hpcdet.dispatcher.transport.base import Entry, Transport
from hpcdet.jobfiles import is_real_dir, open_regular, write_atomically


class LocalTransport(Transport):
    """Today's behaviour: :mod:`subprocess` for commands, :mod:`os` for files."""

    name = "local"

    def __init__(self, runner: CommandRunner | None = None) -> None:
        self.runner = runner if runner is not None else CommandRunner()
        self.file_ops = 0

    def make_dirs(self, path: str, mode: int) -> None:
        self.file_ops += 1
        os.makedirs(path, mode=mode, exist_ok=True)
        os.chmod(path, mode)

    def write_file(self, path: str, data: bytes, mode: int, *, atomic: bool = True) -> None:
        self.file_ops += 1
        if atomic:
            write_atomically(Path(path), data, mode=mode, durable=False)
            return
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)

    def read_file(self, path: str, offset: int = 0, limit: int | None = None) -> bytes:
        self.file_ops += 1
        with open_regular(path) as handle:  # never a link the job put there
            handle.seek(offset)
            return handle.read() if limit is None else handle.read(limit)

    def file_size(self, path: str) -> int | None:
        self.file_ops += 1
        try:
            with open_regular(path) as handle:
                return os.fstat(handle.fileno()).st_size
        except FileNotFoundError:
            return None

    def is_dir(self, path: str) -> bool:
        self.file_ops += 1
        return is_real_dir(path)  # reached through no link a user or a job made

    def exists(self, path: str) -> bool:
        self.file_ops += 1
        return os.path.lexists(path)

    def list_dir(self, path: str) -> list[Entry]:
        self.file_ops += 1
        if not self.is_dir(path):
            return []
        entries = []
        with os.scandir(path) as found:
            for item in found:
                with contextlib.suppress(FileNotFoundError):
                    info = item.stat(follow_symlinks=False)
                    entries.append(Entry(item.name, stat.S_ISDIR(info.st_mode),
                                         stat.S_ISLNK(info.st_mode), info.st_mtime))
        return entries

    def rename(self, source: str, target: str) -> None:
        self.file_ops += 1
        os.rename(source, target)

    def remove_tree(self, path: str) -> None:
        self.file_ops += 1
        if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
            os.unlink(path)
        else:
            shutil.rmtree(path, ignore_errors=True)  # does not follow links inside


#: The local transport of code that is handed none (its own command runner and counter).
LOCAL = LocalTransport()
