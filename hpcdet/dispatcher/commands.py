"""The one place hpcdet starts scheduler processes (``sbatch``, ``squeue``, ``sacct``, ...).

Backends never call :mod:`subprocess` themselves; they are handed a :class:`Runner` (by
default a :class:`CommandRunner`), which tests replace with a fake that returns recorded
output. The child inherits this process's environment unchanged, so ``SLURM_CONF`` (and
``PATH``) set for the master reach the Slurm commands.
"""

from __future__ import annotations

import collections
import subprocess
from collections.abc import Sequence
from typing import Protocol

from hpcdet.errors import SchedulerError

# Exit statuses the shell uses when a command cannot be run; reused so messages read alike.
NOT_FOUND = 127
NOT_EXECUTABLE = 126
TIMED_OUT = 124


class Runner(Protocol):
    """Anything that runs one scheduler command and returns its standard output."""

    def __call__(self, argv: Sequence[str], *, timeout: float = 60) -> str: ...


class CommandRunner:
    """Run scheduler commands, raising :class:`SchedulerError` on any failure.

    ``count`` is the number of commands started so far and ``calls`` the most recent argv
    (bounded, since the master runs for weeks), so a benchmark can report the commands
    issued per poll cycle by comparing ``count`` before and after.
    """

    def __init__(self, *, history: int = 1000) -> None:
        self.count = 0
        self.calls: collections.deque[tuple[str, ...]] = collections.deque(maxlen=history)

    def __call__(self, argv: Sequence[str], *, timeout: float = 60,
                 stdin: bytes | None = None) -> str:
        """Run ``argv`` (no shell) and return its stdout; raise on a non-zero exit.

        ``stdin``: bytes fed to the command (the run-as helper's ``prepare`` reads a tar).
        """
        args = tuple(argv)
        self.count += 1
        self.calls.append(args)
        try:
            proc = _run(args, timeout, stdin)
        except OSError as exc:
            raise _start_error(args, exc) from exc
        except subprocess.TimeoutExpired as exc:
            raise SchedulerError(
                args, TIMED_OUT, _text(exc.stdout), f"timed out after {timeout:g}s"
            ) from exc
        if proc.returncode != 0:
            raise SchedulerError(args, proc.returncode, proc.stdout, proc.stderr)
        return proc.stdout


def _run(args: tuple[str, ...], timeout: float,
         stdin: bytes | None) -> subprocess.CompletedProcess[str]:
    if stdin is None:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                              check=False)
    raw = subprocess.run(args, capture_output=True, input=stdin, timeout=timeout, check=False)
    return subprocess.CompletedProcess(args, raw.returncode, _text(raw.stdout), _text(raw.stderr))


def _start_error(argv: tuple[str, ...], exc: OSError) -> SchedulerError:
    """Describe a command that could not be started at all."""
    if isinstance(exc, FileNotFoundError):
        message = f"{argv[0]}: command not found on PATH (is Slurm installed and SLURM_CONF set?)"
        return SchedulerError(argv, NOT_FOUND, "", message)
    return SchedulerError(argv, NOT_EXECUTABLE, "", f"{argv[0]}: cannot run: {exc}")


def _text(output: str | bytes | None) -> str:
    """Captured output of a timed-out command, which Python hands back as bytes."""
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


class UnparseableOutputError(SchedulerError):
    """A scheduler command succeeded but printed something hpcdet cannot read."""

    def __init__(self, argv: Sequence[str], stdout: str, expected: str) -> None:
        super().__init__(argv, 0, stdout, "")
        self.args = (f"could not make sense of {argv[0]} output {stdout!r} (expected {expected})",)
