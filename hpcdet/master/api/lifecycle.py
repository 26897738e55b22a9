"""Experiment lifecycle routes: pause, activate, cancel, kill, archive, unarchive."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from hpcdet.master import serialize
from hpcdet.master.api import bp
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.common import db, get_or_404
from hpcdet.master.api.experiments import _trials_of
from hpcdet.master.errors import ApiError
from hpcdet.master.models import Experiment, Trial
from hpcdet.master.transitions import transition
from hpcdet.states import State


@bp.post("/experiments/<int:exp_id>/kill")
def kill_experiment(exp_id: int) -> Any:
    """Stop every trial now: queued jobs are withdrawn and running ones cancelled."""
    actor = current_user()
    exp = get_or_404(Experiment, exp_id, "experiment")
    if State(exp.state).is_terminal:
        raise ApiError(409, "conflict", f"experiment {exp_id} already ended {exp.state}")
    transition(db(), exp, State.STOPPING_KILLED, cause="kill requested", actor=actor)
    for trial in db().scalars(select(Trial).where(Trial.experiment_id == exp_id)).all():
        if not State(trial.state).is_terminal:
            transition(db(), trial, State.STOPPING_KILLED, cause="experiment killed",
                       actor=actor)
    db().commit()
    return {"experiment": serialize.experiment(exp, len(_trials_of(exp_id)))}
