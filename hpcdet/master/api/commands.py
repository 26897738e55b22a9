"""Command routes (``det cmd run``): submit a command as a command task.

Listing, describing, logs and kills are the task routes (``/tasks?kind=command``,
``/tasks/<id>``, ``/tasks/<id>/logs``, ``/tasks/<id>/kill``): a command is a task whose
script the master wrote (docs/commands.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import current_app

from hpcdet.dispatcher import Backend
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, json_body, settings
from hpcdet.master.api.tasks import submit_tracked
from hpcdet.master.models import CommandTask
from hpcdet.master.scheduling import commands, task_submission, tasks
from hpcdet.master.security.workspaces import placement_for


def _backend() -> Backend:
    backend: Backend = current_app.config["HPCDET_BACKEND"]
    return backend


@bp.post("/commands")
def create_command() -> Any:
    """Run ``entrypoint`` (a list of words) with ``config`` (Determined's command config)
    and ``context`` (a base64 tar.gz, optional); 201 with the task and the config's
    ``warnings``. With ``test_only`` nothing is submitted: the answer holds the wrapper
    script and argv. ``"workspace": NAME`` shares it with the workspace's members."""
    owner = current_user()
    body = json_body()
    workspace_id, _ = placement_for(db(), settings(), owner, body.get("workspace"), None)
    planned = commands.plan_command(db(), settings(), _backend(), body, owner)
    return submit_planned(planned, workspace_id)


def submit_planned(planned: commands.CommandPlan, workspace_id: int | None,
                   extra: Callable[[CommandTask], dict[str, Any]] | None = None,
                   attach: Callable[[CommandTask], None] | None = None) -> Any:
    """The answer of a route that planned a task whose script the master writes: with
    ``test_only`` the preview (nothing submitted), else the submitted task, its config's
    warnings and ``extra(task)`` (201). ``attach`` changes the kind's own rows in the
    submit's commit (:func:`~hpcdet.master.api.tasks.submit_tracked`)."""
    plan = planned.plan
    if plan.request.test_only:
        preview = task_submission.preview(settings(), _backend(), plan)
        return {"test_only": True, "script": plan.request.script, "wrapper": preview.script,
                "argv": list(preview.argv), "pool": plan.pool,
                "partition": plan.spec.partition, "warnings": planned.warnings}
    task = submit_tracked(plan, workspace_id, attach)
    return {"task": tasks.task_json(task), "warnings": planned.warnings,
            **(extra(task) if extra is not None else {})}, 201
