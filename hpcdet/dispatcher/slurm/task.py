"""Render a command task (``det sbatch``) as a wrapper script and an ``sbatch`` argv.

The submitted script is stored unmodified in the task's job directory and run by a small
wrapper (``slurm_task.sh.j2``), which sbatch submits. The wrapper gives the script the
environment det sbatch sent (``--export``), runs it, and copies its output to the files
the user asked for (``--output``/``--error``, Slurm's filename patterns expanded the way
slurmstepd expands them), while Slurm itself writes the master's copy into the job
directory, where ``det task logs`` reads it.

Every option goes on the sbatch command line, not on ``#SBATCH`` lines: command-line
options win over ``SBATCH_*`` variables, so the master's own environment cannot change a
task. Rendering is pure; :meth:`Backend.submit` writes the wrapper and runs the argv.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hpcdet.dispatcher.base import Submission
from hpcdet.dispatcher.jobdir import TASK_ERROR_LOG, TASK_OUTPUT_LOG
from hpcdet.dispatcher.safety import check_safe
from hpcdet.dispatcher.slurm.sbatch_options import BY_NAME, Setting
from hpcdet.errors import ValidationError

if TYPE_CHECKING:  # det's commands import this module; they need no templates
    import jinja2

TEMPLATE_NAME = "slurm_task.sh.j2"
WRAPPER_NAME = "hpcdet-task.sh"
SCRIPT_NAME = "script"
ENVIRONMENT_NAME = "environment.sh"
OUTPUT_LOG = TASK_OUTPUT_LOG
ERROR_LOG = TASK_ERROR_LOG
DEFAULT_OUTPUT = "slurm-%j.out"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# What Slurm sets in a batch job's environment besides SLURM_*: kept when the master's own
# environment is dropped (GPU variables come from the job's GRES allocation).
KEPT_VARIABLES = ("SLURM_*", "SLURMD_*", "SBATCH_*", "ENVIRONMENT", "HOSTNAME", "TMPDIR",
                  "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES",
                  "ZE_AFFINITY_MASK")
# Slurm's default max_script_size (SchedulerParameters) is 4 MiB.
MAX_SCRIPT_BYTES = 4 * 1024 * 1024
# Tenths of a second the wrapper waits for the output copies after the script exited.
DRAIN_TRIES = 50
# slurmstepd's values for a batch step: its step id, and %a outside an array.
_BATCH_STEP = "4294967291"
_NO_ARRAY_TASK = "4294967294"
_PATTERN = re.compile(r"%(\d*)([%AaJjNnstux])")


@dataclass(frozen=True)
class TaskSpec:
    """Everything needed to render one command task; values are checked at render time."""

    task_id: int
    name: str
    job_dir: str
    workdir: str
    submit_dir: str
    comment: str
    args: tuple[str, ...] = ()
    # Options passed to sbatch as given (canonical long names, in effect order).
    options: tuple[Setting, ...] = ()
    partition: str | None = None
    account: str | None = None
    # The user's filename patterns; error None: standard error goes with the output.
    output: str = DEFAULT_OUTPUT
    error: str | None = None
    append: bool = False
    # False: --export=NONE (Slurm's own meaning); True: the wrapper sources environment.sh.
    export_environment: bool = True

    @property
    def wrapper_path(self) -> str:
        return posixpath.join(self.job_dir, WRAPPER_NAME)

    @property
    def script_path(self) -> str:
        return posixpath.join(self.job_dir, SCRIPT_NAME)

    @property
    def environment_path(self) -> str:
        return posixpath.join(self.job_dir, ENVIRONMENT_NAME)

    @property
    def separate_error(self) -> bool:
        return self.error is not None and self.error != self.output


def render_task(spec: TaskSpec, templates: jinja2.Environment, *,
                sbatch: str = "sbatch") -> Submission:
    """The wrapper script and the sbatch argv for ``spec``; no side effects."""
    _validate(spec)
    script = templates.get_template(TEMPLATE_NAME).render(**_template_context(spec))
    argv = (sbatch, "--parsable", *sbatch_options(spec), spec.wrapper_path, *spec.args)
    return Submission(script, spec.wrapper_path, argv)


def sbatch_options(spec: TaskSpec) -> list[str]:
    """hpcdet's options, then the user's: later ones win where both set one."""
    logs = spec.job_dir.replace("%", "%%")  # "%" starts a Slurm filename pattern
    own: list[tuple[str, str | None]] = [
        ("job-name", spec.name), ("comment", spec.comment), ("chdir", spec.workdir),
        ("output", posixpath.join(logs, OUTPUT_LOG)), ("open-mode", "append"),
        ("export", "ALL" if spec.export_environment else "NONE"),
    ]
    if spec.separate_error:
        own.append(("error", posixpath.join(logs, ERROR_LOG)))
    own += [(key, value) for key, value in (("partition", spec.partition),
                                            ("account", spec.account)) if value]
    return [BY_NAME[key].render(value) for key, value in [*own, *spec.options]]


def environment_file(environment: Mapping[str, str]) -> str:
    """The text of ``environment.sh``: one quoted ``export`` per variable, sorted."""
    lines = ["# The environment det sbatch sent (--export); sourced by " + WRAPPER_NAME]
    for name in sorted(environment):
        if not ENV_NAME.match(name):
            raise ValidationError(f"environment: {name!r} is not a valid variable name")
        value = check_safe(environment[name], f"environment[{name!r}]")
        lines.append(f"export {name}={shlex.quote(value)}")
    return "\n".join(lines) + "\n"


def check_script(script: str) -> None:
    """The checks sbatch makes of a batch script, in its words."""
    if len(script.encode("utf-8", "surrogateescape")) > MAX_SCRIPT_BYTES:
        raise ValidationError(f"larger than {MAX_SCRIPT_BYTES} bytes (Slurm's max_script_size)")
    if not script:
        raise ValidationError("the batch script is empty")
    if not script.startswith("#!"):
        raise ValidationError("this does not look like a batch script: the first line must "
                              "start with #! followed by the path to an interpreter")
    if "\x00" in script:
        raise ValidationError("the batch script contains a NUL character")
    if "\r\n" in script:
        raise ValidationError("the batch script contains DOS line breaks (\\r\\n) instead "
                              "of UNIX line breaks (\\n); convert it with dos2unix")


def wrap_script(command: str) -> str:
    """The script sbatch makes of ``--wrap=COMMAND``."""
    return f"#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{command}\n"


def pattern_word(pattern: str) -> str:
    """A bash word expanding Slurm's filename pattern in the batch job, as slurmstepd does.

    ``%j`` (job id), ``%x`` (job name), ``%u`` (user), ``%N`` (node), ``%A``/``%a``/``%J``/
    ``%s``/``%n``/``%t`` with their batch-step values, ``%%``, zero padding (``%4j``);
    a pattern holding a backslash is taken literally, without its backslashes; ``none`` is
    ``/dev/null``.
    """
    check_safe(pattern, "filename pattern")
    if pattern.lower() == "none":
        return "/dev/null"
    if "\\" in pattern:
        return shlex.quote(pattern.replace("\\", ""))
    parts: list[str] = []
    position = 0
    for match in _PATTERN.finditer(pattern):
        parts += [_literal(pattern[position:match.start()]), _field(*match.groups())]
        position = match.end()
    parts.append(_literal(pattern[position:]))
    return "".join(part for part in parts if part) or "''"


def _literal(text: str) -> str:
    return shlex.quote(text) if text else ""


def _field(width: str, letter: str) -> str:
    if letter == "%":
        return "%"
    constant = {"a": _NO_ARRAY_TASK, "s": _BATCH_STEP, "n": "0", "t": "0"}.get(letter)
    if constant is not None:
        return _padded(constant, width)
    variable = {"A": "SLURM_JOB_ID", "j": "SLURM_JOB_ID", "J": "SLURM_JOB_ID",
                "N": "SLURMD_NODENAME", "u": "SLURM_JOB_USER", "x": "SLURM_JOB_NAME"}[letter]
    if width and letter in "AjJ":
        word = f'"$(printf %0{int(width)}d "${{{variable}}}")"'
    else:
        word = f'"${{{variable}}}"'
    return word + (f".{_BATCH_STEP}" if letter == "J" else "")


def _padded(number: str, width: str) -> str:
    return number.zfill(int(width)) if width else number


def _validate(spec: TaskSpec) -> None:
    values = [("name", spec.name), ("job_dir", spec.job_dir), ("workdir", spec.workdir),
              ("submit_dir", spec.submit_dir), ("comment", spec.comment),
              ("output", spec.output), ("error", spec.error or ""),
              ("partition", spec.partition or ""), ("account", spec.account or "")]
    values += [(f"args[{i}]", arg) for i, arg in enumerate(spec.args)]
    values += [(f"--{key}", value or "") for key, value in spec.options]
    for where, value in values:
        check_safe(value, where)
    unknown = [key for key, _ in spec.options if key not in BY_NAME]
    if unknown:
        raise ValidationError(f"unknown sbatch options: {', '.join(unknown)}")


def _template_context(spec: TaskSpec) -> dict[str, object]:
    return {
        "task_id": spec.task_id, "job_dir": spec.job_dir, "script_path": spec.script_path,
        "exit_file_prefix": posixpath.join(spec.job_dir, "exit-"),
        "environment_file": spec.environment_path if spec.export_environment else None,
        "kept_variables": KEPT_VARIABLES, "submit_dir": spec.submit_dir,
        "drain_tries": DRAIN_TRIES, "tee_options": "-a " if spec.append else "",
        "output_file": pattern_word(spec.output),
        "error_file": pattern_word(spec.error) if spec.separate_error and spec.error else None,
    }  # fmt: skip


def task_files(spec: TaskSpec, script: str,
               environment: Mapping[str, str] | None) -> dict[str, tuple[str, int]]:
    """``{path: (text, mode)}`` the job directory holds besides the wrapper."""
    files = {spec.script_path: (script, 0o700)}
    if spec.export_environment:
        files[spec.environment_path] = (environment_file(environment or {}), 0o600)
    return files


def describe_argv(argv: Sequence[str]) -> str:
    """The argv as one shell-quoted line (for --test-only)."""
    return " ".join(shlex.quote(word) for word in argv)
