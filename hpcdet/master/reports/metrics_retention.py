"""Applying ``metrics_retention``: thin old training metrics (``det-master vacuum-metrics``).

The policy (:class:`~hpcdet.master.settings.retention.MetricsRetention`, master.yaml's with
each experiment's overrides) names the rows that go: a trial's ``training`` rows reported
before the cutoff, except the steps that are multiples of ``keep_every`` (downsample) and
the trial's latest training step. Nothing else is touched: validations (the searcher, the
checkpoint GC and the best checkpoint read them), profiling and the other groups stay.

Running it again deletes nothing more (the rule depends on the step, not on what is left),
and it is safe while the master runs: each batch of at most ``batch_size`` rows is deleted in
its own short transaction, walking a trial's rows in step order through the
``(trial_id, group, steps_completed)`` index, so the writers never wait long on it.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, delete, func, select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.master.db import session_scope
from hpcdet.master.models import Experiment, Metric, Trial
from hpcdet.master.settings.retention import MetricsRetention

TRAINING = "training"
DEFAULT_BATCH = 5_000


@dataclass
class ExperimentVacuum:
    """What the vacuum did (or, dry, would do) to one experiment's metrics."""

    experiment_id: int
    policy: MetricsRetention
    trials: int = 0
    rows: int = 0  # deleted, or that would be
    seconds: float = 0.0


def experiment_policy(master: MetricsRetention, config: object) -> MetricsRetention:
    """The master's policy with the experiment config's ``metrics_retention`` keys over it."""
    override = config.get("metrics_retention") if isinstance(config, dict) else None
    return master.overridden(override if isinstance(override, dict) else None)


def doomed(trial_id: int, policy: MetricsRetention, cutoff: dt.datetime,
           latest_step: int | None) -> ColumnElement[bool]:
    """The rows of ``trial_id`` that ``policy`` removes (``policy.thins`` must hold)."""
    rule = [Metric.trial_id == trial_id, Metric.group == TRAINING,
            Metric.reported_at < cutoff]
    if latest_step is not None:
        rule.append(Metric.steps_completed != latest_step)
    if policy.action == "downsample":
        rule.append(Metric.steps_completed % policy.keep_every != 0)
    return and_(*rule)


def latest_training_step(session: Session, trial_id: int) -> int | None:
    """The trial's latest visible training step (kept whatever its age)."""
    return session.scalar(select(func.max(Metric.steps_completed)).where(
        Metric.trial_id == trial_id, Metric.group == TRAINING, Metric.archived.is_(False)))


def vacuum_trial(factory: sessionmaker[Session], trial_id: int, policy: MetricsRetention,
                 cutoff: dt.datetime, *, dry_run: bool, batch_size: int = DEFAULT_BATCH) -> int:
    """Delete (or, dry, count) the trial's rows the policy removes; returns how many."""
    with session_scope(factory) as session:
        where = doomed(trial_id, policy, cutoff, latest_training_step(session, trial_id))
        if dry_run:
            return int(session.scalar(select(func.count()).select_from(Metric).where(where))
                       or 0)
    deleted, from_step = 0, None
    while True:
        with session_scope(factory) as session:
            # Resume at the last batch's step: earlier steps hold only kept rows by now.
            page = where if from_step is None else and_(where,
                                                        Metric.steps_completed >= from_step)
            batch = session.execute(select(Metric.id, Metric.steps_completed).where(page)
                                    .order_by(Metric.steps_completed, Metric.id)
                                    .limit(batch_size)).all()
            if not batch:
                return deleted
            session.execute(delete(Metric).where(Metric.id.in_([row[0] for row in batch])))
            deleted += len(batch)
            from_step = int(batch[-1][1])


def vacuum_metrics(factory: sessionmaker[Session], master: MetricsRetention,
                   now: dt.datetime, *, dry_run: bool, batch_size: int = DEFAULT_BATCH,
                   experiment_ids: Sequence[int] = (),
                   progress: Callable[[ExperimentVacuum], None] | None = None,
                   ) -> list[ExperimentVacuum]:
    """Apply each experiment's policy (only ``experiment_ids`` when given), oldest first;
    ``progress`` hears of each experiment when it is done."""
    out = []
    for exp_id, config in _experiments(factory, experiment_ids):
        started = time.monotonic()
        result = ExperimentVacuum(exp_id, experiment_policy(master, config))
        if result.policy.thins and result.policy.training_days is not None:
            cutoff = now - dt.timedelta(days=result.policy.training_days)
            for trial_id in _trials(factory, exp_id):
                result.rows += vacuum_trial(factory, trial_id, result.policy, cutoff,
                                            dry_run=dry_run, batch_size=batch_size)
                result.trials += 1
        result.seconds = time.monotonic() - started
        if progress is not None:
            progress(result)
        out.append(result)
    return out


def _experiments(factory: sessionmaker[Session],
                 only: Sequence[int]) -> Iterable[tuple[int, object]]:
    query = select(Experiment.id, Experiment.config).order_by(Experiment.id)
    if only:
        query = query.where(Experiment.id.in_(list(only)))
    with session_scope(factory) as session:
        return [(int(exp_id), config) for exp_id, config in session.execute(query)]


def _trials(factory: sessionmaker[Session], exp_id: int) -> list[int]:
    with session_scope(factory) as session:
        return list(session.scalars(select(Trial.id).where(Trial.experiment_id == exp_id)
                                    .order_by(Trial.id)))
