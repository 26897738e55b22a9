"""``/tasks/<id>``: one task (command, notebook, shell, TensorBoard, det sbatch/qsub script):
its state, owner and times, the failure summary of an errored or cancelled one, and its log.

The facts are ``GET /api/v1/tasks/<id>``'s; the summary is the API's too
(:func:`hpcdet.master.api.tasks.task_failure_of`, the one classifier of
:mod:`hpcdet.master.reports.failure`), read from the same log tails the page shows: the
last :data:`~hpcdet.master.api.tasks.FAILURE_TAIL` lines of the chosen file (``?stream=``
``output`` or ``error``; by default the one holding the summary's last error line, else
the output), each line marked as the trial page marks it (:func:`trial_logs.log_level`)
and anchored ``#log-<byte offset>``. While the task is active, ``static/tasks.js`` refetches
the page and swaps in its live part (facts, summary, log), as the Tasks list does.
A task the browser's user may not see is the same 404 page as one that does not exist.
"""

from __future__ import annotations

from typing import Any

from flask import render_template, request

from hpcdet.master.api.common import db, with_reason_words
from hpcdet.master.api.rows import history
from hpcdet.master.api.tasks import task_failure_of, task_tails
from hpcdet.master.models import CommandTask
from hpcdet.master.reports.failure import Failure, LogLine
from hpcdet.master.scheduling.tasks import ACTIVE_STATES, task_json
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.formatting import poll_seconds
from hpcdet.master.web.identity import page_sees
from hpcdet.master.web.trial_logs import log_level


@bp.get("/tasks/<int:task_id>")
def task_page(task_id: int) -> tuple[str, int]:
    """The task page; an unknown (or unseen) task is a 404 page in the layout."""
    found = db().get(CommandTask, task_id)
    if found is None or not page_sees(found.owner, found.workspace_id):
        return render_template("task.html", page="tasks", task_id=task_id,
                               error=f"task {task_id} not found"), 404
    return render_template("task.html", page="tasks", task_id=task_id, error=None,
                           **page_data(found)), 200


def page_data(task: CommandTask) -> dict[str, Any]:
    """What task.html renders: the task, its summary and the chosen log's tail."""
    body = with_reason_words(task_json(task), "reason", "reason_words")
    tails = task_tails(task)
    failure = task_failure_of(task, history("task", task.id), tails)
    # The error file is offered when it has lines even if the task named none of its own
    # (the scheduler's and the shell's lines land there).
    streams = [s for s in ("output", "error") if s in body["log_streams"] or tails.get(s)]
    where = failure_stream(failure, tails)
    stream = request.args.get("stream", "")
    if stream not in streams:
        stream = where or streams[0]
    return {"t": body, "failure": None if failure is None else failure.as_json(),
            "failure_stream": where, "streams": streams, "stream": stream,
            "lines": tails.get(stream), "log_level": log_level,
            "active": task.state in ACTIVE_STATES, "poll_seconds": poll_seconds()}


def failure_stream(failure: Failure | None, tails: dict[str, list[LogLine]]) -> str | None:
    """The stream whose tail holds the summary's last error line (None without one)."""
    last = None if failure is None else failure.last_error
    return next((s for s, lines in tails.items() if last is not None and last in lines), None)

