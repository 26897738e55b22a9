"""What a running trial asks and tells the master outside its metrics: stop? exited early.

Both routes take the trial's bearer token, like the other routes the harness calls.

* ``GET /trials/<id>/preemption``: whether the trial's code should checkpoint and exit
  now. Every running trial's chief polls it, so it costs one primary-key read.
* ``POST /trials/<id>/early_exit``: the code's reason for stopping early (``invalid_hp``
  and friends). It is only recorded; the reconciler acts on it when the job ends.
* ``GET /trials/<id>/experiment_best_validation``: the best value of the searcher metric
  any trial of the experiment has reported (for ``checkpoint_policy: best``).
* ``POST /trials/<id>/progress``: the trial's own progress (``report_progress``, a fraction).
  An experiment of one trial (searcher ``single``) shows it as its progress; with more
  trials the searcher's progress stays (the report is accepted and not stored).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from hpcdet.job.early_exit import EarlyExitReason
from hpcdet.master.api.auth import require_token, require_trial_token
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, get_or_404, json_body
from hpcdet.master.errors import Invalid, NotFound
from hpcdet.master.models import Experiment, Trial
from hpcdet.master.reports.searcher_metric import SearcherMetric
from hpcdet.states import State


@bp.get("/trials/<int:trial_id>/preemption")
def trial_preemption(trial_id: int) -> Any:
    """``{"preempt": true}`` once the master is stopping the trial (a STOPPING_* state) or
    pausing it (PAUSED): its code should checkpoint and exit. An unmanaged trial's script
    also hears it once the master ended the trial (killed with no job to wait for)."""
    row = db().execute(
        select(Trial.state, Trial.token, Experiment.unmanaged)
        .join(Experiment, Experiment.id == Trial.experiment_id).where(Trial.id == trial_id)
    ).one_or_none()
    if row is None:
        raise NotFound("not_found", f"trial {trial_id} not found")
    state, token, unmanaged = row
    require_token(trial_id, token)
    current = State(state)
    ended = bool(unmanaged) and current.is_terminal
    return {"preempt": current.is_stopping or current is State.PAUSED or ended}


@bp.post("/trials/<int:trial_id>/early_exit")
def report_early_exit(trial_id: int) -> Any:
    """Record why the trial's code exits early; the first reason reported is kept."""
    trial = get_or_404(Trial, trial_id, "trial")
    require_trial_token(trial)
    reason = _reason(json_body().get("reason"))
    # A retried POST, or the harness reporting after the script did, must not change the
    # reason the trial already gave (Determined keeps the first one too).
    if trial.early_exit is None:
        trial.early_exit = reason.value
        db().commit()
    return {}


def _reason(value: Any) -> EarlyExitReason:
    try:
        return EarlyExitReason.parse(value)
    except ValueError as exc:
        raise Invalid("bad_request", f"reason: {exc}") from None


@bp.post("/trials/<int:trial_id>/progress")
def report_progress(trial_id: int) -> Any:
    """Record the trial's progress as its experiment's, for single-trial experiments."""
    trial = get_or_404(Trial, trial_id, "trial")
    require_trial_token(trial)
    progress = json_body().get("progress")
    if isinstance(progress, bool) or not isinstance(progress, int | float) or not (
            0 <= progress <= 1):
        raise Invalid("bad_request", "progress: must be a number from 0 to 1")
    exp = db().get(Experiment, trial.experiment_id)
    if exp is not None and exp.searcher_name == "single" and float(progress) > exp.progress:
        exp.progress = float(progress)
        db().commit()
    return {}


@bp.get("/trials/<int:trial_id>/experiment_best_validation")
def experiment_best_validation(trial_id: int) -> Any:
    """``{"best": value or null}``: the experiment's best searcher metric so far."""
    trial = get_or_404(Trial, trial_id, "trial")
    require_trial_token(trial)
    config = db().scalars(select(Experiment.config).where(
        Experiment.id == trial.experiment_id)).one()
    metric = SearcherMetric.of(config)
    values = [value for best in db().scalars(
        select(Trial.best_validation).where(Trial.experiment_id == trial.experiment_id))
        if (value := metric.value_in((best or {}).get("metrics"))) is not None]
    return {"best": min(values, key=metric.key) if values else None}
