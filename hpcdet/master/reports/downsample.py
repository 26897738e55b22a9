"""Downsampling of long metric series for the pages' charts (Largest-Triangle-Three-Buckets).

A chart is a few hundred pixels wide: a trial with a million reported values draws the same
line from a few hundred well-chosen ones. :func:`lttb` picks them (Steinarsson's
Largest-Triangle-Three-Buckets: the first and last point, then per bucket the point making
the largest triangle with the previous pick and the next bucket's mean, so spikes stay).

:func:`series_points` reads one metric of one trial for a chart without loading ORM objects:
a short series (at most :data:`BUCKET_FACTOR` x ``max_points`` rows) is read as two columns
and reduced with LTTB; a longer one is first reduced in SQL to the extremes of
``BUCKET_FACTOR x max_points`` buckets of steps (the lowest and the highest value of each
bucket, each at its own step), and LTTB runs on those.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Float, and_, cast, func, select, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from hpcdet.master.models import Metric

Point = tuple[float, float]

# What the trainer reports beside the metrics to say how far it is: x axes, never metrics.
COUNTERS = ("batches", "epochs", "records")

# Buckets per output point of the SQL pre-reduction: enough that LTTB still chooses.
BUCKET_FACTOR = 4

# A series of at least this many rows is sampled rather than scanned: finding each
# bucket's extremes reads every row (~70 ms for 200,000 rows on PostgreSQL, growing with
# the series), a sample one row a bucket (bench/metrics_scale.py, docs/performance.md).
SAMPLE_ABOVE = 50_000
# Samples per output point: a sample carries no extremes, so fewer probes lose little.
SAMPLE_FACTOR = 2


def lttb(points: Sequence[Point], threshold: int) -> list[Point]:
    """At most ``threshold`` of ``points`` (sorted by x), keeping the first, last and spikes.

    ``threshold`` below 3 or not smaller than the series gives the series (a copy).
    """
    count = len(points)
    if threshold >= count or threshold < 3:
        return list(points)
    picked = [points[0]]
    every = (count - 2) / (threshold - 2)
    chosen = 0
    for bucket in range(threshold - 2):
        start = int(bucket * every) + 1
        end = int((bucket + 1) * every) + 1
        # The next bucket's mean is the triangle's third corner (the last point at the end).
        next_end = min(int((bucket + 2) * every) + 1, count)
        following = points[end:next_end] or [points[-1]]
        mean_x = sum(p[0] for p in following) / len(following)
        mean_y = sum(p[1] for p in following) / len(following)
        ax, ay = points[chosen]
        best_area, best = -1.0, start
        for index in range(start, end):
            px, py = points[index]
            area = abs((ax - mean_x) * (py - ay) - (ax - px) * (mean_y - ay))
            if area > best_area:
                best_area, best = area, index
        picked.append(points[best])
        chosen = best
    picked.append(points[-1])
    return picked


def _visible(trial_id: int, group: str, name: str) -> ColumnElement[bool]:
    return and_(Metric.trial_id == trial_id, Metric.group == group, Metric.name == name,
                Metric.archived.is_(False))


def series_extent(session: Session, trial_id: int, group: str, name: str
                  ) -> tuple[int | None, int | None]:
    """``(first step, last step)`` of one metric of one trial: two index probes (a count, or
    both in one query, would read the whole series on SQLite)."""
    where = _visible(trial_id, group, name)
    return (session.scalar(select(func.min(Metric.steps_completed)).where(where)),
            session.scalar(select(func.max(Metric.steps_completed)).where(where)))


def series_points(session: Session, trial_id: int, group: str, name: str,
                  max_points: int) -> tuple[int, list[Point]]:
    """``(rows in the series, at most max_points (step, value) points)`` in step order."""
    first, last = series_extent(session, trial_id, group, name)
    if first is None or last is None:
        return 0, []
    # A step is reported about once: the span of steps tells a short series from a long one.
    if last - first < max_points * BUCKET_FACTOR:
        rows = session.execute(select(Metric.steps_completed, Metric.value)
                               .where(_visible(trial_id, group, name))
                               .order_by(Metric.steps_completed, Metric.id)).all()
        return len(rows), lttb(_last_per_step(rows), max_points)
    if _at_least(session, _visible(trial_id, group, name), SAMPLE_ABOVE):
        # Counting the rows would read them all: a step is reported about once.
        return last - first + 1, lttb(_sampled(session, trial_id, group, name, first, last,
                                               max_points * SAMPLE_FACTOR), max_points)
    total, extremes = _bucket_extremes(session, trial_id, group, name, first, last,
                                       max_points * BUCKET_FACTOR)
    return total, lttb(extremes, max_points)


def _at_least(session: Session, where: ColumnElement[bool], rows: int) -> bool:
    """Whether ``where`` matches at least ``rows`` rows (reading at most that many)."""
    found = select(Metric.steps_completed).where(where).limit(rows).subquery()
    return (session.scalar(select(func.count()).select_from(found)) or 0) >= rows


# One index probe per bucket: the first step at or after the bucket's start.
_SAMPLE_STEPS_SQL = text("""
WITH RECURSIVE bucket(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM bucket WHERE i + 1 < :buckets)
SELECT (SELECT MIN(m.steps_completed) FROM metrics m
        WHERE m.trial_id = :trial AND m."group" = :group AND m.name = :name
          AND m.archived = :archived AND m.steps_completed >= :first + i * :span / :buckets)
FROM bucket
""")


def _sampled(session: Session, trial_id: int, group: str, name: str, first: int, last: int,
             buckets: int) -> list[Point]:
    """The series' first row of each of ``buckets`` equal spans of steps, and its last row:
    ``buckets`` index probes however long the series (a spike between two samples is
    missed; below :data:`SAMPLE_ABOVE` rows the extremes of each bucket are found)."""
    steps = {int(step) for (step,) in session.execute(_SAMPLE_STEPS_SQL, {
        "buckets": buckets, "trial": trial_id, "group": group, "name": name,
        "archived": False, "first": first, "span": last - first + 1}) if step is not None}
    steps.add(last)
    values = _at_steps(session, trial_id, group, name, sorted(steps), Metric.value)
    return sorted((step, float(value)) for step, value in values.items())


def _last_per_step(rows: Sequence[tuple[int, float]]) -> list[Point]:
    """One point per step (a step reported twice: the later row, as the trial's readers)."""
    out: list[Point] = []
    for step, value in rows:
        if out and out[-1][0] == step:
            out[-1] = (step, value)
        else:
            out.append((step, value))
    return out


def _bucket_extremes(session: Session, trial_id: int, group: str, name: str, first: int,
                     last: int, buckets: int) -> tuple[int, list[Point]]:
    """``(rows, points)``: per bucket of steps its lowest and highest value, each at its own
    step, in step order, and the series' first and last point. One pass per extreme
    (SQLite) or one (PostgreSQL); the first pass also counts the rows."""
    span = last - first + 1
    bucket = ((Metric.steps_completed - first) * buckets // span).label("b")
    where = _visible(trial_id, group, name)
    found: set[Point] = set()
    total = 0
    if session.get_bind().dialect.name == "postgresql":
        # min/max over (value, step) arrays: the extreme's step comes with it, in one pass.
        pair = postgresql.array([Metric.value, cast(Metric.steps_completed, Float)])
        for _, low, high, count in session.execute(
                select(bucket, func.min(pair), func.max(pair), func.count())
                .where(where).group_by(bucket)):
            found |= {(int(low[1]), float(low[0])), (int(high[1]), float(high[0]))}
            total += int(count)
    else:
        # SQLite: with a single min() or max(), a bare column comes from that row. (Reading
        # the rows in Python instead was slower: ~95 ms to fetch 200,000 vs ~50 ms a pass.)
        for counting, extreme in ((True, func.min), (False, func.max)):
            for _, value, step, count in session.execute(
                    select(bucket, extreme(Metric.value), Metric.steps_completed, func.count())
                    .where(where).group_by(bucket)):
                found.add((int(step), float(value)))
                total += int(count) if counting else 0
    # Not "ORDER BY id DESC LIMIT 1": PostgreSQL may walk the primary key backwards over
    # the whole table for it (2.8 s at 10^7 rows); a step's few rows come off the index.
    ends = _at_steps(session, trial_id, group, name, [first, last], Metric.value)
    found |= {(step, float(value)) for step, value in ends.items()}
    return total, sorted(found)


def values_at_steps(session: Session, trial_id: int, group: str, name: str,
                    steps: Sequence[int]) -> dict[int, float]:
    """``name``'s value at each of ``steps`` (a counter such as ``epochs``), where reported."""
    return {step: float(value) for step, value
            in _at_steps(session, trial_id, group, name, steps, Metric.value).items()}


def times_at_steps(session: Session, trial_id: int, group: str, name: str,
                   steps: Sequence[int]) -> dict[int, float]:
    """When (epoch seconds) each of ``steps`` of the series was reported."""
    # SQLite hands back naive datetimes; they are UTC.
    return {step: (at if at.tzinfo is not None else at.replace(tzinfo=dt.timezone.utc))
            .timestamp()
            for step, at
            in _at_steps(session, trial_id, group, name, steps, Metric.reported_at).items()}


def _at_steps(session: Session, trial_id: int, group: str, name: str, steps: Sequence[int],
              column: Any) -> dict[int, Any]:
    """``column`` of the series' row at each of ``steps`` (500 steps per query; the newest
    row of a step wins)."""
    out: dict[int, Any] = {}
    for chunk_start in range(0, len(steps), 500):
        chunk = list(steps[chunk_start:chunk_start + 500])
        for step, value in session.execute(
                select(Metric.steps_completed, column)
                .where(_visible(trial_id, group, name), Metric.steps_completed.in_(chunk))
                .order_by(Metric.id)):
            out[int(step)] = value
    return out
