"""What a transport does: run scheduler commands and touch job directories on the cluster.

The master reaches the cluster through exactly one :class:`Transport`: the local one (the
default: commands are child processes, files are on this host's filesystem) or the SSH
one (both go through one connection to a login node). Paths are absolute POSIX paths on
the cluster's side.

Reads refuse what :func:`hpcdet.jobfiles.open_regular` refuses: a symbolic link, anything
but a regular file, and a path through a link that root does not own. A missing file is
:class:`FileNotFoundError`; a refused one :class:`~hpcdet.jobfiles.UnsafeFileError`. A
transport that cannot reach the cluster raises :class:`TransportUnavailableError` (a
:class:`SchedulerError`, never an :class:`OSError`), so that a reader that treats a
missing file as "nothing yet" does not mistake an unreachable login node for one.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass

from hpcdet.dispatcher.commands import CommandRunner
from hpcdet.errors import SchedulerError


class TransportUnavailableError(SchedulerError):
    """The cluster cannot be reached now (the login node is down, refused us, or timed out).

    Nothing ran, or it is not known whether it did: the caller changes no state and tries
    again next cycle. ``args[0]`` is one line saying what failed and where.
    """

    def __init__(self, argv: Sequence[str], message: str,
                 retry_in: float | None = None) -> None:
        super().__init__(list(argv) or ["ssh"], 255, "", message)
        self.args = (message,)
        #: Seconds until the next real try, when this is the last failure repeated at once
        #: (within the backoff: nothing was tried); None when a try just failed.
        self.retry_in = retry_in


class HostKeyError(TransportUnavailableError):
    """The login node's host key is unknown or changed: nothing is sent to it."""


@dataclass(frozen=True)
class Entry:
    """One name in a directory, as ``lstat`` saw it (links are never followed)."""

    name: str
    is_dir: bool
    is_link: bool
    mtime: float


class Transport(abc.ABC):
    """Scheduler commands (:attr:`runner`) and job-directory files on the cluster."""

    #: ``local`` or ``ssh``.
    name: str
    #: Runs every scheduler command (and counts them: :attr:`CommandRunner.count`).
    runner: CommandRunner
    #: File operations done so far (a benchmark compares it before and after a cycle).
    file_ops: int = 0

    @abc.abstractmethod
    def make_dirs(self, path: str, mode: int) -> None:
        """Create ``path`` and its missing parents; ``path`` itself gets ``mode``."""

    @abc.abstractmethod
    def write_file(self, path: str, data: bytes, mode: int, *, atomic: bool = True) -> None:
        """Write ``data`` to ``path`` with ``mode`` (set before any byte is written); through
        a temporary file and a rename unless ``atomic`` is False (a file in a directory
        that nobody reads yet). A missing parent directory is an error."""

    @abc.abstractmethod
    def read_file(self, path: str, offset: int = 0, limit: int | None = None) -> bytes:
        """Up to ``limit`` bytes of the regular file ``path`` from ``offset``."""

    @abc.abstractmethod
    def file_size(self, path: str) -> int | None:
        """The size of the regular file ``path``; None when there is nothing there."""

    @abc.abstractmethod
    def is_dir(self, path: str) -> bool:
        """True for a real directory (not a link to one); False for anything else or nothing."""

    @abc.abstractmethod
    def exists(self, path: str) -> bool:
        """True if anything (a link included) is at ``path``."""

    @abc.abstractmethod
    def list_dir(self, path: str) -> list[Entry]:
        """The entries of directory ``path`` (empty when it does not exist)."""

    @abc.abstractmethod
    def rename(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target`` (which must not exist)."""

    @abc.abstractmethod
    def remove_tree(self, path: str) -> None:
        """Remove ``path`` and everything under it, following no link; nothing there is fine."""

    def close(self) -> None:  # noqa: B027 - nothing to close by default
        """Release what the transport holds (a connection)."""
