"""Accepting a command task (``det sbatch``): validate, choose pool and account, render, submit.

``det sbatch`` has already merged the script's ``#SBATCH`` lines, the ``SBATCH_*``
variables and the command line (:mod:`hpcdet.dispatcher.slurm.sbatch_options`); the master
checks every option again, because the API is open to any client. Submission happens in
the request, as sbatch would: the task row is added (for its id), the job directory is
written, sbatch runs once, and the caller commits. If sbatch refuses, nothing is kept and
the answer carries sbatch's own message. See docs/sbatch.md.
"""

from __future__ import annotations

import functools
import logging
import os
import posixpath
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jinja2
from sqlalchemy.orm import Session

from hpcdet.dispatcher import Backend, Submission
from hpcdet.dispatcher.commands import NOT_EXECUTABLE, NOT_FOUND, TIMED_OUT
from hpcdet.dispatcher.jobdir import tar_of
from hpcdet.dispatcher.render import make_environment
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.safety import UNSAFE_CHARACTERS
from hpcdet.dispatcher.slurm.sbatch_args import parse_sbatch_args
from hpcdet.dispatcher.slurm.sbatch_options import (
    BY_NAME,
    BY_SHORT,
    CLI_ONLY,
    MASTER_HANDLED,
    ArgKind,
    Setting,
    option_named,
    refusal,
    value_of,
)
from hpcdet.dispatcher.slurm.task import (
    DEFAULT_OUTPUT,
    ENV_NAME,
    TaskSpec,
    check_script,
    render_task,
    task_files,
    wrap_script,
)
from hpcdet.errors import ConfigError, SchedulerError, ValidationError
from hpcdet.jobfiles import write_atomically
from hpcdet.master.errors import ApiError
from hpcdet.master.models import CommandTask
from hpcdet.master.queue.fair_share import ensure_account
from hpcdet.master.queue.job_queue import find_pool
from hpcdet.master.queue.pools import Pool
from hpcdet.master.scheduling.placement import JobOwner, account_for
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.runas import owner_root
from hpcdet.master.transitions import transition
from hpcdet.states import State

log = logging.getLogger(__name__)

MAX_ARGS = 1024
OPEN_MODES = ("append", "truncate")


@dataclass(frozen=True)
class TaskRequest:
    """A checked ``POST /tasks`` body."""

    script: str
    script_name: str
    args: tuple[str, ...]
    options: tuple[Setting, ...]
    cwd: str
    # None: --export=NONE; otherwise exactly the variables the job starts with.
    environment: Mapping[str, str] | None
    test_only: bool = False


@dataclass(frozen=True)
class TaskPlan:
    """Where and how the task runs, before it has an id."""

    owner: str
    request: TaskRequest
    spec: TaskSpec
    pool: str | None


def account_for_task(settings: MasterSettings, owner: str) -> str | None:
    """The fair-share account of a command task without ``--account``.

    A task has no workspace, so it is charged as the "uncategorized" workspace (or, with
    ``account_source: user``, to its user), by the experiments' rule in placement.
    """
    return account_for(settings, JobOwner(user=owner))


# ---- the request ---------------------------------------------------------------------------


def parse_request(body: Mapping[str, Any]) -> TaskRequest:
    """Check the body's shape and every value; 400 naming the first bad field."""
    script = _script(body)
    options = check_options(body.get("options", []))
    return TaskRequest(
        script=script, script_name=_script_name(body), args=_args(body.get("args", [])),
        options=options, cwd=_cwd(body.get("cwd")),
        environment=_environment(body.get("environment")),
        test_only=bool(body.get("test_only", False)),
    )  # fmt: skip


def _bad(message: str) -> ApiError:
    return ApiError(400, "bad_request", message)


def _script(body: Mapping[str, Any]) -> str:
    script, wrap = body.get("script"), body.get("wrap")
    if (script is None) == (wrap is None):
        raise _bad("give either 'script' (the batch script's text) or 'wrap' (a command)")
    if wrap is not None:
        if not isinstance(wrap, str) or not wrap.strip() or "\x00" in wrap:
            raise _bad("wrap: must be a non-empty command without NUL bytes")
        return wrap_script(wrap)
    if not isinstance(script, str):
        raise _bad("script: must be the batch script's text")
    try:
        check_script(script)
    except ValidationError as exc:
        raise _bad(f"script: {exc}") from exc
    return script


def _script_name(body: Mapping[str, Any]) -> str:
    default = "wrap" if body.get("wrap") is not None else "sbatch"
    name = body.get("script_name") or default
    if not isinstance(name, str) or not name.strip():
        raise _bad("script_name: must be a file name")
    return _safe(posixpath.basename(name) or default, "script_name")


def _args(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(a, str) for a in raw):
        raise _bad("args: must be a list of strings")
    if len(raw) > MAX_ARGS:
        raise _bad(f"args: at most {MAX_ARGS} arguments")
    return tuple(_safe(a, f"args[{i}]") for i, a in enumerate(raw))


def _cwd(raw: Any) -> str:
    if not isinstance(raw, str) or not raw.startswith("/"):
        raise _bad("cwd: must be the absolute path det sbatch ran in")
    return posixpath.normpath(_safe(raw, "cwd"))


def _environment(raw: Any) -> dict[str, str] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _bad("environment: must be an object of variable names to values, or null")
    for name, value in raw.items():
        if not ENV_NAME.match(name):
            raise _bad(f"environment: {name!r} is not a valid variable name")
        if not isinstance(value, str):
            raise _bad(f"environment[{name!r}]: must be a string")
        _safe(value, f"environment[{name!r}]")
    return dict(raw)


def _safe(value: str, where: str) -> str:
    for char, description in UNSAFE_CHARACTERS.items():
        if char in value:
            raise _bad(f"{where}: contains {description} ({char!r}), which cannot be "
                       "passed to sbatch safely")
    return value


def check_options(raw: Any) -> tuple[Setting, ...]:
    """``[[long name, value or null], ...]`` checked against sbatch's option table."""
    if not isinstance(raw, list):
        raise _bad("options: must be a list of [name, value] pairs")
    errors: list[str] = []
    settings: list[Setting] = []
    for index, item in enumerate(raw):
        problem = _option_problem(item)
        if problem:
            errors.append(f"options[{index}]: {problem}")
        else:
            settings.append((item[0], item[1]))
    if errors:
        raise ConfigError(errors, title="invalid sbatch options")
    return tuple(settings)


def _option_problem(item: Any) -> str | None:
    if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str)
            or not isinstance(item[1], (str, type(None)))):
        return "must be [name, value] with a string name and a string or null value"
    name, value = item
    option = BY_NAME.get(name)
    if option is None:
        return f"unknown sbatch option --{name} (long names without dashes, e.g. 'time')"
    if name in CLI_ONLY:
        return f"--{name} is handled by det sbatch itself, not by the master"
    if (reason := refusal(name)) is not None:
        return reason
    if option.kind is ArgKind.NONE and value is not None:
        return f"--{name} takes no value"
    if option.kind is ArgKind.REQUIRED and value is None:
        return f"--{name} needs a value"
    for char, description in UNSAFE_CHARACTERS.items():
        if value is not None and char in value:
            return f"--{name}: the value contains {description} ({char!r})"
    return None


# ---- planning ------------------------------------------------------------------------------


def plan_task(session: Session, settings: MasterSettings, request: TaskRequest,
              owner: str) -> TaskPlan:
    """Name, working directory, pool, account and output files of the task."""
    options = request.options
    pool = _pool(session, settings, value_of(options, "partition"))
    spec = TaskSpec(
        task_id=0, name=_job_name(request), job_dir="",
        workdir=_workdir(request, settings.runas.owner_mode),
        submit_dir=request.cwd, comment="",
        args=request.args, options=(*_pool_settings(pool.sbatch_args), *_passed(options)),
        partition=pool.partition, account=value_of(options, "account")
        or account_for_task(settings, owner),
        output=value_of(options, "output") or DEFAULT_OUTPUT,
        error=value_of(options, "error"), append=_open_mode(options) == "append",
        export_environment=request.environment is not None,
    )  # fmt: skip
    return TaskPlan(owner, request, spec, pool.name or None)


def _job_name(request: TaskRequest) -> str:
    name = value_of(request.options, "job-name") or request.script_name
    if not name.strip():
        raise _bad("--job-name: must not be empty")
    return name


def _workdir(request: TaskRequest, owner_mode: bool = False) -> str:
    """--chdir (relative to where det sbatch ran) or that directory; it must exist here.

    In run-as-owner mode a directory the master may not look into (a user's 0700 home) is
    taken on trust: the job runs as its owner, who can."""
    chdir = value_of(request.options, "chdir")
    workdir = posixpath.normpath(posixpath.join(request.cwd, chdir or "."))
    if not _is_dir(workdir, trust_hidden=owner_mode):
        flag = "--chdir" if chdir else "the directory det sbatch ran in"
        raise _bad(f"{flag}: {workdir} does not exist on the master's host, which runs "
                   "sbatch for you; run det sbatch from (or give --chdir=) a directory on "
                   "a filesystem the master and the compute nodes share")
    return workdir


def _is_dir(path: str, *, trust_hidden: bool) -> bool:
    try:
        return Path(path).is_dir()
    except PermissionError:  # Python 3.11's is_dir() raises it
        return trust_hidden and _hidden(path)


def _hidden(path: str) -> bool:
    """True if an ancestor of ``path`` is one this process may not search."""
    parent = posixpath.dirname(path)
    while parent and parent != "/":
        if os.access(parent, os.F_OK):
            return not os.access(parent, os.X_OK)
        parent = posixpath.dirname(parent)
    return False


def _pool(session: Session, settings: MasterSettings, name: str | None) -> Pool:
    if name is not None and "," in name:
        raise _bad(f"--partition={name}: det sbatch takes one resource pool, not a list")
    try:
        return find_pool(session, settings, name, aux=True, where="--partition")
    except ConfigError as exc:
        raise ApiError(400, "bad_request", exc.errors[0]) from exc


def _pool_settings(sbatch_args: Sequence[str]) -> list[Setting]:
    """A pool's ``sbatch_args`` (already checked at start) as settings."""
    settings: list[Setting] = []
    for arg in parse_sbatch_args(sbatch_args, path="pool sbatch_args"):
        option = (BY_SHORT.get(arg.option[1:]) if not arg.option.startswith("--")
                  else option_named(arg.option[2:], "pool sbatch_args"))
        if option is not None:
            settings.append((option.name, arg.value))
    return settings


def _passed(options: Sequence[Setting]) -> list[Setting]:
    return [(name, value) for name, value in options if name not in MASTER_HANDLED]


def _open_mode(options: Sequence[Setting]) -> str:
    mode = (value_of(options, "open-mode") or "truncate").lower()
    if mode not in OPEN_MODES:
        raise _bad(f"--open-mode={mode}: must be append or truncate")
    return mode


# ---- submitting ----------------------------------------------------------------------------


def job_dir_for(settings: MasterSettings, task_id: int | str, owner: str = "") -> str:
    """``<root>/tasks/task-N``; under ``<root>/<owner>/`` when jobs run as their owner."""
    root = owner_root(settings.resource_manager.job_storage_root, settings.runas, owner)
    return str(root / "tasks" / f"task-{task_id}")


def comment_for(settings: MasterSettings, task_id: int) -> str:
    """The comment that marks the task's job (hpcdet.master.queue.job_queue reads it)."""
    return f"hpcdet:{settings.resource_manager.cluster_name}:task-{task_id}"


@functools.lru_cache(maxsize=4)
def _templates(template_dir: str | None) -> jinja2.Environment:
    return make_environment(template_dir)


def preview(settings: MasterSettings, backend: Backend, plan: TaskPlan) -> Submission:
    """What would be submitted (``--test-only``), with ``task-NEW`` for the unknown id."""
    spec = replace(plan.spec, job_dir=job_dir_for(settings, "NEW"),
                   comment=f"hpcdet:{settings.resource_manager.cluster_name}:task-NEW")
    return _render(settings, backend, spec)


def _render(settings: MasterSettings, backend: Backend, spec: TaskSpec) -> Submission:
    try:
        return render_task(spec, _templates(settings.resource_manager.template_dir),
                           sbatch=getattr(backend, "sbatch", "sbatch"))
    except ValidationError as exc:
        raise _bad(str(exc)) from exc


def submit(session: Session, settings: MasterSettings, backend: Backend,
           plan: TaskPlan) -> CommandTask:
    """Record the task, write its job directory, run sbatch; the caller commits."""
    task = _new_task(plan)
    session.add(task)
    # The transition flushes the row, which gives the task the id its job is named after.
    transition(session, task, State.QUEUED, cause="submitted with det sbatch", actor=plan.owner)
    task.job_dir = job_dir_for(settings, task.id, plan.owner)
    spec = replace(plan.spec, task_id=task.id, job_dir=task.job_dir,
                   comment=comment_for(settings, task.id))
    submission = _render(settings, backend, spec)
    runas: RunAs | None = getattr(backend, "runas", None)
    owner = plan.owner if runas is not None else None
    try:
        _write_job_dir(spec, plan.request, runas, owner)
        # A new owner's fair-share account must exist before sbatch names it.
        ensure_account(session, backend.runner, settings, spec.account)
        task.job_id = backend.submit(replace(submission, owner=owner))
    except SchedulerError as exc:
        _remove_job_dir(task.job_dir, runas, owner)
        raise sbatch_refused(exc) from exc
    return task


def _remove_job_dir(job_dir: str, runas: RunAs | None, owner: str | None) -> None:
    """Nothing half-done: a refused submission leaves no job directory."""
    if runas is None or owner is None:
        shutil.rmtree(job_dir, ignore_errors=True)
        return
    try:
        runas.remove(owner, job_dir)
    except SchedulerError:
        log.warning("could not remove %s as %s after a refused submission", job_dir, owner)


def _new_task(plan: TaskPlan) -> CommandTask:
    spec = plan.spec
    return CommandTask(
        owner=plan.owner, name=spec.name, job_dir="", pool=plan.pool,
        partition=spec.partition, account=spec.account,
        options=[list(item) for item in plan.request.options], args=list(spec.args),
        cwd=plan.request.cwd, workdir=spec.workdir, output_pattern=spec.output,
        error_pattern=spec.error if spec.separate_error else None, cancel_requested=False,
    )  # fmt: skip


def _write_job_dir(spec: TaskSpec, request: TaskRequest, runas: RunAs | None = None,
                   owner: str | None = None) -> None:
    files = task_files(spec, request.script, request.environment)
    if runas is not None and owner is not None:
        # The owner's helper unpacks them: owned by the owner, private to them.
        prefix = spec.job_dir.rstrip("/") + "/"
        runas.prepare(owner, spec.job_dir, tar_of({
            path[len(prefix):]: (text.encode("utf-8", "surrogateescape"), mode)
            for path, (text, mode) in files.items()}))
        return
    root = Path(spec.job_dir)
    if root.exists():  # left by a task id this database no longer knows
        shutil.rmtree(root)
    root.mkdir(mode=0o700, parents=True)
    for path, (text, mode) in files.items():
        write_atomically(Path(path), text.encode("utf-8", "surrogateescape"), mode=mode,
                         durable=False)


def sbatch_refused(exc: SchedulerError) -> ApiError:
    """sbatch's own words: 400 when it refused the job, 503 when it could not run."""
    message = (exc.stderr.strip() or exc.stdout.strip() or str(exc)).replace("\n", "; ")
    if exc.returncode in (NOT_FOUND, NOT_EXECUTABLE, TIMED_OUT):
        return ApiError(503, "scheduler_unavailable", f"sbatch could not run: {message}")
    return ApiError(400, "sbatch_refused", f"sbatch refused the job: {message}")
