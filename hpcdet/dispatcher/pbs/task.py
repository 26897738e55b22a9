"""Render a command task (``det qsub``) as a wrapper script and a ``qsub`` argv.

The submitted script is stored unmodified in the task's job directory and run by a small
wrapper (``pbs_task.sh.j2``), which qsub submits. The wrapper gives the script the
environment det qsub sent (``-V``/``-v`` and the ``PBS_O_*`` values of the user's shell),
runs it (with ``-S``'s shell if given), and copies its output to the files the user asked
for (``-o``/``-e``, qsub's defaults ``<name>.o<seq>``/``<name>.e<seq>`` in the submit
directory, ``-j oe``/``eo``), while PBS itself writes the master's copy directly into the
job directory (``-k oed``), where ``det task logs`` reads it.

Every option goes on qsub's command line, which wins over the wrapper's own lines; the
user's options come after hpcdet's (``-N``, ``-q``, ``-A``, the files and the job's tag),
which they cannot set. Rendering is pure; :meth:`Backend.submit` writes the wrapper and
runs the argv.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hpcdet.dispatcher import options, tasks
from hpcdet.dispatcher.base import Backend, Submission
from hpcdet.dispatcher.jobdir import TASK_ERROR_LOG, TASK_OUTPUT_LOG
from hpcdet.dispatcher.options import Setting, value_of
from hpcdet.dispatcher.pbs.qsub_options import (
    CLI_ATTRIBUTES,
    MASTER_HANDLED,
    OPTIONS,
    QSUB,
    Word,
    check_not_refused,
    identity_settings,
    parse_words,
    refusal,
    render_setting,
)
from hpcdet.dispatcher.safety import check_safe
from hpcdet.dispatcher.tasks import TaskFields, TaskResources, TaskSpec
from hpcdet.errors import ConfigError, ValidationError

if TYPE_CHECKING:  # det's commands import this module; they need no templates
    import jinja2

TEMPLATE_NAME = "pbs_task.sh.j2"
# hpcdet's tag of the job, in its Variable_List (as the PBS backend tags trial jobs).
TAG_VARIABLE = "HPCDET_JOB_TAG"
ENVIRONMENT_SOURCE = "det qsub sent (-V, -v and the submitter's PBS_O_* values)"
MAX_SCRIPT_BYTES = 4 * 1024 * 1024
# Tenths of a second the wrapper waits for the output copies after the script exited.
DRAIN_TRIES = 50
# PBS's -j values: oe/eo join the streams (into the output's/error's file), n does not.
JOINS = ("oe", "eo", "n")
_TAG = re.compile(r"^[A-Za-z0-9_.:@/+-]+$")
_PRIORITY = re.compile(r"^[+-]?\d{1,4}$")
# Where the master's copy of the job's output goes: the job directory, written directly.
_KEEP = "oed"


def render_task(spec: TaskSpec, templates: jinja2.Environment, *,
                qsub: str = "qsub") -> Submission:
    """The wrapper script and the qsub argv for ``spec``; no side effects."""
    _validate(spec)
    script = templates.get_template(TEMPLATE_NAME).render(**_template_context(spec))
    argv = (qsub, *qsub_options(spec), spec.wrapper_path)
    return Submission(script, spec.wrapper_path, argv)


def qsub_options(spec: TaskSpec) -> list[str]:
    """hpcdet's options, then the user's (which never set the same ones)."""
    own: list[Setting] = [("N", spec.name), ("v", f"{TAG_VARIABLE}={spec.comment}"),
                          ("o", posixpath.join(spec.job_dir, TASK_OUTPUT_LOG)),
                          ("k", _KEEP), ("j", "n" if spec.separate_error else "oe")]
    if spec.separate_error:
        own.append(("e", posixpath.join(spec.job_dir, TASK_ERROR_LOG)))
    own += [(key, value) for key, value in (("q", spec.partition), ("A", spec.account)) if value]
    user = [setting for setting in spec.options if setting[0] != "j"]
    return [word for setting in [*own, *user] for word in render_setting(setting)]


def check_script(script: str) -> None:
    """qsub's checks of a batch script, and hpcdet's: bash runs it, so no DOS line breaks;
    no ``#PBS`` directive that would change who the job runs as (det qsub's refusal, made
    again for any client: the master, not knowing a ``-C`` prefix, reads ``#PBS``)."""
    if len(script.encode("utf-8", "surrogateescape")) > MAX_SCRIPT_BYTES:
        raise ValidationError(f"larger than {MAX_SCRIPT_BYTES} bytes")
    if not script.strip():
        raise ValidationError("the batch script is empty")
    tasks.check_script_text(script)
    check_not_refused(identity_settings(script))


def wrap_script(command: str) -> str:
    """The script of ``qsub -- executable [args]``: the command, run in the job's shell."""
    return f"#!/bin/sh\n# This script was created by det qsub from a command.\nexec {command}\n"


def _validate(spec: TaskSpec) -> None:
    values = [("name", spec.name), ("job_dir", spec.job_dir), ("workdir", spec.workdir),
              ("submit_dir", spec.submit_dir), ("output", spec.output),
              ("error", spec.error or ""), ("queue", spec.partition or ""),
              ("account", spec.account or ""), ("interpreter", spec.interpreter or "")]
    values += [(f"-{key}", value or "") for key, value in spec.options]
    for where, value in values:
        check_safe(value, where)
    if spec.args:
        raise ValidationError("qsub passes no arguments to a batch script")
    if not _TAG.match(spec.comment):
        raise ValidationError(f"the job's tag {spec.comment!r}: letters, digits and _.:@/+- "
                              "only (qsub -v splits values at commas)")
    unknown = [key for key, _ in spec.options if key not in OPTIONS]
    if unknown:
        raise ValidationError(f"unknown qsub options: {', '.join(unknown)}")


def _template_context(spec: TaskSpec) -> dict[str, object]:
    joined_to_error = ("j", "eo") in spec.options
    output = (spec.error or "") if joined_to_error else spec.output
    return {
        "task_id": spec.task_id, "job_dir": spec.job_dir, "script_path": spec.script_path,
        "exit_file_prefix": posixpath.join(spec.job_dir, "exit-"),
        "environment_file": spec.environment_path if spec.export_environment else None,
        "submit_dir": spec.submit_dir, "drain_tries": DRAIN_TRIES,
        "interpreter": spec.interpreter, "output": _host_free(output),
        "output_suffix": "e" if joined_to_error else "o",
        "error": _host_free(spec.error or "") if spec.separate_error else None,
    }  # fmt: skip


def _host_free(path: str) -> str:
    """``host:path`` as qsub takes it, without the host (the job writes on a shared
    filesystem; a ``:`` after the first ``/`` belongs to the path)."""
    host, colon, rest = path.partition(":")
    return rest if colon and "/" not in host else path


# ---- the master's side (hpcdet.master.scheduling.task_submission) -------------------------


class PbsTaskDialect(tasks.TaskDialect):
    """det qsub's tasks: qsub's options by letter, a wrapper qsub submits."""

    scheduler = "pbs"
    client = "det qsub"
    submit_command = "qsub"
    pool_option = "-q"
    default_script_name = "STDIN"
    takes_args = False
    environment_source = ENVIRONMENT_SOURCE
    command_output = (("o", "/dev/null"), ("j", "oe"))

    def option_problem(self, item: Any) -> str | None:
        """What is wrong with one ``[option, value]`` item (see :func:`option_problem`)."""
        return option_problem(item)

    def fields(self, options: Sequence[Setting], pool_args: Sequence[str]) -> TaskFields:
        """Queue, name, account, files and shell; the rest is passed to qsub."""
        join = value_of(options, "j") or "n"
        passed = [(key, value) for key, value in options
                  if key not in MASTER_HANDLED or key == "j"]
        return TaskFields(
            pool=value_of(options, "q"), name=value_of(options, "N"), chdir=None,
            account=value_of(options, "A"), output=value_of(options, "o") or "",
            error=value_of(options, "e") or "", append=False,
            passed=(*pool_settings(pool_args), *passed),
            interpreter=_interpreter(value_of(options, "S")), joined=join != "n")

    # The submit command's own checks and wrapper are this module's functions.
    check_script = staticmethod(check_script)
    wrap_script = staticmethod(wrap_script)

    def render(self, spec: TaskSpec, templates: jinja2.Environment,
               backend: Backend) -> Submission:
        bin_dir = getattr(backend, "bin_dir", "") or ""
        qsub = posixpath.join(bin_dir, "qsub") if bin_dir else "qsub"
        return render_task(spec, templates, qsub=qsub)

    def resource_settings(self, resources: TaskResources,
                          backend: Backend) -> tuple[Setting, ...]:
        """``-l select=`` with one MPI process per slot and the pool's GPUs (as the PBS
        backend asks for a trial's), ``-l place``, and ``-p`` from the priority band."""
        from hpcdet.dispatcher.pbs.render import priority

        r = resources
        chunk = [str(r.nodes), f"ncpus={r.ranks_per_node * r.cpus_per_rank}",
                 f"mpiprocs={r.ranks_per_node}"]
        if r.gpus_per_node and getattr(backend, "ask_for_gpus", True):
            chunk.append(f"ngpus={r.gpus_per_node}")
            if r.gpu_type:
                chunk.append(f"{getattr(backend, 'gpu_type_resource', 'gpu_model')}="
                             f"{r.gpu_type}")
        settings: list[Setting] = [("l", f"select={':'.join(chunk)}"),
                                   ("l", f"place={'scatter' if r.nodes > 1 else 'pack'}")]
        if r.nice:
            settings.append(("p", str(priority(r.nice))))
        return tuple(settings)

    def batch_arg_settings(self, args: Sequence[str], path: str) -> tuple[Setting, ...]:
        """``pbs.pbsbatch_args``, refused as an experiment's are, then as det qsub's."""
        from hpcdet.dispatcher.pbs.qsub_args import parse_qsub_args

        parse_qsub_args(args, path=path)
        words = [Word(word, path) for item in args for word in item.split(None, 1)]
        settings = parse_words(words).settings
        errors = [f"{path}: {problem}" for problem in
                  (option_problem([key, value]) for key, value in settings) if problem]
        if errors:
            raise ConfigError(errors, title="invalid pbsbatch_args")
        return tuple(settings)


def option_problem(item: Any) -> str | None:
    """What is wrong with one ``[letter, value]`` item the master was sent, or None."""
    return options.setting_problem(QSUB, item, refusal, _value_problem, _cli_attribute)


def _cli_attribute(letter: str, value: str | None) -> bool:
    """Whether ``-W name=...`` sets an attribute det qsub handles itself (``block``)."""
    return letter == "W" and bool(value) and (value or "").split("=")[0] in CLI_ATTRIBUTES


def _value_problem(letter: str, value: str) -> str | None:
    if letter in ("l", "W") and ("," in value or "=" not in value):
        return f"-{letter} {value}: one name=value item per option"
    if letter == "j" and value not in JOINS:
        return f"-j {value}: must be oe, eo or n"
    if letter == "r" and value not in ("y", "n"):
        return f"-r {value}: must be y or n"
    if letter == "p" and not (_PRIORITY.match(value) and -1024 <= int(value) <= 1023):
        return f"-p {value}: must be a priority from -1024 to 1023"
    if letter == "S":
        try:
            _interpreter(value)
        except ValidationError as exc:
            return str(exc)
    return None


def _interpreter(path_list: str | None) -> str | None:
    """``-S path[@host][,...]``: the first path (the job's shell)."""
    if not path_list:
        return None
    path = path_list.split(",")[0].split("@")[0]
    if not path.startswith("/"):
        raise ValidationError(f"-S {path_list}: give the shell's absolute path")
    return path


def pool_settings(pool_args: Sequence[str]) -> list[Setting]:
    """A pool's extra qsub options (``-l mem=4gb`` items, checked at start) as settings."""
    words = [Word(word, "pool pbsbatch_args") for item in pool_args
             for word in item.split(None, 1)]
    return parse_words(words).settings


DIALECT = PbsTaskDialect()
