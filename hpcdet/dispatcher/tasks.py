"""Command tasks (``det sbatch``, ``det qsub``) in scheduler-neutral terms.

A command task is a user's own batch script, stored unmodified in a job directory and run
by a small wrapper that the master submits. What the master needs of a scheduler for that
is a :class:`TaskDialect`: it checks the native options a client sent (sbatch's long names,
qsub's letters), reads from them the few things the master acts on (:class:`TaskFields`:
pool, name, account, output files), and renders the wrapper and the submit argv. Each
scheduler's plug-in names one (``slurm/task.py``, ``pbs/task.py``), loaded by name with
:func:`task_dialect`, so the master imports no scheduler module.
"""

from __future__ import annotations

import abc
import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hpcdet.dispatcher import registry
from hpcdet.dispatcher.options import Setting as Setting  # (the task modules name it here too)
from hpcdet.dispatcher.safety import check_safe
from hpcdet.errors import ConfigError, ValidationError

if TYPE_CHECKING:  # det's commands import this module; they need no templates
    import jinja2

    from hpcdet.dispatcher.base import Backend, Submission

# One native option: (canonical name, value or None for a flag).
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
WRAPPER_NAME = "hpcdet-task.sh"
SCRIPT_NAME = "script"
ENVIRONMENT_NAME = "environment.sh"


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
    # Native options passed to the submit command as given (canonical names, effect order).
    options: tuple[Setting, ...] = ()
    # The pool in the scheduler's words: a Slurm partition, a PBS queue.
    partition: str | None = None
    account: str | None = None
    # The user's output file (the scheduler's syntax); error None: with the output.
    output: str = ""
    error: str | None = None
    append: bool = False
    # False: the job starts without the submitter's environment (Slurm --export=NONE).
    export_environment: bool = True
    # The program that runs the script (PBS -S); None: the script's own #! line.
    interpreter: str | None = None
    # Whether standard error goes with the output (PBS -j oe/eo); None: it does when
    # ``error`` is None or names the output's file (Slurm).
    joined: bool | None = None

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
        if self.joined is not None:
            return not self.joined
        return self.error is not None and self.error != self.output


@dataclass(frozen=True)
class TaskFields:
    """What the master reads of a task's native options (None: not given)."""

    pool: str | None
    name: str | None
    chdir: str | None
    account: str | None
    output: str
    error: str | None
    append: bool
    # The options passed on to the scheduler as given.
    passed: tuple[Setting, ...]
    interpreter: str | None = None
    joined: bool | None = None


@dataclass(frozen=True)
class TaskResources:
    """A command's slots and queue placement (``det cmd run``), in neutral terms: one task
    per slot, ``ranks_per_node`` of them on each of ``nodes`` nodes, with the pool's GPUs."""

    nodes: int = 1
    ranks_per_node: int = 1
    cpus_per_rank: int = 1
    gpus_per_node: int = 0
    gpu_type: str | None = None
    qos: str | None = None
    nice: int = 0


class TaskDialect(abc.ABC):
    """One scheduler's command tasks; the master reaches them through :func:`task_dialect`."""

    scheduler: str  # the backend's name: slurm, pbs
    client: str  # the command users run: det sbatch, det qsub
    submit_command: str  # what the master runs: sbatch, qsub
    pool_option: str  # how the user names a pool: --partition, -q
    default_script_name: str  # the name of a script read from standard input
    takes_args: bool  # whether the script gets arguments
    environment_source: str  # what sent the environment, in environment.sh's comment
    # A command's options that leave the user's copy of the output out (the master keeps
    # its own in the job directory) and send standard error with the output.
    command_output: tuple[Setting, ...] = ()

    def check_options(self, raw: Sequence[Any]) -> tuple[Setting, ...]:
        """``[[option, value or null], ...]`` checked against the submit command's options
        (:meth:`option_problem`); every bad item is named."""
        errors: list[str] = []
        settings: list[Setting] = []
        for index, item in enumerate(raw):
            problem = self.option_problem(item)
            if problem:
                errors.append(f"options[{index}]: {problem}")
            else:
                settings.append((item[0], item[1]))
        if errors:
            raise ConfigError(errors, title=f"invalid {self.submit_command} options")
        return tuple(settings)

    @abc.abstractmethod
    def option_problem(self, item: Any) -> str | None:
        """What is wrong with one ``[option, value]`` item; None when nothing is."""

    @abc.abstractmethod
    def fields(self, options: Sequence[Setting], pool_args: Sequence[str]) -> TaskFields:
        """The master's fields of checked ``options``; ``pool_args``, the pool's own extra
        batch options, come before the user's (which win). ValidationError if invalid."""

    @abc.abstractmethod
    def check_script(self, script: str) -> None:
        """The submit command's own checks of a batch script (ValidationError)."""

    @abc.abstractmethod
    def wrap_script(self, command: str) -> str:
        """The script the submit command makes of a bare command."""

    @abc.abstractmethod
    def render(self, spec: TaskSpec, templates: jinja2.Environment,
               backend: Backend) -> Submission:
        """The wrapper script and submit argv for ``spec``; no side effects."""

    @abc.abstractmethod
    def resource_settings(self, resources: TaskResources,
                          backend: Backend) -> tuple[Setting, ...]:
        """A command's slots and placement as native options (nodes, tasks, GPUs the way
        ``backend``'s cluster takes them, QOS/priority)."""

    @abc.abstractmethod
    def batch_arg_settings(self, args: Sequence[str], path: str) -> tuple[Setting, ...]:
        """A command config's ``sbatch_args``/``pbsbatch_args`` as checked native options;
        ConfigError naming ``path[i]`` for each refused item."""

    def task_files(self, spec: TaskSpec, script: str,
                   environment: Mapping[str, str] | None) -> dict[str, tuple[str, int]]:
        """``{path: (text, mode)}`` the job directory holds besides the wrapper."""
        files = {spec.script_path: (script, 0o700)}
        if spec.export_environment:
            files[spec.environment_path] = (environment_file(environment or {},
                                                             self.environment_source), 0o600)
        return files


def task_dialect(scheduler: str) -> TaskDialect:
    """The command-task dialect of ``scheduler`` (a backend's name), imported lazily."""
    if scheduler not in registry.names():
        known = ", ".join(sorted(registry.names()))
        raise ValidationError(f"unknown scheduler {scheduler!r} (known: {known})")
    dialect: TaskDialect = registry.scheduler(scheduler).attribute("task", "DIALECT")
    return dialect


def check_script_text(script: str) -> None:
    """What every scheduler's batch script must not hold: a NUL, or DOS line breaks (bash
    runs the script and would read ``\\r`` as part of each command)."""
    if "\x00" in script:
        raise ValidationError("the batch script contains a NUL character")
    if "\r\n" in script:
        raise ValidationError("the batch script contains DOS line breaks (\\r\\n) instead "
                              "of UNIX line breaks (\\n); convert it with dos2unix")


def environment_file(environment: Mapping[str, str], source: str) -> str:
    """The text of ``environment.sh``: one quoted ``export`` per variable, sorted."""
    lines = [f"# The environment {source}; sourced by {WRAPPER_NAME}"]
    for name in sorted(environment):
        if not ENV_NAME.match(name):
            raise ValidationError(f"environment: {name!r} is not a valid variable name")
        value = check_safe(environment[name], f"environment[{name!r}]")
        lines.append(f"export {name}={shlex.quote(value)}")
    return "\n".join(lines) + "\n"


def describe_argv(argv: Sequence[str]) -> str:
    """The argv as one shell-quoted line (for --test-only)."""
    return " ".join(shlex.quote(word) for word in argv)
