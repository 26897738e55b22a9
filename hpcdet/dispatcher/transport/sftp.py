"""The SSH transport: scheduler commands over ``exec`` channels, job files over SFTP, both
on the one connection of :class:`~hpcdet.dispatcher.transport.ssh.SshConnection`.

paramiko's SFTP client is not safe to share between threads, so every file operation holds
one lock (commands do not: each has its own channel). Reads refuse what the local
transport refuses: ``lstat`` says whether the path itself is a link or not a regular file,
the opened file is checked again (``fstat``), and a path whose directories resolve
somewhere else (``realpath`` on the server) is walked to find the link, which is followed
only if root owns it.
"""

from __future__ import annotations

import contextlib
import errno
import posixpath
import secrets
import stat
import threading
from collections.abc import Callable
from typing import TypeVar

import paramiko

from hpcdet.dispatcher.commands import CommandRunner
from hpcdet.dispatcher.transport.base import Entry, Transport, TransportUnavailableError
from hpcdet.dispatcher.transport.settings import SshSettings
from hpcdet.dispatcher.transport.ssh import CONNECTION_ERRORS, SshConnection, SshExecutor
from hpcdet.jobfiles import UnsafeFileError

T = TypeVar("T")
# Seconds one SFTP request may take before the connection is taken for dead.
FILE_TIMEOUT = 60.0


class SshTransport(Transport):
    """Everything through one SSH connection to a login node."""

    name = "ssh"

    def __init__(self, settings: SshSettings, connection: SshConnection | None = None) -> None:
        self.settings = settings
        self.connection = connection if connection is not None else SshConnection(settings)
        self.runner = CommandRunner(executor=SshExecutor(self.connection))
        self.file_ops = 0
        self._lock = threading.Lock()
        self._sftp: paramiko.SFTPClient | None = None
        self._sftp_on: paramiko.Transport | None = None

    # ---- the Transport interface -----------------------------------------------------

    def make_dirs(self, path: str, mode: int) -> None:
        def op(sftp: paramiko.SFTPClient) -> None:
            missing: list[str] = []
            current = posixpath.normpath(path)
            while current not in ("", "/", ".") and not _exists(sftp, current):
                missing.append(current)  # a relative path is under the login's home
                current = posixpath.dirname(current)
            for directory in reversed(missing):
                try:
                    sftp.mkdir(directory, mode)
                except OSError:
                    if not _exists(sftp, directory):  # not made meanwhile by someone else
                        raise
            sftp.chmod(path, mode)
        self._do("create directory", path, op)

    def write_file(self, path: str, data: bytes, mode: int, *, atomic: bool = True) -> None:
        """As :meth:`Transport.write_file`; ``atomic=False`` writes ``path`` in place (a
        file in a directory nobody reads yet)."""
        def op(sftp: paramiko.SFTPClient) -> None:
            target = path
            if atomic:
                directory, name = posixpath.split(path)
                target = posixpath.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
            try:
                with sftp.open(target, "wb") as handle:
                    handle.chmod(mode)  # before any byte is written: secrets stay private
                    handle.write(data)
                if atomic:
                    sftp.posix_rename(target, path)
            except BaseException:
                if atomic:
                    with contextlib.suppress(*CONNECTION_ERRORS):  # the error that matters
                        sftp.remove(target)                         # is the one raised
                raise
        self._do("write", path, op)

    def read_file(self, path: str, offset: int = 0, limit: int | None = None) -> bytes:
        def op(sftp: paramiko.SFTPClient) -> bytes:
            _check_regular(sftp, path)
            with sftp.open(path, "rb") as handle:
                if not stat.S_ISREG(handle.stat().st_mode or 0):
                    raise UnsafeFileError(errno.EINVAL, "is not a regular file; not read", path)
                end = handle.stat().st_size or 0
                if limit is not None:
                    end = min(end, offset + limit)
                handle.seek(offset)
                if end - offset > 65536:
                    handle.prefetch(end)  # pipelined reads up to ``end``
                return bytes(handle.read(max(end - offset, 0)))
        return self._do("read", path, op)

    def file_size(self, path: str) -> int | None:
        def op(sftp: paramiko.SFTPClient) -> int | None:
            try:
                return _check_regular(sftp, path).st_size or 0
            except FileNotFoundError:
                return None
        return self._do("stat", path, op)

    def is_dir(self, path: str) -> bool:
        def op(sftp: paramiko.SFTPClient) -> bool:
            return _real_dir(sftp, path)
        return self._do("stat", path, op)

    def exists(self, path: str) -> bool:
        return self._do("stat", path, lambda sftp: _exists(sftp, path))

    def list_dir(self, path: str) -> list[Entry]:
        def op(sftp: paramiko.SFTPClient) -> list[Entry]:
            if not _real_dir(sftp, path):
                return []
            return [_entry(item) for item in sftp.listdir_attr(path)]
        return self._do("list", path, op)

    def rename(self, source: str, target: str) -> None:
        self._do("rename", source, lambda sftp: sftp.rename(source, target))

    def remove_tree(self, path: str) -> None:
        self._do("remove", path, lambda sftp: _remove(sftp, path))

    def close(self) -> None:
        with self._lock:
            self._close_sftp()
        self.connection.close()

    # ---- one SFTP client on the live connection ------------------------------------------

    def _do(self, what: str, path: str, op: Callable[[paramiko.SFTPClient], T]) -> T:
        """Run ``op`` under the lock; a failed connection becomes TransportUnavailableError,
        a refused or missing file stays an OSError."""
        self.file_ops += 1
        with self._lock:
            sftp = self._client()
            try:
                return op(sftp)
            except (paramiko.SSHException, EOFError, TimeoutError) as exc:
                raise self._lost(what, path, exc) from None
            except OSError as exc:
                if self._sftp_on is None or not self._sftp_on.is_active():
                    raise self._lost(what, path, exc) from None
                raise

    def _client(self) -> paramiko.SFTPClient:
        for attempt in (1, 2):
            transport = self.connection.transport()
            if self._sftp is not None and self._sftp_on is transport:
                return self._sftp
            self._close_sftp()
            try:
                sftp = paramiko.SFTPClient.from_transport(transport)
            except CONNECTION_ERRORS as exc:
                self.connection.broken(transport)
                if attempt == 2:
                    raise TransportUnavailableError((), (
                        f"cannot start SFTP on {self.settings.where}: "
                        f"{exc or type(exc).__name__}")) from None
                continue
            if sftp is None:
                raise TransportUnavailableError((), f"{self.settings.where} refused SFTP")
            channel = sftp.get_channel()
            if channel is not None:
                channel.settimeout(FILE_TIMEOUT)
            self._sftp, self._sftp_on = sftp, transport
            return sftp
        raise AssertionError("unreachable")

    def _lost(self, what: str, path: str, exc: BaseException) -> TransportUnavailableError:
        self.connection.broken(self._sftp_on)
        self._close_sftp()
        return TransportUnavailableError((), (
            f"lost the connection to {self.settings.where} during SFTP {what} {path}: "
            f"{exc or type(exc).__name__}"))

    def _close_sftp(self) -> None:
        if self._sftp is not None:
            try:
                self._sftp.close()
            except CONNECTION_ERRORS:
                pass
        self._sftp, self._sftp_on = None, None


def _lstat(sftp: paramiko.SFTPClient, path: str) -> paramiko.SFTPAttributes | None:
    try:
        return sftp.lstat(path)
    except FileNotFoundError:
        return None


def _exists(sftp: paramiko.SFTPClient, path: str) -> bool:
    return _lstat(sftp, path) is not None


def _entry(item: paramiko.SFTPAttributes) -> Entry:
    mode = item.st_mode or 0
    return Entry(item.filename, stat.S_ISDIR(mode), stat.S_ISLNK(mode), float(item.st_mtime or 0))


def _check_regular(sftp: paramiko.SFTPClient, path: str) -> paramiko.SFTPAttributes:
    """``path``'s attributes if it is a regular file reached through no link a user made;
    raises :class:`UnsafeFileError` otherwise, FileNotFoundError when nothing is there."""
    info = sftp.lstat(path)
    mode = info.st_mode or 0
    if stat.S_ISLNK(mode):
        raise UnsafeFileError(errno.ELOOP, "is a symbolic link; hpcdet does not follow links "
                              "in job directories", path)
    if not stat.S_ISREG(mode):
        raise UnsafeFileError(errno.EINVAL, "is not a regular file; not read", path)
    _check_parents(sftp, path)
    return info


def _real_dir(sftp: paramiko.SFTPClient, path: str) -> bool:
    """A directory, not a link, reached through no link a user made (else False)."""
    info = _lstat(sftp, path)
    if info is None or not stat.S_ISDIR(info.st_mode or 0):
        return False
    try:
        _check_parents(sftp, path)
    except (UnsafeFileError, FileNotFoundError):
        return False
    return True


def _check_parents(sftp: paramiko.SFTPClient, path: str) -> None:
    """One ``realpath`` of the parent; the walk below only when it resolved elsewhere."""
    parent = posixpath.dirname(posixpath.normpath(path))
    if parent and sftp.normalize(parent) != parent:
        _check_links(sftp, path, parent)


def _check_links(sftp: paramiko.SFTPClient, path: str, parent: str) -> None:
    """Walk ``parent``: a link there must be root's (a site's ``/scratch`` link)."""
    current = "/"
    for part in parent.strip("/").split("/"):
        current = posixpath.join(current, part)
        info = sftp.lstat(current)
        if stat.S_ISLNK(info.st_mode or 0) and info.st_uid != 0:
            raise UnsafeFileError(errno.ELOOP, f"has a symbolic link in its path ({current}) "
                                  "that root does not own; hpcdet does not follow it", path)


def _remove(sftp: paramiko.SFTPClient, path: str) -> None:
    info = _lstat(sftp, path)
    if info is None:
        return
    if not stat.S_ISDIR(info.st_mode or 0):  # a file, or a link: removed, never followed
        sftp.remove(path)
        return
    for item in sftp.listdir_attr(path):
        _remove(sftp, posixpath.join(path, item.filename))
    sftp.rmdir(path)
