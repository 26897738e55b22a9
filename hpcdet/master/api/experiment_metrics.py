"""What the experiment page draws: per-trial metric series, and the ASHA rungs of the trials.

* ``GET /experiments/<id>/metrics?group=validation|training&name=METRIC``: one metric of
  every trial over ``steps_completed``, read in one query for all trials (default: the
  validation values of the searcher metric).
* ``GET /experiments/<id>/rungs``: the rung each trial of an ``adaptive_asha`` experiment
  has reached (:mod:`hpcdet.master.experiments.asha_rungs`); empty for other searchers.
"""

from __future__ import annotations

from typing import Any

from flask import request
from sqlalchemy import select
from sqlalchemy.orm import Session

from hpcdet.master.api import bp
from hpcdet.master.api.access import experiment_for
from hpcdet.master.api.common import db
from hpcdet.master.errors import ApiError
from hpcdet.master.experiments.asha_rungs import RungReached, rungs_by_trial
from hpcdet.master.models import Experiment, Metric, Trial
from hpcdet.master.reports.searcher_metric import SearcherMetric

# The groups a series can be drawn from (profiling samples are system metrics, per node).
SERIES_GROUPS = ("validation", "training")


@bp.get("/experiments/<int:exp_id>/metrics")
def experiment_metric_series(exp_id: int) -> Any:
    """``{"metric", "group", "trials": [{"trial_id", "points": [{"steps_completed", "value"}]}]}``.

    Only trials with at least one point are listed, in id order, points in step order.
    """
    exp = experiment_for(exp_id)
    group = request.args.get("group") or "validation"
    if group not in SERIES_GROUPS:
        raise ApiError(400, "bad_request", f"group: must be one of {', '.join(SERIES_GROUPS)}")
    name = request.args.get("name") or SearcherMetric.of(exp.config).name
    if not name:
        raise ApiError(400, "bad_request", "name: the experiment has no searcher.metric; "
                       "name the metric")
    return {"metric": name, "group": group, "trials": metric_series(db(), exp_id, group, name)}


def metric_series(session: Session, exp_id: int, group: str, name: str) -> list[dict[str, Any]]:
    """Every trial's ``name`` values in ``group``, with one query for all trials.

    Rows a later run rolled back (``archived``) are hidden; were a step reported twice,
    the later row wins, as in the trial's latest validation.
    """
    rows = session.execute(
        select(Metric.trial_id, Metric.steps_completed, Metric.value)
        .join(Trial, Trial.id == Metric.trial_id)
        .where(Trial.experiment_id == exp_id, Metric.group == group, Metric.name == name,
               Metric.archived.is_(False))
        .order_by(Metric.trial_id, Metric.steps_completed, Metric.id))
    by_trial: dict[int, dict[int, float]] = {}
    for trial_id, steps, value in rows:
        by_trial.setdefault(trial_id, {})[steps] = value
    return [{"trial_id": trial_id,
             "points": [{"steps_completed": s, "value": v} for s, v in points.items()]}
            for trial_id, points in by_trial.items()]


@bp.get("/experiments/<int:exp_id>/rungs")
def experiment_rungs(exp_id: int) -> Any:
    """``{"searcher", "rungs": [{"trial_id", "rung", "num_rungs", "bracket", ...}]}``."""
    return rungs_answer(db(), experiment_for(exp_id))


def rungs_answer(session: Session, exp: Experiment) -> dict[str, Any]:
    """The rungs answer: the trials the ASHA searcher knows, in trial id order."""
    return {"searcher": exp.searcher_name,
            "rungs": [{"trial_id": trial_id, **rung.to_json()}
                      for trial_id, rung in sorted(trial_rungs(session, exp).items())]}


def trial_rungs(session: Session, exp: Experiment) -> dict[int, RungReached]:
    """The rung of each of ``exp``'s trials that its ASHA searcher knows."""
    if exp.searcher_name != "adaptive_asha" or not exp.searcher_state:
        return {}  # no query: other searchers have no rungs
    request_ids: dict[int, str | None] = {
        trial_id: request_id for trial_id, request_id in session.execute(
            select(Trial.id, Trial.request_id).where(Trial.experiment_id == exp.id))}
    return rungs_by_trial(exp.searcher_state, request_ids)
