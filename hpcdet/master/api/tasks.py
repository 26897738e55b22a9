"""Command task routes (``det sbatch``, ``det qsub``, ``det task``): submit, list, describe,
kill, logs.

Submitting runs sbatch (or qsub) once, in the request (a user action, like sbatch itself); the other
routes read the database, the ``queue`` snapshot and the task's job directory only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flask import current_app, request
from sqlalchemy import func, select

from hpcdet.dispatcher import Backend
from hpcdet.master.api.access import CHANGE, task_for
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, int_arg, json_body, settings, with_reason_words
from hpcdet.master.api.rows import history
from hpcdet.master.errors import DomainError
from hpcdet.master.models import CommandTask
from hpcdet.master.reports.failure import (
    MAX_LINE,
    Failure,
    LogLine,
    tail_lines,
    task_failure,
    with_time_limit,
)
from hpcdet.master.scheduling import task_submission, tasks
from hpcdet.master.security import authz
from hpcdet.master.security.workspaces import placement_for


def _backend() -> Backend:
    backend: Backend = current_app.config["HPCDET_BACKEND"]
    return backend


@bp.post("/tasks")
def create_task() -> Any:
    """Submit a batch script (or ``wrap`` command) as a command task; 201 with the task.

    ``scheduler`` (``slurm``, the default, or ``pbs``) says whose options the body holds;
    a master with another resource manager refuses it. With ``test_only`` nothing is
    submitted: the answer holds the wrapper script and the argv the master would run.
    ``"workspace": NAME`` shares the task with the workspace's members (editor role
    needed; checked before anything is submitted).
    """
    owner = current_user()
    body = json_body()
    workspace_id, _ = placement_for(db(), settings(), owner, body.get("workspace"), None)
    parsed = task_submission.parse_request(body, _backend().name)
    plan = task_submission.plan_task(db(), settings(), parsed, owner, _backend().transport)
    if parsed.test_only:
        preview = task_submission.preview(settings(), _backend(), plan)
        return {"test_only": True, "script": preview.script, "argv": list(preview.argv),
                "pool": plan.pool, "partition": plan.spec.partition,
                "account": plan.spec.account, "name": plan.spec.name,
                "workdir": plan.spec.workdir}
    task = submit_tracked(plan, workspace_id)
    return {"task": tasks.task_json(task)}, 201


def submit_tracked(plan: task_submission.TaskPlan, workspace_id: int | None,
                   attach: Callable[[CommandTask], None] | None = None) -> CommandTask:
    """Submit ``plan``'s job and commit its row; cancel the job if the row cannot be stored
    (a job must not run untracked). ``attach`` adds the kind's own rows (a shell's keys) to
    the same commit."""
    task = task_submission.submit(db(), settings(), _backend(), plan)
    task.workspace_id = workspace_id
    if attach is not None:
        attach(task)
    try:
        db().commit()
    except Exception:
        _backend().cancel([str(task.job_id)])
        raise
    return task


@bp.get("/tasks")
def list_tasks() -> Any:
    """Tasks the caller may see, newest first; ``state``, ``owner``, ``kind`` (``batch``,
    ``command``, ``tensorboard``), ``mine=true`` and ``active=true`` narrow the list."""
    return task_listing(current_user(), request.args)


def task_listing(user: str, args: Mapping[str, str]) -> dict[str, Any]:
    """``GET /tasks``'s answer for ``user`` and query ``args`` (also the web Tasks page's)."""
    query = select(CommandTask).where(*authz.visible(
        settings(), user, CommandTask.owner, CommandTask.workspace_id))
    if args.get("state"):
        query = query.where(CommandTask.state == args["state"].upper())
    if args.get("owner"):
        query = query.where(CommandTask.owner == args["owner"])
    if args.get("kind"):
        query = query.where(CommandTask.kind == args["kind"])
    if args.get("mine", "false").lower() == "true":
        query = query.where(CommandTask.owner == user)
    if args.get("active", "false").lower() == "true":
        query = query.where(CommandTask.state.in_(tasks.ACTIVE_STATES))
    total = db().scalar(select(func.count()).select_from(query.subquery()))
    rows = db().scalars(query.order_by(CommandTask.id.desc())
                        .limit(int_arg("limit", 100, hi=1000))
                        .offset(int_arg("offset", 0))).all()
    positions = tasks.queue_positions(db(), rows)
    return {"tasks": [with_reason_words(tasks.task_json(t, positions.get(t.id)), "reason",
                                        "reason_words") for t in rows], "total": total}


@bp.get("/tasks/<int:task_id>")
def describe_task(task_id: int) -> Any:
    """One task with its state history and queue position."""
    task = task_for(task_id)
    body = with_reason_words(tasks.task_json(task, tasks.queue_positions(db(), [task])
                                             .get(task.id)), "reason", "reason_words")
    body["history"] = history("task", task_id)
    found = task_failure_of(task, body["history"])
    body["failure"] = None if found is None else found.as_json()
    return {"task": body}


FAILURE_TAIL = 200  # lines of each log file the failure summary reads (and the page shows)


def log_tail(task: CommandTask, stream: str, lines: int = FAILURE_TAIL) -> list[LogLine]:
    """The last ``lines`` lines of the task's ``output`` or ``error`` file, each line's id
    its byte offset (OSError, DomainError: the file cannot be read)."""
    read = tasks.read_log(task, stream, tail_lines=lines, limit=lines * MAX_LINE,
                          files=_backend().transport)
    return tail_lines(read["text"], read["offset"])


def task_tails(task: CommandTask) -> dict[str, list[LogLine]]:
    """The tail of each log file, by stream; one that cannot be read (unreachable, odd) is
    left out: the state still tells."""
    found: dict[str, list[LogLine]] = {}
    for stream in ("output", "error"):
        try:
            found[stream] = log_tail(task, stream)
        except (OSError, DomainError):
            continue
    return found


def task_failure_of(task: CommandTask, changes: list[dict[str, Any]],
                    tails: Mapping[str, list[LogLine]] | None = None) -> Failure | None:
    """Why an ERROR or CANCELED task ended: its job's end and its logs' tails (``tails``,
    else read now; error file last: the scheduler's and the shell's lines land there);
    ``changes``: its history (who cancelled it). Also the web task page's summary."""
    if task.state not in ("ERROR", "CANCELED"):
        return None
    tails = task_tails(task) if tails is None else tails
    tail = [line for stream in ("output", "error") for line in tails.get(stream, [])]
    actors = [c.get("actor") for c in changes if c.get("actor") not in (None, "system")]
    by = actors[-1] if task.state == "CANCELED" and actors else None
    found = task_failure(task.state, task.native_state, task.exit_code, tail, by)
    return None if found is None else with_time_limit(found, task.config)


@bp.post("/tasks/<int:task_id>/kill")
def kill_task(task_id: int) -> Any:
    """Cancel the task's job (the reconciler runs scancel within a cycle)."""
    task = task_for(task_id, CHANGE)
    tasks.request_kill(db(), task, current_user())
    db().commit()
    return {"task": tasks.task_json(task)}


@bp.get("/tasks/<int:task_id>/logs")
def task_logs(task_id: int) -> Any:
    """A chunk of the task's output (``stream=output``) or error file, from ``offset``
    (bytes), or its last ``tail`` lines."""
    task = task_for(task_id)
    tail = request.args.get("tail")
    return tasks.read_log(task, request.args.get("stream", "output"),
                          offset=int_arg("offset", 0, hi=2**62),
                          limit=int_arg("limit", tasks.MAX_LOG_CHUNK, lo=1,
                                        hi=tasks.MAX_LOG_CHUNK),
                          tail_lines=None if tail is None else int_arg("tail", 0, hi=10**6),
                          files=_backend().transport)
