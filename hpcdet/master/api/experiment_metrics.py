"""What the experiment page draws: per-trial metric series, and the ASHA rungs of the trials.

* ``GET /experiments/<id>/metrics?group=validation|training&name=METRIC``: one metric of
  every trial over ``steps_completed``, read in one query for all trials (default: the
  validation values of the searcher metric); ``trial_id=`` (repeatable) keeps only those
  trials, ``max_points=N`` downsamples each trial's series to N points (LTTB).
* ``GET /experiments/<id>/rungs``: the rung each trial of an ``adaptive_asha`` experiment
  has reached (:mod:`hpcdet.master.experiments.asha_rungs`); empty for other searchers.
"""

from __future__ import annotations

from typing import Any

from flask import request
from sqlalchemy import select
from sqlalchemy.orm import Session

from hpcdet.master.api.access import experiment_for
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, int_arg
from hpcdet.master.errors import Invalid
from hpcdet.master.experiments.asha_rungs import RungReached, rungs_by_trial
from hpcdet.master.experiments.searcher_store import current_state
from hpcdet.master.models import Experiment, Metric, Trial
from hpcdet.master.reports.downsample import lttb, series_points
from hpcdet.master.reports.searcher_metric import SearcherMetric

# The groups a series can be drawn from (profiling samples are system metrics, per node).
SERIES_GROUPS = ("validation", "training")
MAX_POINTS = 5000


@bp.get("/experiments/<int:exp_id>/metrics")
def experiment_metric_series(exp_id: int) -> Any:
    """``{"metric", "group", "trials": [{"trial_id", "points": [{"steps_completed", "value"}]}]}``.

    Only trials with at least one point are listed, in id order, points in step order.
    """
    exp = experiment_for(exp_id)
    group = request.args.get("group") or "validation"
    if group not in SERIES_GROUPS:
        raise Invalid("bad_request", f"group: must be one of {', '.join(SERIES_GROUPS)}")
    name = request.args.get("name") or SearcherMetric.of(exp.config).name
    if not name:
        raise Invalid("bad_request", "name: the experiment has no searcher.metric; "
                      "name the metric")
    trial_ids = [int_arg_value("trial_id", raw) for raw in request.args.getlist("trial_id")]
    max_points = int_arg("max_points", 0, lo=3, hi=MAX_POINTS) if request.args.get(
        "max_points") else None
    if max_points is not None and trial_ids:  # the pages' comparison: long series, few trials
        return {"metric": name, "group": group,
                "trials": picked_series(db(), exp_id, group, name, trial_ids, max_points)}
    series = metric_series(db(), exp_id, group, name, trial_ids or None)
    if max_points is not None:
        series = [downsampled(entry, max_points) for entry in series]
    return {"metric": name, "group": group, "trials": series}


def picked_series(session: Session, exp_id: int, group: str, name: str, trial_ids: list[int],
                  max_points: int) -> list[dict[str, Any]]:
    """The picked trials' series, each downsampled in SQL (no trial's rows all loaded)."""
    own = set(session.scalars(select(Trial.id).where(Trial.experiment_id == exp_id,
                                                     Trial.id.in_(trial_ids))))
    out = []
    for trial_id in sorted(own):
        _, points = series_points(session, trial_id, group, name, max_points)
        if points:
            out.append({"trial_id": trial_id, "points": [
                {"steps_completed": int(step), "value": value} for step, value in points]})
    return out


def int_arg_value(name: str, raw: str) -> int:
    """A repeated integer query parameter's value, or a 400."""
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
        raise Invalid("bad_request", f"query parameter {name}: not an id")
    return int(raw)


def downsampled(entry: dict[str, Any], max_points: int) -> dict[str, Any]:
    """One trial's series with at most ``max_points`` points (first, last and spikes kept)."""
    points = lttb([(p["steps_completed"], p["value"]) for p in entry["points"]], max_points)
    return {"trial_id": entry["trial_id"],
            "points": [{"steps_completed": int(s), "value": v} for s, v in points]}


def metric_series(session: Session, exp_id: int, group: str, name: str,
                  trial_ids: list[int] | None = None) -> list[dict[str, Any]]:
    """Every trial's ``name`` values in ``group``, with one query for all trials.

    Rows a later run rolled back (``archived``) are hidden; were a step reported twice,
    the later row wins, as in the trial's latest validation.
    """
    rows = session.execute(
        select(Metric.trial_id, Metric.steps_completed, Metric.value)
        .join(Trial, Trial.id == Metric.trial_id)
        .where(Trial.experiment_id == exp_id, Metric.group == group, Metric.name == name,
               Metric.archived.is_(False),
               *([Metric.trial_id.in_(trial_ids)] if trial_ids else []))
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
    return rungs_by_trial(current_state(session, exp), request_ids)
