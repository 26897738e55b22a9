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
from typing import TYPE_CHECKING, Any

from hpcdet.dispatcher import options, tasks
from hpcdet.dispatcher.base import Backend, Submission
from hpcdet.dispatcher.jobdir import TASK_ERROR_LOG, TASK_OUTPUT_LOG
from hpcdet.dispatcher.safety import check_safe
from hpcdet.dispatcher.slurm import JOB_LOG_STEM
from hpcdet.dispatcher.slurm.sbatch_args import parse_sbatch_args
from hpcdet.dispatcher.slurm.sbatch_options import (
    BY_NAME,
    BY_SHORT,
    MASTER_HANDLED,
    SBATCH,
    Setting,
    check_not_refused,
    identity_settings,
    option_named,
    refusal,
    value_of,
)
from hpcdet.dispatcher.tasks import (
    ENV_NAME,
    ENVIRONMENT_NAME,
    SCRIPT_NAME,
    WRAPPER_NAME,
    TaskFields,
    TaskResources,
    TaskSpec,
    describe_argv,
)
from hpcdet.errors import ConfigError, ValidationError

if TYPE_CHECKING:  # det's commands import this module; they need no templates
    import jinja2

__all__ = ["DIALECT", "ENVIRONMENT_NAME", "ENV_NAME", "SCRIPT_NAME", "WRAPPER_NAME",
           "TaskSpec", "check_script", "describe_argv", "environment_file", "pattern_word",
           "render_task", "task_files", "wrap_script"]

TEMPLATE_NAME = "slurm_task.sh.j2"
OUTPUT_LOG = TASK_OUTPUT_LOG
ERROR_LOG = TASK_ERROR_LOG
DEFAULT_OUTPUT = f"{JOB_LOG_STEM}.out"
OPEN_MODES = ("append", "truncate")
ENVIRONMENT_SOURCE = "det sbatch sent (--export)"
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
    return tasks.environment_file(environment, ENVIRONMENT_SOURCE)


def check_script(script: str) -> None:
    """The checks sbatch makes of a batch script, in its words, and no directive that would
    change who the job runs as (det sbatch's refusal, made again for any client)."""
    if len(script.encode("utf-8", "surrogateescape")) > MAX_SCRIPT_BYTES:
        raise ValidationError(f"larger than {MAX_SCRIPT_BYTES} bytes (Slurm's max_script_size)")
    if not script:
        raise ValidationError("the batch script is empty")
    if not script.startswith("#!"):
        raise ValidationError("this does not look like a batch script: the first line must "
                              "start with #! followed by the path to an interpreter")
    tasks.check_script_text(script)
    check_not_refused(identity_settings(script))


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
    return DIALECT.task_files(spec, script, environment)


# ---- the master's side (hpcdet.master.scheduling.task_submission) -------------------------


class SlurmTaskDialect(tasks.TaskDialect):
    """det sbatch's tasks: sbatch's options by long name, a wrapper sbatch submits."""

    scheduler = "slurm"
    client = "det sbatch"
    submit_command = "sbatch"
    pool_option = "--partition"
    default_script_name = "sbatch"
    takes_args = True
    environment_source = ENVIRONMENT_SOURCE
    command_output = (("output", "none"),)

    def option_problem(self, item: Any) -> str | None:
        """What is wrong with one ``[option, value]`` item (see :func:`_option_problem`)."""
        return _option_problem(item)

    def fields(self, options: Sequence[Setting], pool_args: Sequence[str]) -> TaskFields:
        """Pool, name, --chdir, account and files; the rest is passed to sbatch."""
        pool = value_of(options, "partition")
        if pool is not None and "," in pool:
            raise ValidationError(f"--partition={pool}: det sbatch takes one resource pool, "
                                  "not a list")
        passed = [(name, value) for name, value in options if name not in MASTER_HANDLED]
        return TaskFields(
            pool=pool, name=value_of(options, "job-name"), chdir=value_of(options, "chdir"),
            account=value_of(options, "account"),
            output=value_of(options, "output") or DEFAULT_OUTPUT,
            error=value_of(options, "error"), append=_open_mode(options) == "append",
            passed=(*_pool_settings(pool_args), *passed))

    # The submit command's own checks and wrapper are this module's functions.
    check_script = staticmethod(check_script)
    wrap_script = staticmethod(wrap_script)

    def render(self, spec: TaskSpec, templates: jinja2.Environment,
               backend: Backend) -> Submission:
        return render_task(spec, templates, sbatch=getattr(backend, "sbatch", "sbatch"))

    def resource_settings(self, resources: TaskResources,
                          backend: Backend) -> tuple[Setting, ...]:
        """``--nodes``, one task per slot, the GPUs as this cluster takes them (the
        backend's ``gpu_request``), ``--qos`` and ``--nice`` of the priority band."""
        r = resources
        settings: list[Setting] = [("nodes", str(r.nodes)),
                                   ("ntasks-per-node", str(r.ranks_per_node)),
                                   ("cpus-per-task", str(r.cpus_per_rank))]
        request = str(getattr(backend, "gpu_request", "tres"))
        settings += [(key, str(value)) for key, value in
                     gpu_options(r.nodes, r.gpus_per_node, r.gpu_type, request).items()]
        if r.qos:
            settings.append(("qos", r.qos))
        if r.nice:
            settings.append(("nice", str(r.nice)))
        return tuple(settings)

    def batch_arg_settings(self, args: Sequence[str], path: str) -> tuple[Setting, ...]:
        """``slurm.sbatch_args``, refused as an experiment's are (hpcdet sets the job's
        nodes, tasks, GPUs, name, files), then as det sbatch's options."""
        settings = _arg_settings(args, path)
        errors = [f"{path}: {problem}" for problem in
                  (_option_problem([name, value]) for name, value in settings) if problem]
        if errors:
            raise ConfigError(errors, title="invalid sbatch_args")
        return tuple(settings)


def gpu_options(nodes: int, gpus_per_node: int, gpu_type: str | None,
                gpu_request: str) -> dict[str, str]:
    """Determined's slots as Slurm GPUs: with TRES ``--gpus=[type:]N`` on one node and
    ``--gpus-per-node=[type:]n`` on several (always an exact node count: Slurm 22.05 refuses
    ``--gpus=N`` over a node range when N exceeds one node's GPUs); with GRES only
    ``--gres=gpu[:type]:n``; without either nothing (the site guarantees GPUs otherwise)."""
    if gpus_per_node == 0 or gpu_request == "none":
        return {}
    typed = f"{gpu_type}:" if gpu_type else ""
    if gpu_request == "gres":
        return {"gres": f"gpu:{typed}{gpus_per_node}"}
    if nodes == 1:
        return {"gpus": f"{typed}{gpus_per_node}"}
    return {"gpus-per-node": f"{typed}{gpus_per_node}"}


def _option_problem(item: Any) -> str | None:
    """What is wrong with one ``[name, value]`` item the master was sent, or None."""
    return options.setting_problem(SBATCH, item, lambda setting: refusal(setting[0]))


def _pool_settings(sbatch_args: Sequence[str]) -> list[Setting]:
    """A pool's ``sbatch_args`` (already checked at start) as settings."""
    return _arg_settings(sbatch_args, "pool sbatch_args")


def _arg_settings(sbatch_args: Sequence[str], path: str) -> list[Setting]:
    """``sbatch_args`` items checked as an experiment's (ConfigError naming ``path[i]``),
    as settings by long name."""
    settings: list[Setting] = []
    for arg in parse_sbatch_args(sbatch_args, path=path):
        option = (BY_SHORT.get(arg.option[1:]) if not arg.option.startswith("--")
                  else option_named(arg.option[2:], path))
        if option is not None:
            settings.append((option.name, arg.value))
    return settings


def _open_mode(options: Sequence[Setting]) -> str:
    mode = (value_of(options, "open-mode") or "truncate").lower()
    if mode not in OPEN_MODES:
        raise ValidationError(f"--open-mode={mode}: must be append or truncate")
    return mode


DIALECT = SlurmTaskDialect()
