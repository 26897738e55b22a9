"""Accepting a command task (``det sbatch``, ``det qsub``): validate, choose pool and
account, render, submit.

The client has already merged the script's directives (``#SBATCH``, ``#PBS``), its
environment and its command line, in its scheduler's order of precedence; the master checks
every option again, because the API is open to any client. The body's ``scheduler``
(``slurm`` by default) names whose options these are; a master whose resource manager is
another refuses the task. Everything scheduler-specific goes through the scheduler's
:class:`~hpcdet.dispatcher.tasks.TaskDialect`. Submission happens in the request, as sbatch
or qsub would: the task row is added (for its id), the job directory is written, the submit
command runs once, and the caller commits. If it refuses, nothing is kept and the answer
carries its own message. See docs/sbatch.md and docs/qsub.md.
"""

from __future__ import annotations

import functools
import logging
import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jinja2
from sqlalchemy.orm import Session

from hpcdet.dispatcher import Backend, Submission, registry
from hpcdet.dispatcher.commands import NOT_EXECUTABLE, NOT_FOUND, TIMED_OUT
from hpcdet.dispatcher.jobdir import CONTEXT_DIR, tar_of, unpack_context
from hpcdet.dispatcher.render import make_environment
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.safety import UNSAFE_CHARACTERS
from hpcdet.dispatcher.tags import task_tag
from hpcdet.dispatcher.tasks import (
    ENV_NAME,
    Setting,
    TaskDialect,
    TaskFields,
    TaskSpec,
    task_dialect,
)
from hpcdet.dispatcher.transport import LocalTransport, Transport
from hpcdet.errors import ConfigError, SchedulerError, ValidationError
from hpcdet.master.errors import DomainError, Invalid, Unavailable
from hpcdet.master.models import CommandTask
from hpcdet.master.queue.fair_share import ensure_account
from hpcdet.master.queue.job_queue import find_pool
from hpcdet.master.queue.placement import JobOwner, account_for
from hpcdet.master.queue.pools import Pool
from hpcdet.master.scheduling.job_dirs import task_job_dir
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.transitions import transition
from hpcdet.states import State

log = logging.getLogger(__name__)

MAX_ARGS = 1024
# What a client that names no scheduler means (det sbatch before det qsub existed).
DEFAULT_SCHEDULER = registry.names()[0]
# CommandTask.kind: a user's batch script (det sbatch/qsub), or a command (det cmd run)
# whose script the master wrote.
BATCH, COMMAND = "batch", "command"
# An interactive shell (det shell start): an sshd in the job (docs/shell.md).
SHELL = "shell"
# A TensorBoard (det tensorboard start): a command whose script the master wrote.
TENSORBOARD = "tensorboard"
# A JupyterLab proxied by the master (det notebook; hpcdet.master.proxy).
NOTEBOOK = "notebook"
# Every kind, as the API describes them (openapi_schemas).
TASK_KINDS = (BATCH, COMMAND, NOTEBOOK, SHELL, TENSORBOARD)
# The job directory's file holding a proxied service's secret (mode 0600).
SERVICE_TOKEN_FILE = "service_token"


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
    dialect: TaskDialect = field(default_factory=lambda: task_dialect(DEFAULT_SCHEDULER))
    kind: str = BATCH
    # A command's: its uploaded context (gzip tar), unpacked into the job directory, and
    # its checked config (stored with the task).
    context: bytes | None = None
    config: Mapping[str, Any] | None = None
    # More job-directory files the master wrote for this kind (a shell's host key):
    # {name relative to the job directory: (content, mode)}.
    files: Mapping[str, tuple[bytes, int]] = field(default_factory=dict)
    # A proxied service's secret: stored with the task, written to SERVICE_TOKEN_FILE.
    service_token: str | None = None


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


def parse_request(body: Mapping[str, Any], resource_manager: str) -> TaskRequest:
    """Check the body's shape and every value; 400 naming the first bad field.

    ``resource_manager``: the master's scheduler (the backend's name); a task written for
    another is refused before anything else is read."""
    dialect = _dialect(body, resource_manager)
    script = _script(body, dialect)
    options = check_options(body.get("options", []), dialect)
    return TaskRequest(
        script=script, script_name=_script_name(body, dialect),
        args=_args(body.get("args", []), dialect), options=options,
        cwd=_cwd(body.get("cwd"), dialect), environment=_environment(body.get("environment")),
        test_only=bool(body.get("test_only", False)), dialect=dialect,
    )  # fmt: skip


def _dialect(body: Mapping[str, Any], resource_manager: str) -> TaskDialect:
    """The dialect the body's ``scheduler`` names; 400 unless it is the master's own."""
    scheduler = body.get("scheduler", DEFAULT_SCHEDULER)
    if not isinstance(scheduler, str):
        raise _bad("scheduler: must be the name of a scheduler (slurm, pbs)")
    try:
        dialect = task_dialect(scheduler)
    except ValidationError as exc:
        raise _bad(f"scheduler: {exc}") from exc
    if scheduler != resource_manager:
        raise Invalid("wrong_scheduler",
                      f"this master's resource manager is {resource_manager}, so it cannot "
                      f"run a {dialect.client} task (written for {scheduler}); use "
                      f"{task_dialect(resource_manager).client}")
    return dialect


def _bad(message: str) -> Invalid:
    return Invalid("bad_request", message)


def _script(body: Mapping[str, Any], dialect: TaskDialect) -> str:
    script, wrap = body.get("script"), body.get("wrap")
    if (script is None) == (wrap is None):
        raise _bad("give either 'script' (the batch script's text) or 'wrap' (a command)")
    if wrap is not None:
        if not isinstance(wrap, str) or not wrap.strip() or "\x00" in wrap:
            raise _bad("wrap: must be a non-empty command without NUL bytes")
        return dialect.wrap_script(wrap)
    if not isinstance(script, str):
        raise _bad("script: must be the batch script's text")
    try:
        dialect.check_script(script)
    except ValidationError as exc:
        raise _bad(f"script: {exc}") from exc
    return script


def _script_name(body: Mapping[str, Any], dialect: TaskDialect) -> str:
    default = "wrap" if body.get("wrap") is not None else dialect.default_script_name
    name = body.get("script_name") or default
    if not isinstance(name, str) or not name.strip():
        raise _bad("script_name: must be a file name")
    return _safe(posixpath.basename(name) or default, "script_name")


def _args(raw: Any, dialect: TaskDialect) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(a, str) for a in raw):
        raise _bad("args: must be a list of strings")
    if raw and not dialect.takes_args:
        raise _bad(f"args: {dialect.submit_command} passes no arguments to a batch script")
    if len(raw) > MAX_ARGS:
        raise _bad(f"args: at most {MAX_ARGS} arguments")
    return tuple(_safe(a, f"args[{i}]") for i, a in enumerate(raw))


def _cwd(raw: Any, dialect: TaskDialect) -> str:
    if not isinstance(raw, str) or not raw.startswith("/"):
        raise _bad(f"cwd: must be the absolute path {dialect.client} ran in")
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
                       "passed to the scheduler safely")
    return value


def check_options(raw: Any, dialect: TaskDialect) -> tuple[Setting, ...]:
    """``[[name, value or null], ...]`` checked against the scheduler's option table."""
    if not isinstance(raw, list):
        raise _bad("options: must be a list of [name, value] pairs")
    return dialect.check_options(raw)


# ---- planning ------------------------------------------------------------------------------


def plan_task(session: Session, settings: MasterSettings, request: TaskRequest,
              owner: str, files: Transport) -> TaskPlan:
    """Name, working directory, pool, account and output files of the task (the working
    directory is looked for through ``files``: on a login node with the SSH transport)."""
    dialect = request.dialect
    fields = _fields(dialect, request.options, ())
    pool = _pool(session, settings, fields.pool, dialect)
    if pool.sbatch_args:
        fields = _fields(dialect, request.options, pool.sbatch_args)
    # A master-written script (command, shell, ...) runs in its job directory (its script
    # changes directory), known at submit.
    workdir = "" if request.kind != BATCH else _workdir(
        request, fields, settings.runas.owner_mode, files)
    spec = TaskSpec(
        task_id=0, name=_job_name(request, fields), job_dir="", workdir=workdir,
        submit_dir=request.cwd, comment="", args=request.args, options=fields.passed,
        partition=pool.partition,
        account=fields.account or account_for_task(settings, owner), output=fields.output,
        error=fields.error, append=fields.append,
        export_environment=request.environment is not None, interpreter=fields.interpreter,
        joined=fields.joined,
    )  # fmt: skip
    return TaskPlan(owner, request, spec, pool.name or None)


def _fields(dialect: TaskDialect, options: Sequence[Setting],
            pool_args: Sequence[str]) -> TaskFields:
    try:
        return dialect.fields(options, pool_args)
    except ValidationError as exc:
        raise _bad(str(exc)) from exc


def _job_name(request: TaskRequest, fields: TaskFields) -> str:
    name = fields.name or request.script_name
    if not name.strip():
        raise _bad("the job name must not be empty")
    return name


def _workdir(request: TaskRequest, fields: TaskFields, owner_mode: bool,
             files: Transport) -> str:
    """--chdir (relative to where the client ran) or that directory; it must exist here.

    In run-as-owner mode a directory the master may not look into (a user's 0700 home) is
    taken on trust: the job runs as its owner, who can."""
    client = request.dialect.client
    workdir = posixpath.normpath(posixpath.join(request.cwd, fields.chdir or "."))
    remote = files.name != LocalTransport.name
    if remote:
        found = files.exists(workdir)  # where the command runs
    else:
        found = _is_dir(workdir, trust_hidden=owner_mode)
    if not found:
        flag = "--chdir" if fields.chdir else f"the directory {client} ran in"
        host = "the login node" if remote else "the master's host"
        raise _bad(f"{flag}: {workdir} does not exist on {host}, which runs "
                   f"{request.dialect.submit_command} for you; run {client} from a directory "
                   "on a filesystem the master and the compute nodes share")
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


def _pool(session: Session, settings: MasterSettings, name: str | None,
          dialect: TaskDialect) -> Pool:
    try:
        return find_pool(session, settings, name, aux=True, where=dialect.pool_option)
    except ConfigError as exc:
        raise Invalid("bad_request", exc.errors[0]) from exc


# ---- submitting ----------------------------------------------------------------------------


def comment_for(settings: MasterSettings, task_id: int) -> str:
    """The tag that marks the task's job (hpcdet.master.queue.job_queue reads it)."""
    return task_tag(settings.resource_manager.cluster_name, task_id)


@functools.lru_cache(maxsize=4)
def _templates(template_dir: str | None) -> jinja2.Environment:
    return make_environment(template_dir)


def preview(settings: MasterSettings, backend: Backend, plan: TaskPlan) -> Submission:
    """What would be submitted (``--test-only``), with ``task-NEW`` for the unknown id."""
    spec = replace(plan.spec, job_dir=task_job_dir(settings, "NEW"),
                   comment=task_tag(settings.resource_manager.cluster_name, None))
    return _render(settings, backend, plan.request.dialect, spec)


def _render(settings: MasterSettings, backend: Backend, dialect: TaskDialect,
            spec: TaskSpec) -> Submission:
    try:
        return dialect.render(spec, _templates(settings.resource_manager.template_dir), backend)
    except ValidationError as exc:
        raise _bad(str(exc)) from exc


def submit(session: Session, settings: MasterSettings, backend: Backend,
           plan: TaskPlan) -> CommandTask:
    """Record the task, write its job directory, run sbatch/qsub; the caller commits."""
    dialect = plan.request.dialect
    task = _new_task(plan)
    session.add(task)
    # The transition flushes the row, which gives the task the id its job is named after.
    transition(session, task, State.QUEUED, cause=f"submitted with {dialect.client}",
               actor=plan.owner)
    task.job_dir = task_job_dir(settings, task.id, plan.owner)
    spec = replace(plan.spec, task_id=task.id, job_dir=task.job_dir,
                   comment=comment_for(settings, task.id))
    request = plan.request
    if request.kind != BATCH:  # a script the master wrote: it runs in its job directory
        spec = replace(spec, workdir=task.job_dir, submit_dir=task.job_dir)
        task.cwd = task.workdir = task.job_dir
        if request.environment is not None:
            request = replace(request, environment={**request.environment,
                                                    "DET_TASK_ID": str(task.id)})
    submission = _render(settings, backend, dialect, spec)
    runas: RunAs | None = getattr(backend, "runas", None)
    owner = plan.owner if runas is not None else None
    try:
        _write_job_dir(spec, request, runas, owner, files=backend.transport)
        # A new owner's fair-share account must exist before sbatch names it.
        ensure_account(session, backend.runner, settings, spec.account)
        task.job_id = backend.submit(replace(submission, owner=owner))
    except SchedulerError as exc:
        _remove_job_dir(task.job_dir, runas, owner, backend.transport)
        raise sbatch_refused(exc, dialect.submit_command) from exc
    return task


def _remove_job_dir(job_dir: str, runas: RunAs | None, owner: str | None,
                    files: Transport) -> None:
    """Nothing half-done: a refused submission leaves no job directory."""
    if runas is None or owner is None:
        try:
            files.remove_tree(job_dir)
        except (OSError, SchedulerError) as exc:  # the refusal is what the caller reports
            log.warning("could not remove %s after a refused submission: %s", job_dir, exc)
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
        kind=plan.request.kind,
        config=None if plan.request.config is None else dict(plan.request.config),
        service_token=plan.request.service_token,
    )  # fmt: skip


def _write_job_dir(spec: TaskSpec, request: TaskRequest, runas: RunAs | None = None,
                   owner: str | None = None, *, files: Transport) -> None:
    task_files = request.dialect.task_files(spec, request.script, request.environment)
    if request.service_token is not None:
        task_files[posixpath.join(spec.job_dir, SERVICE_TOKEN_FILE)] = (
            request.service_token + "\n", 0o600)
    if runas is not None and owner is not None:
        if files.exists(spec.job_dir):
            # Left by a task id this database no longer knows (a new database, the same
            # job root): its files (a shell's service.json...) must not be this task's.
            runas.remove(owner, spec.job_dir)
        # The owner's helper unpacks them: owned by the owner, private to them.
        prefix = spec.job_dir.rstrip("/") + "/"
        runas.prepare(owner, spec.job_dir, tar_of({
            **{path[len(prefix):]: (text.encode("utf-8", "surrogateescape"), mode)
               for path, (text, mode) in task_files.items()},
            **request.files}, context_tar=request.context))
        return
    files.remove_tree(spec.job_dir)  # left by a task id this database no longer knows
    files.make_dirs(spec.job_dir, 0o700)
    for path, (text, mode) in task_files.items():
        files.write_file(path, text.encode("utf-8", "surrogateescape"), mode)
    for name, (data, mode) in request.files.items():
        files.write_file(posixpath.join(spec.job_dir, name), data, mode)
    if request.context is not None:
        unpack_context(request.context, posixpath.join(spec.job_dir, CONTEXT_DIR), files)


def sbatch_refused(exc: SchedulerError, command: str = "sbatch") -> DomainError:
    """The submit command's own words: Invalid when it refused the job, Unavailable when it
    could not run (``sbatch_refused``/``qsub_refused``)."""
    message = (exc.stderr.strip() or exc.stdout.strip() or str(exc)).replace("\n", "; ")
    if exc.returncode in (NOT_FOUND, NOT_EXECUTABLE, TIMED_OUT):
        return Unavailable("scheduler_unavailable", f"{command} could not run: {message}")
    return Invalid(f"{command}_refused", f"{command} refused the job: {message}")
