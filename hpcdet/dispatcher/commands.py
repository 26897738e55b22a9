"""The one place hpcdet starts scheduler processes (``sbatch``, ``squeue``, ``sacct``, ...).

Backends never call :mod:`subprocess` themselves; they are handed a :class:`Runner` (by
default a :class:`CommandRunner`), which tests replace with a fake that returns recorded
output. A :class:`CommandRunner` starts each command through its *executor*: by default
:func:`run_locally` (a child process that inherits this process's environment unchanged,
so ``SLURM_CONF`` and ``PATH`` set for the master reach the Slurm commands); the SSH
transport (:mod:`hpcdet.dispatcher.transport.ssh`) hands it one that runs the command on a
login node instead. Either way the runner counts the command and raises
:class:`SchedulerError` the same way.
"""

from __future__ import annotations

import collections
import logging
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from hpcdet.errors import SchedulerError

# Exit statuses the shell uses when a command cannot be run; reused so messages read alike.
NOT_FOUND = 127
NOT_EXECUTABLE = 126
TIMED_OUT = 124

log = logging.getLogger(__name__)

# Called after every command a CommandRunner runs, with its argv, the seconds it took and
# whether it succeeded: the master installs one that counts them for /metrics (the
# dispatcher knows nothing of Prometheus or of the master).
Observer = Callable[[tuple[str, ...], float, bool], None]
_observers: list[Observer] = []


def add_observer(observer: Observer) -> None:
    """Call ``observer(argv, seconds, ok)`` after every command run; added once however
    often it is passed."""
    if observer not in _observers:
        _observers.append(observer)


def _notify(argv: tuple[str, ...], seconds: float, ok: bool) -> None:
    for observer in _observers:
        try:
            observer(argv, seconds, ok)
        except Exception:  # noqa: BLE001 - counting must never fail a scheduler command
            log.exception("a command observer failed")


class Runner(Protocol):
    """Anything that runs one scheduler command and returns its standard output."""

    def __call__(self, argv: Sequence[str], *, timeout: float = 60) -> str: ...


@dataclass(frozen=True)
class Completed:
    """How one command ended: its exit status and its captured output, as text."""

    returncode: int
    stdout: str
    stderr: str


class Executor(Protocol):
    """Starts one command and waits for it; raises :class:`SchedulerError` if it cannot."""

    def __call__(self, argv: tuple[str, ...], timeout: float,
                 stdin: bytes | None) -> Completed: ...


class CommandRunner:
    """Run scheduler commands, raising :class:`SchedulerError` on any failure.

    ``count`` is the number of commands started so far and ``calls`` the most recent argv
    (bounded, since the master runs for weeks), so a benchmark can report the commands
    issued per poll cycle by comparing ``count`` before and after. ``executor`` starts
    each command (default :func:`run_locally`).
    """

    def __init__(self, *, history: int = 1000, executor: Executor | None = None) -> None:
        self.count = 0
        self.calls: collections.deque[tuple[str, ...]] = collections.deque(maxlen=history)
        self.executor: Executor = executor if executor is not None else run_locally

    def __call__(self, argv: Sequence[str], *, timeout: float = 60,
                 stdin: bytes | None = None) -> str:
        """Run ``argv`` (no shell) and return its stdout; raise on a non-zero exit.

        ``stdin``: bytes fed to the command (the run-as helper's ``prepare`` reads a tar).
        """
        args = tuple(argv)
        self.count += 1
        self.calls.append(args)
        started, ok = time.monotonic(), False
        try:
            proc = self.executor(args, timeout, stdin)
            ok = proc.returncode == 0
        finally:
            _notify(args, time.monotonic() - started, ok)
        if not ok:
            raise SchedulerError(args, proc.returncode, proc.stdout, proc.stderr)
        return proc.stdout


def run_locally(argv: tuple[str, ...], timeout: float, stdin: bytes | None) -> Completed:
    """Run ``argv`` as a child process of this one (no shell)."""
    args = argv
    try:
        proc = _run(args, timeout, stdin)
    except OSError as exc:
        raise _start_error(args, exc) from exc
    except subprocess.TimeoutExpired as exc:
        raise SchedulerError(
            args, TIMED_OUT, _text(exc.stdout), f"timed out after {timeout:g}s"
        ) from exc
    return Completed(proc.returncode, proc.stdout, proc.stderr)


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
