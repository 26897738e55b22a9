"""Experiment lifecycle routes: pause, activate, cancel, kill, archive, unarchive."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hpcdet.master.api.access import CHANGE, experiment_for
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db
from hpcdet.master.errors import NotFound
from hpcdet.master.experiments import lifecycle
from hpcdet.master.models import Experiment, Trial
from hpcdet.master.reports import serialize

_ACTIONS: dict[str, Callable[[Session, Experiment, str], None]] = {
    "pause": lifecycle.pause,
    "activate": lifecycle.activate,
    "cancel": lifecycle.cancel,
    "kill": lifecycle.kill,
    "archive": lambda session, exp, actor: lifecycle.set_archived(exp, True),
    "unarchive": lambda session, exp, actor: lifecycle.set_archived(exp, False),
}


# Only these words: POST /experiments/<id>/trials is then 405 (that path is GET-only), not
# a lifecycle 404, and the OpenAPI description lists the actions.
@bp.post(f"/experiments/<int:exp_id>/<any({', '.join(_ACTIONS)}):action>")
def change_lifecycle(exp_id: int, action: str) -> Any:
    """Pause, activate, cancel, kill, archive or unarchive (master/experiments/lifecycle.py).

    Only who may change it may (403; 404 for one the caller cannot see, :mod:`authz`).
    """
    actor = current_user()
    change = _ACTIONS.get(action)
    if change is None:
        raise NotFound("not_found", f"no experiment action {action!r} (known: "
                       f"{', '.join(_ACTIONS)})")
    exp = experiment_for(exp_id, CHANGE, actor)
    change(db(), exp, actor)
    db().commit()
    trials = db().scalar(select(func.count()).where(Trial.experiment_id == exp_id)) or 0
    return {"experiment": serialize.experiment(exp, trials)}
