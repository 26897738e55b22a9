"""The master's own log file (``<state_dir>/master.log``), read by ``det master logs``.

Every master process (the HTTP workers and the reconciler) appends to it besides stderr,
with a :class:`logging.handlers.WatchedFileHandler` so an external logrotate may move it.
Readers get whole lines from a byte offset, or the last N lines, reading at most
:data:`MAX_READ` bytes per call.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
from dataclasses import dataclass
from pathlib import Path

FILE_NAME = "master.log"
FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
MAX_READ = 1024 * 1024
MAX_TAIL = 10_000


def log_path(state_dir: str) -> Path:
    return Path(state_dir).expanduser() / FILE_NAME


def install(state_dir: str, level: int = logging.INFO) -> None:
    """Also log to ``<state_dir>/master.log`` (mode 0600: it names users and paths)."""
    path = log_path(state_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.close(fd)
        handler = logging.handlers.WatchedFileHandler(path)
    except OSError as exc:
        logging.getLogger(__name__).warning("cannot write %s: %s; det master logs will "
                                            "show nothing", path, exc)
        return
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.setLevel(level)
    logging.getLogger().addHandler(handler)


@dataclass(frozen=True)
class LogChunk:
    """Whole lines read, and the offset to read from next."""

    lines: list[str]
    offset: int


def read_lines(path: Path, *, offset: int | None = None, tail: int | None = None) -> LogChunk:
    """Lines from byte ``offset`` (up to :data:`MAX_READ` bytes), or the last ``tail`` lines.

    A file shorter than ``offset`` was rotated: reading starts again at 0.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return LogChunk([], 0)
    with path.open("rb") as f:
        if offset is None:
            start = max(0, size - MAX_READ)
            f.seek(start)
            data = f.read(size - start)
            lines = _split(data, drop_first=start > 0)
            return LogChunk(lines[-tail:] if tail else lines, size)
        start = offset if offset <= size else 0
        f.seek(start)
        data = f.read(min(MAX_READ, size - start))
    end = data.rfind(b"\n") + 1  # only whole lines; the rest comes next time
    return LogChunk(_split(data[:end]), start + end)


def _split(data: bytes, *, drop_first: bool = False) -> list[str]:
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[1:] if drop_first and lines else lines


# Keys already warned about by warn_once; cleared when full (a warning may then repeat once).
_WARNED_ONCE: set[str] = set()
MAX_WARNED_ONCE = 10_000


def warn_once(logger: logging.Logger, key: str, message: str, *args: object) -> None:
    """Log ``message`` the first time ``key`` comes up in this process only: for a problem
    found again every reconciler cycle (an unsafe log file), which would otherwise add a
    line to the master's log every second, forever."""
    if key in _WARNED_ONCE:
        return
    if len(_WARNED_ONCE) >= MAX_WARNED_ONCE:
        _WARNED_ONCE.clear()
    _WARNED_ONCE.add(key)
    logger.warning(message + " (said once)", *args)
