"""TensorBoard routes (``det tensorboard start``): start a TensorBoard as a command task.

Listing, describing, logs and kills are the task routes (``/tasks?kind=tensorboard``,
``/tasks/<id>``, ``/tasks/<id>/logs``, ``/tasks/<id>/kill``); see docs/tensorboard.md.
"""

from __future__ import annotations

from typing import Any

from flask import current_app

from hpcdet.dispatcher import Backend
from hpcdet.master.api.access import experiment_for, trial_for
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.commands import submit_planned
from hpcdet.master.api.common import db, json_body, settings
from hpcdet.master.errors import Invalid
from hpcdet.master.scheduling import tensorboards
from hpcdet.master.security.workspaces import placement_for

MAX_IDS = 100


def _backend() -> Backend:
    backend: Backend = current_app.config["HPCDET_BACKEND"]
    return backend


def _ids(body: dict[str, Any], key: str) -> list[int]:
    raw = body.get(key) or []
    if not isinstance(raw, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in raw):
        raise Invalid("bad_request", f"{key}: must be a list of ids (whole numbers)")
    if len(raw) > MAX_IDS:
        raise Invalid("bad_request", f"{key}: at most {MAX_IDS} ids")
    return list(dict.fromkeys(raw))


@bp.post("/tensorboards")
def create_tensorboard() -> Any:
    """Start TensorBoard over ``experiment_ids`` and ``trial_ids`` (one at least; each must
    exist and be readable by the caller: 404 naming it) with ``config`` (Determined's
    command config) and ``context``; 201 with the task and the config's ``warnings``.
    ``test_only`` submits nothing and answers the wrapper script and argv."""
    owner = current_user()
    body = json_body()
    experiment_ids, trial_ids = _ids(body, "experiment_ids"), _ids(body, "trial_ids")
    if not experiment_ids and not trial_ids:
        raise Invalid("bad_request", "name at least one experiment (experiment_ids) "
                      "or trial (trial_ids)")
    for exp_id in experiment_ids:
        experiment_for(exp_id)
    for trial_id in trial_ids:
        trial_for(trial_id)
    workspace_id, _ = placement_for(db(), settings(), owner, body.get("workspace"), None)
    planned = tensorboards.plan_tensorboard(db(), settings(), _backend(), body, owner,
                                            experiment_ids, trial_ids)
    return submit_planned(planned.planned, workspace_id, attach=planned.identity.name_after)
