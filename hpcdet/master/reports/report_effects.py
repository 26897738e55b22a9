"""What stored reports change besides their rows, inside the writer's transaction.

Validations update the trial's latest and best validation and queue one searcher event
each; checkpoints are registered (idempotently: a uuid already registered is left as it
is); the first stream of a newer execution archives what earlier executions reported past
the step it resumed from, and recomputes the trial's validations from what is left.

Everything here runs on the :class:`~hpcdet.master.reports.ingest.MetricWriter`'s connection, in
the transaction that stores the rows and moves the streams' ``last_seq``: a master killed
at any moment commits all of a batch or none of it, so a resent batch can neither miss an
effect nor repeat one. Core statements only, like the rest of the ingest path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import Table, and_, insert, or_, select, update
from sqlalchemy.engine import Connection

from hpcdet.master.models import Checkpoint, Experiment, Metric, SearcherEvent, Trial, utcnow
from hpcdet.master.reports.searcher_metric import SearcherMetric


@dataclass(frozen=True)
class Report:
    """One report: ``metrics`` of ``group`` at a step, or (group ``checkpoint``) a checkpoint."""

    group: str
    steps_completed: int
    metrics: Mapping[str, float] = field(default_factory=dict)
    checkpoint: Mapping[str, Any] | None = None  # {"uuid", "metadata", "resources"}
    seq: int | None = None


METRIC_GROUPS = ("training", "validation", "profiling")
CHECKPOINT = "checkpoint"
VALIDATION = "validation"
_METRICS = cast(Table, Metric.__table__)
_TRIALS = cast(Table, Trial.__table__)
_CHECKPOINTS = cast(Table, Checkpoint.__table__)
_EVENTS = cast(Table, SearcherEvent.__table__)


def insert_ignoring_conflict(conn: Connection, table: Table, row: Mapping[str, Any]) -> bool:
    """INSERT .. ON CONFLICT DO NOTHING; True if the row was inserted."""
    from sqlalchemy.dialects import postgresql, sqlite

    if conn.dialect.name == "postgresql":
        statement: Any = postgresql.insert(table).values(**row).on_conflict_do_nothing()
    else:
        statement = sqlite.insert(table).values(**row).on_conflict_do_nothing()
    return bool(conn.execute(statement).rowcount == 1)


def apply(conn: Connection, trial_id: int, kept: Sequence[Report],
          archived: Sequence[Report], *, stale: bool) -> set[str]:
    """Effects of a batch's new reports; returns the uuids of the checkpoints it created.

    ``archived``: reports a newer execution rolled back (spooled, collected late): their
    checkpoints are registered (so that garbage collection knows their files), nothing
    else. ``stale``: the batch's execution is not the newest, so it moves neither the
    latest validation nor (unless further along) the latest checkpoint.
    """
    validations = [r for r in kept if r.group == VALIDATION]
    checkpoints = [(r, True) for r in kept if r.group == CHECKPOINT]
    checkpoints += [(r, False) for r in archived if r.group == CHECKPOINT]
    if not validations and not checkpoints:
        return set()
    trial = _TrialProgress.load(conn, trial_id)
    if validations:
        trial.validate(conn, validations, move_latest=not stale)
    created = {str(r.checkpoint["uuid"]) for r, current in checkpoints
               if r.checkpoint is not None and trial.register(conn, r, current, stale=stale)}
    trial.save(conn)
    return created


def roll_back(conn: Connection, trial_id: int, execution: tuple[int, int],
              resumed_steps: int) -> None:
    """Archive rows of executions before ``execution`` past ``resumed_steps`` (all groups)."""
    c = _METRICS.c
    run_id, requeue = execution
    earlier = or_(c.run_id < run_id, and_(c.run_id == run_id, c.requeue < requeue))
    # "group IN (...)" lets both databases range-scan ix_metrics_trial_group_step.
    result = conn.execute(update(_METRICS).where(
        c.trial_id == trial_id, c.group.in_(METRIC_GROUPS), c.steps_completed > resumed_steps,
        c.archived.is_(False), earlier).values(archived=True))
    if result.rowcount:
        trial = _TrialProgress.load(conn, trial_id)
        trial.recompute_validations(conn)
        trial.save(conn)


@dataclass
class _TrialProgress:
    """The columns of one trial that reports move, locked for the transaction."""

    id: int
    experiment_id: int
    latest_validation: dict[str, Any] | None
    best_validation: dict[str, Any] | None
    latest_checkpoint: str | None
    changed: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, conn: Connection, trial_id: int) -> _TrialProgress:
        c = _TRIALS.c
        row = conn.execute(select(c.experiment_id, c.latest_validation, c.best_validation,
                                  c.latest_checkpoint).where(c.id == trial_id)
                           .with_for_update()).one()
        return cls(trial_id, *row)

    def validate(self, conn: Connection, reports: Sequence[Report], *,
                 move_latest: bool) -> None:
        """Latest and best validation, and one searcher event per report."""
        if move_latest:
            latest = max(reports, key=lambda r: r.steps_completed)
            self._set("latest_validation", _validation(latest.steps_completed, latest.metrics))
        metric = _searcher_metric(conn, self.experiment_id)
        self._set("best_validation", _best(metric, self.best_validation,
                                           [(r.steps_completed, r.metrics) for r in reports]))
        conn.execute(insert(_EVENTS), [
            {"experiment_id": self.experiment_id, "trial_id": self.id,
             "steps_completed": r.steps_completed, "metrics": dict(r.metrics),
             "processed": False, "created_at": utcnow()} for r in reports])

    def register(self, conn: Connection, report: Report, current: bool, *, stale: bool) -> bool:
        """Register a checkpoint unless its uuid is; True if this call created it."""
        assert report.checkpoint is not None
        uuid, steps = str(report.checkpoint["uuid"]), report.steps_completed
        created = insert_ignoring_conflict(conn, _CHECKPOINTS, {
            "uuid": uuid, "trial_id": self.id, "steps_completed": steps,
            "metadata": dict(report.checkpoint.get("metadata") or {}),
            "resources": dict(report.checkpoint.get("resources") or {}),
            "validation_metrics": _validation_at(conn, self.id, steps),
            "state": "ACTIVE", "reported_at": utcnow()})
        if created and current and (not stale or self._behind(conn, steps)):
            self._set("latest_checkpoint", uuid)
        return created

    def recompute_validations(self, conn: Connection) -> None:
        """Latest and best validation from the rows that are not archived."""
        c = _METRICS.c
        by_step: dict[int, dict[str, float]] = {}
        for steps, name, value in conn.execute(
                select(c.steps_completed, c.name, c.value).where(
                    c.trial_id == self.id, c.group == VALIDATION, c.archived.is_(False))
                .order_by(c.steps_completed, c.id)):
            by_step.setdefault(steps, {})[name] = value
        latest = max(by_step, default=None)
        self._set("latest_validation",
                  None if latest is None else _validation(latest, by_step[latest]))
        metric = _searcher_metric(conn, self.experiment_id)
        self._set("best_validation", _best(metric, None, list(by_step.items())))

    def save(self, conn: Connection) -> None:
        if self.changed:
            conn.execute(update(_TRIALS).where(_TRIALS.c.id == self.id).values(**self.changed))

    def _set(self, column: str, value: Any) -> None:
        setattr(self, column, value)
        self.changed[column] = value

    def _behind(self, conn: Connection, steps: int) -> bool:
        """True if the trial's latest checkpoint (if any) is at most ``steps`` along."""
        if self.latest_checkpoint is None:
            return True
        latest = conn.execute(select(_CHECKPOINTS.c.steps_completed).where(
            _CHECKPOINTS.c.uuid == self.latest_checkpoint)).scalar()
        return latest is None or latest <= steps


def _validation(steps: int, metrics: Mapping[str, float]) -> dict[str, Any]:
    return {"steps_completed": steps, "metrics": dict(metrics)}


def _searcher_metric(conn: Connection, experiment_id: int) -> SearcherMetric:
    config = conn.execute(select(Experiment.__table__.c.config).where(
        Experiment.__table__.c.id == experiment_id)).scalar()
    return SearcherMetric.of(config or {})


def _best(metric: SearcherMetric, best: dict[str, Any] | None,
          reports: Sequence[tuple[int, Mapping[str, float]]]) -> dict[str, Any] | None:
    """``best`` or the best of ``reports`` by the searcher metric, whichever is better."""
    for steps, metrics in reports:
        value = metric.value_in(metrics)
        if value is not None and (best is None or metric.key(value) < metric.key(
                float(best["metrics"][metric.name]))):
            best = _validation(steps, metrics)
    return best


def _validation_at(conn: Connection, trial_id: int, steps: int) -> dict[str, float] | None:
    """The validation metrics reported at ``steps`` (not archived), None if there are none."""
    c = _METRICS.c
    rows = conn.execute(select(c.name, c.value).where(
        c.trial_id == trial_id, c.group == VALIDATION, c.steps_completed == steps,
        c.archived.is_(False)).order_by(c.id))
    return {name: value for name, value in rows} or None
