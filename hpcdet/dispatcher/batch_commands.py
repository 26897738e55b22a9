"""The client side of ``det sbatch`` and ``det qsub``, in scheduler-neutral terms.

Each command reads its scheduler's options the way the real command reads them (the
script's directives, the environment, the command line, in that command's precedence),
where the user's environment and working directory are known, and builds the body of
``POST /tasks``. ``det`` reaches a command only through :func:`batch_command`, which finds
it in its scheduler's plug-in (:mod:`hpcdet.dispatcher.registry`) and imports it lazily:
``det``'s own modules import no scheduler.
"""

from __future__ import annotations

import abc
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpcdet.dispatcher import registry
from hpcdet.errors import ValidationError

# The behaviours a client flag asks of det (each command maps its own options onto them):
# print only the job id, print nothing, wait for the end, show what would run, leave out
# det's line about the task, print the merged options.
FLAGS = frozenset({"parsable", "silent", "wait", "test-only", "quiet", "verbose"})
# A script is read up to this size (Slurm's default max_script_size is 4 MiB).
MAX_SCRIPT_BYTES = 4 * 1024 * 1024
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# DET_* variables may hold credentials: only these are ever exported to a job.
_KEPT_DET = frozenset({"DET_MASTER", "DET_USER", "DET_MASTER_CERT_FILE"})
# Read-only in bash, which would complain when the job's environment file sets them.
_BASH_READ_ONLY = frozenset({"SHELLOPTS", "BASHOPTS", "BASH_VERSINFO", "EUID", "PPID", "UID"})


@dataclass(frozen=True)
class Prepared:
    """What the command sends to the master, and how det behaves afterwards."""

    body: dict[str, Any]
    # The merged native options, as (name, value) pairs.
    settings: list[tuple[str, str | None]]
    warnings: list[str]
    flags: frozenset[str] = frozenset()
    # What --verbose (-v) prints: the merged options as the command's own words.
    verbose_lines: list[str] = field(default_factory=list)

    def flag(self, name: str) -> bool:
        if name not in FLAGS:
            raise ValueError(f"unknown flag {name!r}")
        return name in self.flags


class BatchCommand(abc.ABC):
    """One scheduler's submit command as ``det`` offers it."""

    name: str  # sbatch, qsub
    scheduler: str  # the master's resource manager type it needs: slurm, pbs

    @abc.abstractmethod
    def local_answer(self, argv: Sequence[str]) -> str | None:
        """``help``, ``usage`` or ``version`` when ``argv`` asks only for that; else None."""

    @abc.abstractmethod
    def prepare(self, argv: Sequence[str], environ: Mapping[str, str], cwd: str,
                read_stdin: Callable[[], bytes | None]) -> Prepared:
        """Read the script and every option source, merge them, build the request body."""

    @abc.abstractmethod
    def submitted_line(self, job_id: str) -> str:
        """What the real command prints on success (without --parsable)."""


def command_names() -> dict[str, str]:
    """Each scheduler's submit command that ``det`` offers (``sbatch``, ``qsub``) -> the
    scheduler's name."""
    return {plugin.submit_command: plugin.name
            for plugin in map(registry.scheduler, registry.names())
            if "batch_command" in plugin.modules}


def batch_command(name: str) -> BatchCommand:
    """The client side of ``det NAME`` (``sbatch``, ``qsub``), imported lazily."""
    try:
        scheduler = command_names()[name]
    except KeyError:
        raise KeyError(name) from None
    command: BatchCommand = registry.scheduler(scheduler).attribute("batch_command", "COMMAND")
    return command


def read_script(operand: Sequence[str], cwd: str, read_stdin: Callable[[], bytes | None],
                *, stdin_name: str, check: Callable[[str], None]) -> tuple[str, str]:
    """The script's text and file name (``stdin_name`` when it comes from standard input);
    ``check`` is the submit command's own check of a script (ValidationError)."""
    if operand:
        path = Path(cwd, operand[0])
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_SCRIPT_BYTES + 1)
        except OSError as exc:
            raise ValidationError(f"cannot read the batch script {operand[0]}: "
                                  f"{exc.strerror}") from exc
        where = operand[0]
    else:
        stdin = read_stdin()
        if stdin is None:
            raise ValidationError("no batch script: give SCRIPT, a command, or the script "
                                  "on standard input")
        data, where = stdin, stdin_name
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{where}: the batch script is not UTF-8 text") from exc
    try:
        check(text)
    except ValidationError as exc:
        raise ValidationError(f"{where}: {exc}") from exc
    return text, os.path.basename(where)


def exportable(environ: Mapping[str, str], warnings: list[str],
               excluded_prefixes: tuple[str, ...]) -> dict[str, str]:
    """The user's variables a job may be given: valid names, not bash's read-only ones,
    none starting with ``excluded_prefixes`` (but the few DET_* ones a job needs); a value
    holding a line break is left out with a warning."""
    exported: dict[str, str] = {}
    unsafe: list[str] = []
    for name, value in environ.items():
        if not _exportable_name(name, excluded_prefixes):
            continue
        if any(char in value for char in "\n\r\x00"):
            unsafe.append(name)
        else:
            exported[name] = value
    if unsafe:
        warnings.append(f"not exported to the job (the value holds a line break): "
                        f"{', '.join(sorted(unsafe))}")
    return exported


def _exportable_name(name: str, excluded_prefixes: tuple[str, ...]) -> bool:
    if not ENV_NAME.match(name) or name in _BASH_READ_ONLY:
        return False
    return not name.startswith(excluded_prefixes) or name in _KEPT_DET
