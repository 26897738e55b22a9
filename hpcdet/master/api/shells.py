"""Shell routes (``det shell``): start a shell, and hand its owner the keys to open it.

A shell is a command task of kind ``shell`` (docs/shell.md): listing, describing, logs and
kills are the task routes (``/tasks?kind=shell``, ``/tasks/<id>``...).
"""

from __future__ import annotations

from typing import Any

from flask import current_app

from hpcdet.dispatcher import Backend
from hpcdet.master.api.access import task_for
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, json_body, settings
from hpcdet.master.api.tasks import submit_tracked
from hpcdet.master.errors import Forbidden, NotFound
from hpcdet.master.models import CommandTask, ShellKey
from hpcdet.master.scheduling import shells, task_submission, tasks
from hpcdet.master.security.workspaces import placement_for
from hpcdet.states import State


def _backend() -> Backend:
    backend: Backend = current_app.config["HPCDET_BACKEND"]
    return backend


@bp.post("/shells")
def create_shell() -> Any:
    """Start a shell with ``config`` (Determined's command config; ``idle_timeout`` ends
    it after that long without an SSH session) and ``context`` (a base64 tar.gz,
    optional); 201 with the task and the config's ``warnings``. ``test_only``: the
    scripts and argv, nothing submitted."""
    owner = current_user()
    body = json_body()
    workspace_id, _ = placement_for(db(), settings(), owner, body.get("workspace"), None)
    planned = shells.plan_shell(db(), settings(), _backend(), body, owner)
    plan = planned.planned.plan
    warnings = planned.planned.warnings
    if plan.request.test_only:
        preview = task_submission.preview(settings(), _backend(), plan)
        return {"test_only": True, "script": plan.request.script, "wrapper": preview.script,
                "argv": list(preview.argv), "pool": plan.pool,
                "partition": plan.spec.partition, "warnings": warnings}
    task = submit_tracked(plan, workspace_id,
                          attach=lambda task: db().add(shells.key_row(task, planned.keys)))
    return {"task": tasks.task_json(task), "warnings": warnings}, 201


@bp.get("/shells/<int:task_id>/keys")
def shell_keys(task_id: int) -> Any:
    """What the owner's ``det`` needs to open the shell: the client's private key, the
    sshd's host public key and, once the job's sshd listens, its host, port and user
    (``ready``); no keys once the shell has ended. Only the shell's owner gets them (403
    for anyone else who may see it)."""
    task = _shell(task_id)
    if task.owner != current_user():
        raise Forbidden("forbidden", f"only the owner of shell {task_id} may open it")
    row = db().get(ShellKey, task_id)
    if row is None:
        raise NotFound("not_found", f"shell {task_id} has no keys")
    service = None
    if task.state == State.RUNNING.value:
        service = shells.read_service(task, _backend().transport)
    active = task.state in tasks.ACTIVE_STATES  # an ended shell's key opens nothing
    return {"task_id": task.id, "state": task.state, "ready": service is not None,
            **(service or {"host": None, "port": None, "user": None}),
            "client_private_key": row.client_private_key if active else None,
            "host_public_key": row.host_public_key if active else None}


def _shell(task_id: int) -> CommandTask:
    task = task_for(task_id)
    if task.kind != task_submission.SHELL:
        raise NotFound("not_found", f"task {task_id} is not a shell")
    return task
