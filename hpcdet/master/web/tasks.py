"""``/tasks``: commands, TensorBoards (notebooks, shells) and det sbatch/qsub tasks.

The rows are ``GET /api/v1/tasks``'s (:func:`hpcdet.master.api.tasks.task_listing`, the same
query and visibility) with, per row, an Open link for a running proxied service (a
TensorBoard's or notebook's ``/proxy/<id>/``) and a Kill button for those who may change
the task (the experiments' confirmed-action pattern: ``POST /api/v1/tasks/<id>/kill`` with
the session's CSRF token). ``static/tasks.js`` re-fetches the page's table for as long as
the page is open (a task started later appears without a reload), so the rows keep being
rendered (and the buttons decided) on the server only.
Query: ``kind`` and ``active=true`` narrow the list, as in the API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import render_template, request

from hpcdet.master.api.tasks import task_listing
from hpcdet.master.scheduling.tasks import ACTIVE_STATES
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.formatting import poll_seconds, time_text
from hpcdet.master.web.identity import page_user

# The kinds the filter offers (CommandTask.kind); a proxied kind's running task gets Open.
KINDS = ("batch", "command", "notebook", "shell", "tensorboard")
# What the page calls each kind (the filter's value and data-kind stay the API's).
KIND_WORDS = {"batch": "batch job", "command": "command", "notebook": "notebook",
              "shell": "shell", "tensorboard": "TensorBoard"}
PROXIED = ("notebook", "tensorboard")
KILLABLE = ("QUEUED", "RUNNING")


@bp.get("/tasks")
def tasks() -> tuple[str, int]:
    """The tasks the browser's user may see, newest first (at most ``limit``, 100)."""
    kind = request.args.get("kind") or ""
    active = request.args.get("active", "") == "true"
    args = {"kind": kind} if kind in KINDS else {}
    if active:
        args["active"] = "true"
    listing = task_listing(page_user(), args)
    return render_template("tasks.html", page="tasks", rows=[row(t) for t in listing["tasks"]],
                           total=listing["total"], kinds=KINDS, kind=args.get("kind", ""),
                           kind_words=KIND_WORDS,
                           active=active, poll_seconds=poll_seconds(),
                           fmt_time=time_text), 200


def row(task: Mapping[str, Any]) -> dict[str, Any]:
    """A task as the table shows it; ``open_url`` for a running proxied service."""
    running = task["state"] == "RUNNING"
    return {**task,
            "open_url": f"/proxy/{task['id']}/" if running and task["kind"] in PROXIED
            else None,
            "killable": task["state"] in KILLABLE and not task["cancel_requested"],
            "active": task["state"] in ACTIVE_STATES}
