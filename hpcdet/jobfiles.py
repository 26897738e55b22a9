"""Files the harness leaves in the job directory for the next run and for the master.

The job directory is on a filesystem shared by the login node and the compute nodes, so
these files outlive both the job and an unreachable master:

* ``latest_checkpoint.json``: the newest checkpoint the trial's code saved. Written by the
  chief after every checkpoint; a requeued job (same job id, same ``trial.json``) resumes
  from it rather than from the older one ``trial.json`` names.
* ``exit-reason-<jobid>.<requeue>.json``: why one execution of a job stopped early, e.g.
  ``{"reason": "preempted"}`` when the code checkpointed and exited because Slurm (or the
  master) asked it to. The master reads it to tell a preemption, which does not count
  against ``max_restarts``, from a failure, which does.

Every write goes through a temporary file and a rename, so a reader never sees half a file.
Every read (:func:`open_regular`) refuses a symbolic link and anything but a regular file:
the job owns its directory and could otherwise point the master at any file it can read.
This module imports nothing from hpcdet: the harness, the core API and the master share it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

LATEST_CHECKPOINT_FILE = "latest_checkpoint.json"
PREEMPTED = "preempted"
# Which execution of its job a process belongs to (0 first): Slurm's own variable, else
# the one hpcdet's PBS job script exports from qstat's run_count (PBS sets none).
RESTART_COUNT_VARIABLES = ("SLURM_RESTART_COUNT", "HPCDET_RESTART_COUNT")


def restart_count(environ: Mapping[str, str]) -> int:
    """How many times the scheduler has requeued this job (0 when no variable says)."""
    for name in RESTART_COUNT_VARIABLES:
        raw = environ.get(name, "").strip()
        if raw.isdigit():
            return int(raw)
    return 0


def exit_reason_path(job_dir: str | os.PathLike[str], job_id: str, requeue: int) -> Path:
    """Where execution ``requeue`` (0 first) of Slurm job ``job_id`` records why it stopped."""
    return Path(job_dir) / f"exit-reason-{job_id}.{requeue}.json"


def write_exit_reason(job_dir: str | os.PathLike[str], job_id: str, requeue: int,
                      reason: str, **details: Any) -> Path:
    """Record ``reason`` (e.g. :data:`PREEMPTED`) for one execution of a job."""
    path = exit_reason_path(job_dir, job_id, requeue)
    write_json_atomically(path, {"reason": reason, **details})
    return path


def read_exit_reason(job_dir: str | os.PathLike[str], job_id: str, requeue: int) -> str | None:
    """The reason one execution recorded, or None (it recorded none, or it is unreadable)."""
    data = read_json(exit_reason_path(job_dir, job_id, requeue))
    reason = data.get("reason") if data else None
    return reason if isinstance(reason, str) else None


def write_latest_checkpoint(job_dir: str | os.PathLike[str], uuid: str,
                            steps_completed: int) -> None:
    """Remember ``uuid`` as the trial's newest checkpoint (chief only)."""
    write_json_atomically(Path(job_dir) / LATEST_CHECKPOINT_FILE,
                          {"uuid": uuid, "steps_completed": steps_completed})


def read_latest_checkpoint(job_dir: str | os.PathLike[str]) -> str | None:
    """The uuid in ``latest_checkpoint.json``, or None when there is none (or it is unreadable)."""
    data = read_json(Path(job_dir) / LATEST_CHECKPOINT_FILE)
    uuid = data.get("uuid") if data else None
    return uuid if isinstance(uuid, str) and uuid else None


class UnsafeFileError(OSError):
    """A job-directory file that is a symbolic link, or not a regular file: not read."""


def open_regular(path: str | os.PathLike[str]) -> IO[bytes]:
    """``path`` opened for reading in binary, without following a symbolic link there.

    ``O_NOFOLLOW`` refuses a link as the last component, ``O_NONBLOCK`` keeps a FIFO from
    blocking the open, and ``fstat`` on the opened descriptor refuses anything but a
    regular file. A link in the directories above it is followed only if root owns it
    (a site's ``/scratch -> /lustre/scratch``), never one a user or a job made: user_a
    replacing her own ``trial-1`` directory by a link to user_b's must not make the
    master read user_b's files for her. The path the descriptor really opened is
    checked afterwards too, so a directory swapped for a link meanwhile is caught.
    Raises :class:`UnsafeFileError` (an :class:`OSError`) naming the path.
    """
    expected = _trusted_path(path)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(errno.ELOOP, "is a symbolic link; hpcdet does not follow "
                                  "links in job directories", str(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeFileError(errno.EINVAL, "is not a regular file; not read", str(path))
        if _opened_path(fd) not in (None, expected):
            raise UnsafeFileError(errno.ELOOP, "changed while it was opened (a directory "
                                  "became a link); not read", str(path))
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def is_real_dir(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a directory, not a link to one, and reached through no link a
    user or a job made (see :func:`open_regular`)."""
    try:
        _trusted_path(path)
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _trusted_path(path: str | os.PathLike[str]) -> str:
    """``path`` made absolute with root's links in its directories resolved; raises
    :class:`UnsafeFileError` at a link anyone else owns."""
    current = "/"
    parts = Path(os.path.abspath(path)).parts
    for part in parts[1:-1]:
        candidate = os.path.join(current, part)
        info = os.lstat(candidate)
        if stat.S_ISLNK(info.st_mode):
            if info.st_uid != 0:
                raise UnsafeFileError(errno.ELOOP, f"has a symbolic link in its path "
                                      f"({candidate}) that root does not own; hpcdet does "
                                      "not follow it", str(path))
            candidate = os.path.realpath(candidate)
        current = candidate
    return os.path.join(current, parts[-1]) if len(parts) > 1 else current


def _opened_path(fd: int) -> str | None:
    """The path the kernel opened ``fd`` at (Linux ``/proc``); None where unknown."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None if it is missing, a link or not a JSON object."""
    try:
        with open_regular(path) as handle:
            data = json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json_atomically(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` through a temporary file, flushed, then renamed."""
    write_atomically(path, json.dumps(data).encode())


def write_atomically(path: Path, data: bytes, *, mode: int | None = None,
                     durable: bool = True) -> None:
    """Write ``data`` to ``path`` via a temporary file and a rename: no reader ever sees
    half a file. ``durable`` fsyncs the file and its directory; ``mode`` sets permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
