"""``GET /trials/<id>/metrics/series``: metrics of one trial, downsampled for a chart.

The pages draw from this route rather than ``GET /trials/<id>/metrics`` (which stays at full
resolution for scripts): each named metric comes back as at most ``max_points`` points
(LTTB, :mod:`hpcdet.master.reports.downsample`), each point with every x the page may draw
against: ``batches`` (the step), ``epochs`` and ``records`` (the counters the trainer
reports beside the metrics, where it did) and ``time`` (when it was reported, epoch
seconds). The answer also lists the group's metric names, counters left out: a counter is an
x axis, never a metric.
"""

from __future__ import annotations

from typing import Any

from flask import request
from sqlalchemy import text
from sqlalchemy.orm import Session

from hpcdet.master.api.access import trial_for
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, int_arg
from hpcdet.master.errors import Invalid
from hpcdet.master.reports.downsample import (
    COUNTERS,
    series_points,
    times_at_steps,
    values_at_steps,
)
from hpcdet.master.reports.reports import metric_group

DEFAULT_POINTS = 500
MAX_POINTS = 5000
MAX_NAMES = 24  # a profiler chart draws one series per node or rank; more is not a chart

# Every distinct name of one trial's group, one index probe per name (a loose index scan
# on ix_metrics_trial_group_name_step) instead of reading every row: a long trial has a
# million rows but a dozen names. (Rows a later run rolled back are hidden, as everywhere.)
_NAMES_SQL = text("""
WITH RECURSIVE found(name) AS (
  SELECT MIN(name) FROM metrics
  WHERE trial_id = :trial AND "group" = :group AND archived = :archived
  UNION ALL
  SELECT (SELECT MIN(m.name) FROM metrics m
          WHERE m.trial_id = :trial AND m."group" = :group AND m.archived = :archived
            AND m.name > found.name)
  FROM found WHERE found.name IS NOT NULL
)
SELECT name FROM found WHERE name IS NOT NULL
""")


def group_names(session: Session, trial_id: int, group: str) -> list[str]:
    """Every metric name reported in ``group`` by the trial (counters included), sorted."""
    return [str(name) for (name,) in session.execute(_NAMES_SQL,
                                                     {"trial": trial_id, "group": group,
                                                      "archived": False})]


def chart_names(names: list[str]) -> list[str]:
    """The names a chart offers as metrics: all but the counters."""
    return [name for name in names if name not in COUNTERS]


@bp.get("/trials/<int:trial_id>/metrics/series")
def read_metric_series(trial_id: int) -> Any:
    """``{"group", "max_points", "names", "counters", "series": [{"name", "rows", "points"}]}``.

    ``name`` (repeatable) picks the metrics; none gives only the names. Each point is
    ``{"batches", "value", "time", "epochs"?, "records"?}``.
    """
    trial_for(trial_id)
    group = metric_group(request.args.get("group") or "training")
    max_points = int_arg("max_points", DEFAULT_POINTS, lo=3, hi=MAX_POINTS)
    wanted = [name for name in request.args.getlist("name") if name]
    if len(wanted) > MAX_NAMES:
        raise Invalid("bad_request", f"name: at most {MAX_NAMES} metrics at a time")
    return series_answer(db(), trial_id, group, wanted, max_points)


def series_answer(session: Session, trial_id: int, group: str, wanted: list[str],
                  max_points: int) -> dict[str, Any]:
    """The route's answer (also what the trial page embeds for its first drawing)."""
    names = group_names(session, trial_id, group)
    counters = [name for name in COUNTERS if name in names]
    series = [one_series(session, trial_id, group, name, max_points, counters)
              for name in wanted]
    return {"group": group, "max_points": max_points, "names": chart_names(names),
            "counters": counters, "series": series}


def one_series(session: Session, trial_id: int, group: str, name: str, max_points: int,
               counters: list[str]) -> dict[str, Any]:
    """One metric's downsampled points, each with the step, its counters and its time."""
    rows, points = series_points(session, trial_id, group, name, max_points)
    steps = [int(step) for step, _ in points]
    extra = {counter: values_at_steps(session, trial_id, group, counter, steps)
             for counter in counters if counter != "batches"}
    times = times_at_steps(session, trial_id, group, name, steps)
    out = []
    for step, value in points:
        point: dict[str, Any] = {"batches": int(step), "value": value,
                                 "time": times.get(int(step))}
        for counter, values in extra.items():
            if int(step) in values:
                point[counter] = values[int(step)]
        out.append(point)
    return {"name": name, "rows": rows, "points": out}
