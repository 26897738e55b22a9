"""The master's one background loop: searcher -> create trials -> submit -> poll -> transitions.

Each step runs in its own transaction so that a crash between steps leaves a consistent
database. The scheduler is asked about all active jobs with one ``Backend.poll`` per cycle.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend, JobPhase, JobRef, JobStatus
from hpcdet.dispatcher.jobdir import prepare_job_dir
from hpcdet.errors import HpcdetError
from hpcdet.master.checkpoint_gc import CheckpointCollector
from hpcdet.master.db import session_scope
from hpcdet.master.jobspec import TrialRun, build_job_spec
from hpcdet.master.logs import add_system_line, ingest_job_logs
from hpcdet.master.models import Experiment, Job, Trial, as_utc, utcnow
from hpcdet.master.searching import SearchDriver, SearchReport
from hpcdet.master.settings import MasterSettings
from hpcdet.master.submission import trial_info
from hpcdet.master.transitions import transition
from hpcdet.states import STOPPING_STATES, STOPPING_TO_TERMINAL, State

log = logging.getLogger("hpcdet.reconciler")
# Seconds a trial asked to stop may take to checkpoint and exit before its job is cancelled.
DEFAULT_PREEMPTION_TIMEOUT = 3600.0
# How a job may end after its trial was asked to stop, for the trial to end COMPLETED.
_CLEAN_STOP = frozenset({JobPhase.COMPLETED, JobPhase.CANCELLED})


@dataclass
class CycleReport:
    """What one cycle did (for logs, tests and benchmarks)."""

    trials_created: int = 0
    jobs_submitted: int = 0
    jobs_polled: int = 0
    jobs_cancelled: int = 0
    search: SearchReport = field(default_factory=SearchReport)


class Reconciler:
    """Drives experiments forward; exactly one runs per master."""

    def __init__(self, settings: MasterSettings, sessions: sessionmaker[Session],
                 backend: Backend) -> None:
        self.settings, self.sessions, self.backend = settings, sessions, backend
        self.searches = SearchDriver(settings)
        self.checkpoint_gc = CheckpointCollector(sessions)

    def run_forever(self, stop: threading.Event) -> None:
        """Run cycles every ``reconcile_interval`` seconds until ``stop`` is set."""
        while not stop.is_set():
            try:
                self.cycle()
            except Exception:  # one bad cycle must not kill the loop
                log.exception("reconcile cycle failed")
            stop.wait(self.settings.reconcile_interval)

    def cycle(self) -> CycleReport:
        """Let the searchers act, submit, cancel what must stop, poll, and roll up.

        The searchers run again after the poll, so a trial's exit reaches its searcher (and
        ends a finished experiment) in the cycle that saw it; with nothing new, that second
        pass costs two small queries.
        """
        report = CycleReport()
        report.search = self._search()
        report.jobs_submitted = self._submit_queued()
        report.jobs_cancelled = self._cancel_stopping()
        report.jobs_polled = self._poll()
        report.search.add(self._search())
        report.trials_created = report.search.trials_created
        self._roll_up()
        self.checkpoint_gc.collect()  # cheap when no trial ended
        return report

    # searchers ----------------------------------------------------------------------
    def _search(self) -> SearchReport:
        with session_scope(self.sessions) as session:
            return self.searches.step(session)

    # submission ---------------------------------------------------------------------
    def _submit_queued(self) -> int:
        with session_scope(self.sessions) as session:
            ids = session.scalars(select(Trial.id).where(
                Trial.state == State.QUEUED.value,
                ~select(Job.id).where(Job.trial_id == Trial.id, Job.active).exists())).all()
        return sum(self._submit_one(trial_id) for trial_id in ids)

    def _submit_one(self, trial_id: int) -> int:
        with session_scope(self.sessions) as session:
            trial = session.get_one(Trial, trial_id)
            exp = session.get_one(Experiment, trial.experiment_id)
            trial.run_id += 1
            job = Job(trial_id=trial.id, run_id=trial.run_id, active=True)
            session.add(job)
            session.flush()  # the intent to submit is recorded before sbatch runs
            try:
                job.job_id = self._render_and_submit(session, exp, trial, job)
            except (HpcdetError, OSError) as exc:  # OSError: e.g. job_storage_root unwritable
                self._submission_failed(session, trial, job, exc)
                return 0
            log.info("trial %s run %s submitted as job %s", trial.id, job.run_id, job.job_id)
            return 1

    def _render_and_submit(self, session: Session, exp: Experiment, trial: Trial,
                           job: Job) -> str:
        run = TrialRun(exp.id, trial.id, trial.run_id, trial.job_dir)
        info = trial_info(self.settings, exp.config, run, hparams=trial.hparams, seed=trial.seed,
                          latest_checkpoint=trial.latest_checkpoint)
        context = session.scalars(select(Experiment.context).where(
            Experiment.id == exp.id)).one()
        prepare_job_dir(trial.job_dir, context_tar=context, trial_info=info, token=trial.token)
        submission = self.backend.render(build_job_spec(self.settings, exp.config, run))
        job.script_path = submission.script_path
        return self.backend.submit(submission)

    def _submission_failed(self, session: Session, trial: Trial, job: Job,
                           exc: Exception) -> None:
        job.active, job.phase, job.ended_at = False, "FAILED", utcnow()
        add_system_line(session, trial.id, f"submission failed: {exc}")
        transition(session, trial, State.ERROR, cause=f"submission failed: {exc}")

    # stopping ---------------------------------------------------------------------
    def _cancel_stopping(self) -> int:
        """Cancel the jobs of trials that must stop, with one scheduler call for all.

        A killed trial's jobs are cancelled at once. A trial stopped gracefully (by its
        searcher) is asked through ``should_preempt()``; its job is cancelled only if it
        has not started running yet, or once ``preemption_timeout`` has passed.
        """
        with session_scope(self.sessions) as session:
            stopping = session.scalars(select(Trial).where(
                Trial.state.in_([s.value for s in STOPPING_STATES]))).all()
            jobs = self._active_jobs(session, [t.id for t in stopping])
            self._end_idle_stopping(session, stopping, {j.trial_id for j in jobs})
            by_id = {t.id: t for t in stopping}
            timeouts = _preemption_timeouts(session, {t.experiment_id for t in stopping})
            to_cancel = [j for j in jobs if j.job_id and not j.cancel_requested
                         and _must_cancel(by_id[j.trial_id], j, timeouts)]
            if to_cancel:
                self.backend.cancel([str(j.job_id) for j in to_cancel])
                for j in to_cancel:
                    j.cancel_requested = True
            return len(to_cancel)

    @staticmethod
    def _end_idle_stopping(session: Session, stopping: Sequence[Trial],
                           running: set[int]) -> None:
        for trial in stopping:
            if trial.id not in running:
                transition(session, trial, STOPPING_TO_TERMINAL[State(trial.state)],
                           cause="nothing left to stop")

    @staticmethod
    def _active_jobs(session: Session, trial_ids: Sequence[int]) -> list[Job]:
        if not trial_ids:
            return []
        return list(session.scalars(select(Job).where(Job.trial_id.in_(trial_ids), Job.active)))

    # polling ------------------------------------------------------------------------
    def _poll(self) -> int:
        with session_scope(self.sessions) as session:
            rows = session.execute(select(Job, Trial).join(Trial, Trial.id == Job.trial_id)
                                   .where(Job.active, Job.job_id.is_not(None))).all()
            if not rows:
                return 0
            statuses = self.backend.poll([JobRef(str(j.job_id), t.job_dir) for j, t in rows])
            for job, trial in rows:
                status = statuses.get(str(job.job_id))
                if status is not None:
                    self._apply(session, job, trial, status)
            return len(rows)

    def _apply(self, session: Session, job: Job, trial: Trial, status: JobStatus) -> None:
        job.phase, job.native_state = status.phase.value, status.native_state
        job.reason, job.nodes = status.reason, status.nodes or job.nodes
        if status.exit_code is not None:
            job.exit_code = status.exit_code
        final = status.phase.is_terminal
        ingest_job_logs(session, job, trial.job_dir, final=final)
        if status.phase is JobPhase.RUNNING and trial.state == State.QUEUED.value:
            transition(session, trial, State.RUNNING,
                       cause=f"Slurm job {job.job_id} running on {status.nodes or '?'}")
        elif final:
            self._job_ended(session, job, trial, status)

    def _job_ended(self, session: Session, job: Job, trial: Trial, status: JobStatus) -> None:
        job.active, job.ended_at = False, utcnow()
        cause = (f"Slurm job {job.job_id} ended {status.native_state}"
                 f" (exit code {status.exit_code})")
        current = State(trial.state)
        if current is State.STOPPING_COMPLETED and status.phase not in _CLEAN_STOP:
            transition(session, trial, State.ERROR, cause=cause)  # it failed while stopping
        elif current.is_stopping:
            transition(session, trial, STOPPING_TO_TERMINAL[current], cause=cause)
        elif status.phase is JobPhase.COMPLETED:
            if current is State.QUEUED:  # it ran and ended between two polls
                transition(session, trial, State.RUNNING, cause=f"Slurm job {job.job_id} ran "
                           f"on {status.nodes or '?'} (seen after it ended)")
            transition(session, trial, State.COMPLETED, cause=cause)
        elif not current.is_terminal:
            transition(session, trial, State.ERROR, cause=cause)

    # experiments --------------------------------------------------------------------
    def _roll_up(self) -> None:
        with session_scope(self.sessions) as session:
            # Active experiments end when their searcher says so (hpcdet.master.searching);
            # this finishes the ones being stopped (killed, or failed) once nothing runs.
            live = [s.value for s in STOPPING_STATES]
            for exp in session.scalars(select(Experiment).where(Experiment.state.in_(live))):
                states = session.scalars(select(Trial.state).where(
                    Trial.experiment_id == exp.id))
                if all(State(s).is_terminal for s in states):
                    transition(session, exp, STOPPING_TO_TERMINAL[State(exp.state)],
                               cause="all trials ended")


def _preemption_timeouts(session: Session, experiment_ids: set[int]) -> dict[int, float]:
    """Each experiment's ``preemption_timeout`` in seconds (the default where unset)."""
    if not experiment_ids:
        return {}
    rows = session.execute(select(Experiment.id, Experiment.config)
                           .where(Experiment.id.in_(experiment_ids)))
    return {exp_id: float(config.get("preemption_timeout") or DEFAULT_PREEMPTION_TIMEOUT)
            for exp_id, config in rows}


def _must_cancel(trial: Trial, job: Job, timeouts: dict[int, float]) -> bool:
    """Killed, not yet running (nothing to ask), or past its preemption timeout."""
    if trial.state == State.STOPPING_KILLED.value or job.phase != JobPhase.RUNNING.value:
        return True
    if trial.stop_requested_at is None:
        return True
    waited = (utcnow() - as_utc(trial.stop_requested_at)).total_seconds()
    return waited > timeouts.get(trial.experiment_id, DEFAULT_PREEMPTION_TIMEOUT)
