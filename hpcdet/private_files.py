"""Files that hold a secret (a Slurm JWT, a /metrics scrape token): the process's own, and
readable by nobody else."""

from __future__ import annotations

import os
import stat

from hpcdet.errors import HpcdetError


class UnsafeFileError(HpcdetError):
    """A secret's file that cannot be read, or that others could read or replace."""


def check_private_file(path: str, what: str) -> os.stat_result:
    """``lstat`` of ``path`` if it is a regular file of this process's user with no group or
    other permissions; else :class:`UnsafeFileError` saying what is wrong with ``what`` (e.g.
    "token file")."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise UnsafeFileError(f"cannot read the {what} {path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        problem = "is not a regular file"
    elif info.st_uid != os.geteuid():
        problem = f"is owned by uid {info.st_uid}, not by the master's user ({os.geteuid()})"
    elif info.st_mode & 0o077:
        problem = f"can be read by others (mode {stat.S_IMODE(info.st_mode):04o}); chmod 600 it"
    else:
        return info
    raise UnsafeFileError(f"refusing the {what} {path}: it {problem}")
