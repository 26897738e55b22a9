"""One scheduler poll a cycle for every active job, and what its answers mean.

Trials' jobs, command tasks' jobs and the jobs unmanaged runs are linked to are asked about
with one ``Backend.poll``; the answers are applied in one transaction for the trials and
one for the tasks.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend, JobPhase, JobRef, JobStatus
from hpcdet.master.db import session_scope
from hpcdet.master.models import Job, Trial, utcnow
from hpcdet.master.reports.ingest import MetricWriter
from hpcdet.master.reports.logs import add_system_line, ingest_job_logs
from hpcdet.master.reports.spool_ingest import ingest_spooled_reports
from hpcdet.master.scheduling import job_outcomes, tasks
from hpcdet.master.scheduling.cycle_steps import CycleSteps
from hpcdet.master.scheduling.health import HealthTracker
from hpcdet.master.scheduling.stopping import cancel_jobs, configs_of
from hpcdet.master.settings.core import MasterSettings

log = logging.getLogger(__name__)


class Poller:
    """Polls the scheduler once a cycle and applies its statuses; keeps which jobs the
    last poll could not find (see :meth:`_settle_missing`)."""

    def __init__(self, settings: MasterSettings, sessions: sessionmaker[Session],
                 backend: Backend, health: HealthTracker, steps: CycleSteps) -> None:
        self.settings = settings  # run-as-owner mode: whom a lingering job is cancelled as
        self.sessions, self.backend, self.health, self.steps = sessions, backend, health, steps
        self._metric_writer: MetricWriter | None = None
        # Jobs the last poll could not find anywhere (see _settle_missing).
        self._missing_once: set[str] = set()

    def poll(self) -> int:
        """One scheduler poll for every active job (trials' and command tasks'), applied
        in one transaction for the trials and one for the tasks. Returns how many jobs.

        Reports a finished job left in its spool directory are collected first, in their
        own transaction, so that the trial's outcome sees its last metrics and checkpoints.
        """
        with session_scope(self.sessions) as session:
            rows = session.execute(select(Job.id, Job.trial_id, Job.job_id, Trial.job_dir)
                                   .join(Trial, Trial.id == Job.trial_id)
                                   .where(Job.active, Job.job_id.is_not(None))).all()
            task_refs = tasks.active_task_refs(session)
            linked = self.steps.linked_jobs(session)  # users' own jobs (core_v2)
        refs = [(job_pk, trial_id, JobRef(str(job_id), job_dir))
                for job_pk, trial_id, job_id, job_dir in rows]
        statuses = self._settle_missing(self.backend.poll(
            [ref for _, _, ref in refs] + [r for _, r in task_refs] + [r for _, r in linked]))
        with session_scope(self.sessions) as session:
            self.steps.end_lost_runs(session, linked, statuses)
        if not refs and not task_refs:
            return len(linked)
        self.health.scheduler_ok()
        tasks.apply_task_statuses(self.sessions, task_refs, statuses)
        self._collect_spools([(trial_id, ref) for _, trial_id, ref in refs], statuses)
        self._cancel_lingering([(trial_id, ref.job_id) for _, trial_id, ref in refs], statuses)
        self._apply_all([pk for pk, _, _ in refs], statuses)
        return len(refs) + len(task_refs)

    def _cancel_lingering(self, jobs: Sequence[tuple[int, str]],
                          statuses: dict[str, JobStatus]) -> None:
        """Cancel the trials' jobs that ended but that the scheduler keeps queued (Slurm
        holds an expedited job's failed execution), before their end is applied: a failed
        cancel raises, and the next cycle reads the held job again instead of losing it."""
        lingering = [(trial_id, job_id) for trial_id, job_id in jobs
                     if job_id in statuses and statuses[job_id].lingering]
        if lingering:
            log.info("cancelling jobs the scheduler holds after their failure: %s",
                     ", ".join(job_id for _, job_id in lingering))
            with session_scope(self.sessions) as session:
                cancel_jobs(session, self.settings, self.backend, lingering)

    def _apply_all(self, job_pks: Sequence[int], statuses: dict[str, JobStatus]) -> None:
        with session_scope(self.sessions) as session:
            # One query for the jobs with their trials, one for their experiments' configs
            # (jobs that ended meanwhile, e.g. through a kill, are no longer active).
            pairs = session.execute(select(Job, Trial).join(Trial, Trial.id == Job.trial_id)
                                    .where(Job.id.in_(job_pks), Job.active)).all()
            configs = configs_of(session, {trial.experiment_id for _, trial in pairs})
            for job, trial in pairs:
                status = statuses.get(str(job.job_id))
                if status is not None:
                    self._apply(session, job, trial, configs[trial.experiment_id], status)

    def _settle_missing(self, statuses: dict[str, JobStatus]) -> dict[str, JobStatus]:
        """A job no source knew of (queue, history or accounting, exit file) is UNKNOWN the
        first time and MISSING only when the next poll cannot find it either: schedulers
        have answered one read with an empty list for live jobs (a busy controller, a
        failover), and ending a trial on that would lose a running job."""
        missing = {job_id for job_id, status in statuses.items()
                   if status.phase is JobPhase.MISSING}
        first_time = missing - self._missing_once
        self._missing_once = first_time
        return {job_id: (replace(status, phase=JobPhase.UNKNOWN) if job_id in first_time
                         else status) for job_id, status in statuses.items()}

    def _collect_spools(self, refs: Sequence[tuple[int, JobRef]],
                        statuses: dict[str, JobStatus]) -> None:
        """Apply the reports that ended jobs' harnesses left on disk (usually none)."""
        for trial_id, ref in refs:
            status = statuses.get(ref.job_id)
            if status is None or not status.phase.is_terminal:
                continue  # a running reporter may still be appending
            try:
                stored = ingest_spooled_reports(self.sessions, self._writer(), trial_id,
                                                ref.job_dir, files=self.backend.transport)
            except Exception:  # the files stay; the next cycle tries again
                log.exception("collecting the spooled reports of job %s failed", ref.job_id)
                continue
            if stored:
                log.info("job %s: stored %d reports its trial left on disk", ref.job_id, stored)

    def _writer(self) -> MetricWriter:
        if self._metric_writer is None:
            self._metric_writer = MetricWriter(self.sessions.kw["bind"])
        return self._metric_writer

    def _apply(self, session: Session, job: Job, trial: Trial, config: dict[str, Any],
               status: JobStatus) -> None:
        _note_pending_reason(session, job, status)
        job.phase, job.native_state = status.phase.value, status.native_state
        job.reason, job.nodes = status.reason, status.nodes or job.nodes
        if status.exit_code is not None:
            job.exit_code = status.exit_code
        final = status.phase.is_terminal
        files = self.backend.transport
        ingest_job_logs(session, job, trial, config, final=final, files=files,
                        scheduler=self.backend.name)
        max_restarts = job_outcomes.max_restarts(config)
        if status.restarts is not None and status.restarts > job.requeues:
            job_outcomes.adopt_requeues(session, job, trial, status, max_restarts, files=files)
        if final:
            job.active, job.ended_at = False, utcnow()
            job_outcomes.job_ended(session, job, trial, status, max_restarts, files=files)
        elif status.phase is JobPhase.RUNNING:
            job_outcomes.mark_running(session, trial, f"job {job.job_id}", status.nodes)


def _note_pending_reason(session: Session, job: Job, status: JobStatus) -> None:
    """Say in the trial's log why its job waits, each time Slurm's reason changes."""
    if status.phase is JobPhase.PENDING and status.reason and status.reason != job.reason:
        add_system_line(session, job.trial_id, f"job {job.job_id} is pending: {status.reason}")
