"""Notebook routes (``det notebook start``): submit JupyterLab as a notebook task.

Listing, describing, logs and kills are the task routes (``/tasks?kind=notebook``,
``/tasks/<id>``, ``/tasks/<id>/logs``, ``/tasks/<id>/kill``); the notebook itself is reached
through the master's proxy at ``/proxy/<id>/`` (docs/notebooks.md).
"""

from __future__ import annotations

from typing import Any

from flask import current_app

from hpcdet.dispatcher import Backend
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.commands import submit_planned
from hpcdet.master.api.common import db, json_body, settings
from hpcdet.master.models import CommandTask
from hpcdet.master.scheduling import notebooks
from hpcdet.master.security.workspaces import placement_for

PROXY_PATH = "/proxy/{task_id}/"


def _backend() -> Backend:
    backend: Backend = current_app.config["HPCDET_BACKEND"]
    return backend


@bp.post("/notebooks")
def create_notebook() -> Any:
    """Start JupyterLab with ``config`` (Determined's notebook config: resources,
    ``idle_timeout``...) and ``context`` (a base64 tar.gz, optional); 201 with the task,
    the notebook's ``url`` (its path under the master) and the config's ``warnings``."""
    owner = current_user()
    body = json_body()
    workspace_id, _ = placement_for(db(), settings(), owner, body.get("workspace"), None)
    plan = notebooks.plan_notebook(db(), settings(), _backend(), body, owner)

    def extra(task: CommandTask) -> dict[str, Any]:
        return {"url": PROXY_PATH.format(task_id=task.id)}

    return submit_planned(plan.planned, workspace_id, extra, plan.identity.name_after)
