"""Gauges read from the database at scrape time: the same answer from every worker.

Each family is one GROUP BY over an indexed state column or the active jobs, so a scrape
costs a handful of small queries whatever the number of rows; the queue's waits are
computed from one MIN per pool, not per job.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import case, func, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from hpcdet.master.models import CommandTask, Experiment, Job, Trial, as_utc, utcnow

# The label of an experiment that named no pool (it runs in the default compute pool).
DEFAULT_POOL = "default"


class DatabaseCollector(Collector):
    """Experiments, trials and tasks by state; trials' jobs by scheduler phase and pool;
    the queue (jobs waiting for the scheduler) by pool."""

    def __init__(self, session: Session, now: Callable[[], dt.datetime] = utcnow) -> None:
        self.session, self.now = session, now

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """Every family, each from one query."""
        yield self._by_state("hpcdet_experiments", "Experiments, by state.",
                             Experiment.state)
        yield self._by_state("hpcdet_trials", "Trials, by state.", Trial.state)
        yield self._tasks()
        yield self._jobs()
        yield from self._queue()

    def _by_state(self, name: str, doc: str,
                  column: InstrumentedAttribute[str]) -> GaugeMetricFamily:
        family = GaugeMetricFamily(name, doc, labels=["state"])
        rows = self.session.execute(select(column, func.count()).group_by(column))
        for state, count in rows:
            family.add_metric([str(state)], count)
        return family

    def _tasks(self) -> GaugeMetricFamily:
        family = GaugeMetricFamily(
            "hpcdet_tasks", "Tasks (commands, notebooks, shells, TensorBoards), by kind and "
            "state.", labels=["kind", "state"])
        rows = self.session.execute(select(CommandTask.kind, CommandTask.state, func.count())
                                    .group_by(CommandTask.kind, CommandTask.state))
        for kind, state, count in rows:
            family.add_metric([str(kind), str(state)], count)
        return family

    def _jobs(self) -> GaugeMetricFamily:
        family = GaugeMetricFamily(
            "hpcdet_jobs", "Trials' scheduler jobs the master follows, by scheduler phase "
            "(PENDING, RUNNING, ...; SUBMITTING: no job id yet) and resource pool.",
            labels=["state", "pool"])
        phase = case((Job.job_id.is_(None), "SUBMITTING"),
                     else_=func.coalesce(Job.phase, "UNKNOWN"))
        pool = func.coalesce(Experiment.resource_pool, DEFAULT_POOL)
        rows = self.session.execute(
            select(phase, pool, func.count()).select_from(Job)
            .join(Trial, Trial.id == Job.trial_id).join(Experiment)
            .where(Job.active.is_(True)).group_by(phase, pool))
        for state, pool_name, count in rows:
            family.add_metric([str(state), str(pool_name)], count)
        return family

    def _queue(self) -> Iterator[GaugeMetricFamily]:
        depth = GaugeMetricFamily(
            "hpcdet_queue_depth", "Trials' jobs waiting to start (PENDING in the scheduler, "
            "or not yet submitted), by resource pool.", labels=["pool"])
        wait = GaugeMetricFamily(
            "hpcdet_queue_oldest_wait_seconds", "How long the longest-waiting job of the "
            "queue has waited since its submission, by resource pool.", labels=["pool"])
        pool = func.coalesce(Experiment.resource_pool, DEFAULT_POOL)
        waiting = Job.job_id.is_(None) | Job.phase.is_(None) | (Job.phase == "PENDING")
        rows = self.session.execute(
            select(pool, func.count(), func.min(Job.submitted_at)).select_from(Job)
            .join(Trial, Trial.id == Job.trial_id).join(Experiment)
            .where(Job.active.is_(True), waiting).group_by(pool))
        now = self.now()
        for pool_name, count, oldest in rows:
            depth.add_metric([str(pool_name)], count)
            age = (now - as_utc(oldest)).total_seconds() if oldest is not None else 0.0
            wait.add_metric([str(pool_name)], max(age, 0.0))
        yield depth
        yield wait
