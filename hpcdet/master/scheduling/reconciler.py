"""The master's one background loop: searcher -> create trials -> submit -> poll -> transitions.

Each step runs in its own transaction so that a crash between steps leaves a consistent
database. The scheduler is asked about all active jobs with one ``Backend.poll`` per cycle.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend, JobPhase, JobRef, JobSpec, JobStatus, Submission
from hpcdet.dispatcher.jobdir import job_dir_archive, prepare_job_dir
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.transport import LocalTransport, TransportUnavailableError
from hpcdet.errors import HpcdetError, SchedulerError
from hpcdet.master.db import session_scope
from hpcdet.master.experiments import unmanaged
from hpcdet.master.experiments.ending import end_stopped_experiments
from hpcdet.master.experiments.searching import SearchDriver, SearchReport
from hpcdet.master.models import Experiment, Job, Trial, as_utc, utcnow
from hpcdet.master.proxy.pinning import protected_ports
from hpcdet.master.proxy.registration import register_services
from hpcdet.master.queue.pools import Pool, pool_for_config
from hpcdet.master.queue.slots import record_layout
from hpcdet.master.reports.checkpoint_gc import CheckpointCollector
from hpcdet.master.reports.ingest import MetricWriter
from hpcdet.master.reports.logs import add_system_line, ingest_job_logs
from hpcdet.master.reports.spool_ingest import ingest_spooled_reports
from hpcdet.master.scheduling import allocations, arrays, job_outcomes, tasks
from hpcdet.master.scheduling.cluster_view import ClusterView
from hpcdet.master.scheduling.health import HealthTracker
from hpcdet.master.scheduling.job_outcomes import DEFAULT_MAX_RESTARTS
from hpcdet.master.scheduling.jobspec import TrialRun, build_job_spec
from hpcdet.master.scheduling.submission import trial_info
from hpcdet.master.scheduling.task_tokens import forget_ended_shell_keys
from hpcdet.master.security.storage_roots import check_run_storage
from hpcdet.master.security.tokens import hash_token
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.tls import job_cert_pem
from hpcdet.master.transitions import transition
from hpcdet.states import STOPPING_STATES, STOPPING_TO_TERMINAL, State

log = logging.getLogger(__name__)
# Seconds a trial asked to stop may take to checkpoint and exit before its job is cancelled.
DEFAULT_PREEMPTION_TIMEOUT = 3600.0
# Threads preparing an array's job directories at once (on this host's file system).
PREPARE_THREADS = 8
# Trials whose code has been asked to stop (the preemption route says yes to them).
_STOP_ASKED = tuple(s.value for s in (*STOPPING_STATES, State.PAUSED))
# Trials whose jobs are cancelled at once, without waiting for the code to stop.
_STOP_NOW = frozenset({State.STOPPING_KILLED.value, State.STOPPING_ERROR.value})


@dataclass(frozen=True)
class _SubmitPlan:
    """What one submission needs, read in the transaction that records the intent."""

    job_pk: int
    run: TrialRun
    config: dict[str, Any]
    info: dict[str, Any]
    context: bytes
    token: str


@dataclass
class CycleReport:
    """What one cycle did (for logs, tests and benchmarks)."""

    trials_created: int = 0
    jobs_submitted: int = 0
    jobs_polled: int = 0
    jobs_cancelled: int = 0
    intents_recovered: int = 0
    search: SearchReport = field(default_factory=SearchReport)
    allocations: allocations.AllocationReport = field(
        default_factory=allocations.AllocationReport)


class Reconciler:
    """Drives experiments forward; exactly one runs per master."""

    def __init__(self, settings: MasterSettings, sessions: sessionmaker[Session],
                 backend: Backend) -> None:
        self.settings, self.sessions, self.backend = settings, sessions, backend
        self.searches = SearchDriver(settings)
        self.checkpoint_gc = CheckpointCollector(sessions, settings)
        self._metric_writer: MetricWriter | None = None
        self.health = HealthTracker(sessions, settings.reconcile_interval)
        self.cluster_view = ClusterView(settings, sessions, backend, health=self.health)
        # Jobs the last poll could not find anywhere (see _settle_missing).
        self._missing_once: set[str] = set()
        # Trials queued together go as job arrays (not where the owner's helper writes files).
        self._arrays = (arrays.ArraySubmitter(self) if settings.resource_manager.job_arrays
                        and not settings.runas.owner_mode else None)
        # Allocation mode (resources.allocation): trials as steps of one job per experiment.
        self.allocations = allocations.AllocationManager(settings, sessions, backend)

    def run_forever(self, stop: threading.Event) -> None:
        """Run cycles every ``reconcile_interval`` seconds until ``stop`` is set.

        Pools, the queue and the fair-share accounts are refreshed first, on their own
        (slower) timer, so that the first submissions already see the pools.
        """
        self.health.start()
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.cluster_view.maybe_refresh()
                self.cycle()
            except TransportUnavailableError as exc:  # the next cycle tries again
                # A failed try is a warning; the same failure repeated within the backoff
                # (nothing tried) is not worth a line per cycle.
                log.log(logging.DEBUG if exc.retry_in else logging.WARNING,
                        "reconcile cycle skipped, the cluster is unreachable: %s", exc)
                self.health.scheduler_failed("the cluster is unreachable", exc,
                                             caller_logged=True)
            except (SchedulerError, OSError) as exc:  # a scheduler command failed
                # The health tracker logs the traceback once, then one line a minute.
                self.health.scheduler_failed("a scheduler command failed", exc)
            except Exception as exc:  # one bad cycle must not kill the loop
                self.health.scheduler_failed("reconcile cycle failed", exc, scheduler=False)
            self.health.end_cycle(time.monotonic() - started)
            stop.wait(self.settings.reconcile_interval)

    def cycle(self) -> CycleReport:
        """Let the searchers act, submit, cancel what must stop, poll, and roll up.

        The searchers run again after the poll, so a trial's exit reaches its searcher (and
        ends a finished experiment) in the cycle that saw it; with nothing new, that second
        pass costs two small queries.
        """
        report = CycleReport()
        report.intents_recovered = self._recover_intents()
        report.search = self._search()
        report.allocations = self.allocations.cycle()
        report.jobs_submitted = self._submit_queued()
        report.jobs_cancelled = self._cancel_stopping()
        report.jobs_cancelled += tasks.cancel_killed_tasks(self.sessions, self.backend)
        report.jobs_polled = self._poll()
        register_services(self.sessions, self.backend,  # proxied tasks' addresses
                          protected_ports=protected_ports(self.settings))
        with session_scope(self.sessions) as session:
            forget_ended_shell_keys(session)
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
                ~select(Job.id).where(Job.trial_id == Trial.id, Job.active).exists(),
                ~allocations.held_for_allocations()).order_by(Trial.id)).all()
        singles, submitted = list(ids), 0
        if self._arrays is not None and len(ids) > 1:
            submitted, singles = self._arrays.submit(ids)
        return submitted + sum(self._submit_one(trial_id) for trial_id in singles)

    def _submit_one(self, trial_id: int) -> int:
        """Record the intent to submit, commit it, run sbatch, then record the job id.

        If the master dies between sbatch and the last commit, the intent (a job row with a
        name and no id) is found again by :meth:`_recover_intents` instead of resubmitted.
        """
        with session_scope(self.sessions) as session:
            plan = self._record_intent(session, trial_id)
        if plan is None:
            return 0
        try:
            job_id, spec, script_path = self._render_and_submit(plan)
        except TransportUnavailableError:
            # The login node dropped: the intent stays, and the next cycle's
            # _recover_intents adopts the job (if sbatch ran) or submits it again.
            raise
        except (HpcdetError, OSError) as exc:  # OSError: e.g. job_storage_root unwritable
            with session_scope(self.sessions) as session:
                self._submission_failed(session, plan.job_pk, exc)
            return 0
        with session_scope(self.sessions) as session:
            job = session.get_one(Job, plan.job_pk)
            job.job_id, job.script_path = job_id, script_path
            record_layout(job, spec)
        log.info("trial %s run %s submitted as job %s", trial_id, plan.run.run_id, job_id)
        return 1

    def prepare_trials(self, trial_ids: Sequence[int],
                       names: Sequence[str]) -> list[arrays.PreparedTask]:
        """The tasks of one array (one experiment's trials): record every intent (named
        ``names``) in one transaction, then prepare each job directory and write each
        trial's script. Trials no longer queued are left out; a trial whose preparation
        fails ends as a failed submission and is left out."""
        with session_scope(self.sessions) as session:
            plans = self._record_intents(session, trial_ids, names)
        if not plans:
            return []
        pool = pool_for_config(self.sessions, self.settings, plans[0].config)

        def prepare(plan: _SubmitPlan) -> arrays.PreparedTask | Exception:
            try:
                spec, submission = self._prepare(plan, pool)
                self.backend.transport.write_file(submission.script_path,
                                                  submission.script.encode("utf-8"), 0o700)
            except TransportUnavailableError:
                raise
            except (HpcdetError, OSError) as exc:
                return exc
            return arrays.PreparedTask(plan.job_pk, plan.run.trial_id, spec, submission)

        # The files are written durably (fsync): threads overlap the waits. Over SSH the
        # one connection is not shared between threads.
        local = isinstance(self.backend.transport, LocalTransport)
        with ThreadPoolExecutor(PREPARE_THREADS if local else 1) as pool_of_threads:
            outcomes = list(pool_of_threads.map(prepare, plans))
        prepared = [o for o in outcomes if isinstance(o, arrays.PreparedTask)]
        failed = [(plan.job_pk, o) for plan, o in zip(plans, outcomes, strict=True)
                  if isinstance(o, Exception)]
        if failed:
            with session_scope(self.sessions) as session:
                for job_pk, error in failed:
                    self._submission_failed(session, job_pk, error)
        return prepared

    def submission_failed(self, job_pk: int, exc: Exception) -> None:
        """End a job whose submission failed, and its trial, in a transaction of its own."""
        with session_scope(self.sessions) as session:
            self._submission_failed(session, job_pk, exc)

    def account_ready(self, account: str | None) -> None:
        """The fair-share account a job is charged to exists."""
        self.cluster_view.ensure_account(account)

    def _record_intent(self, session: Session, trial_id: int) -> _SubmitPlan | None:
        plans = self._record_intents(session, [trial_id], [None])
        return plans[0] if plans else None

    def _record_intents(self, session: Session, trial_ids: Sequence[int],
                        names: Sequence[str | None]) -> list[_SubmitPlan]:
        """An intent (a job row without an id) per trial still QUEUED, named as given (None:
        the run's own job name); each experiment and its context are read once."""
        trials = {t.id: t for t in session.scalars(select(Trial).where(Trial.id.in_(trial_ids)))}
        experiments: dict[int, tuple[Experiment, bytes]] = {}
        started: list[tuple[Job, Trial, Experiment, bytes]] = []
        for trial_id, name in zip(trial_ids, names, strict=True):
            trial = trials.get(trial_id)
            if trial is None or trial.state != State.QUEUED.value:
                continue
            if trial.experiment_id not in experiments:
                exp = session.get_one(Experiment, trial.experiment_id)
                experiments[exp.id] = (exp, session.scalars(select(Experiment.context).where(
                    Experiment.id == exp.id)).one())
            exp, context = experiments[trial.experiment_id]
            trial.run_id += 1
            job = Job(trial_id=trial.id, run_id=trial.run_id, active=True,
                      name=name or self._run_of(trial, exp).job_name)
            session.add(job)
            started.append((job, trial, exp, context))
        session.flush()
        return [self._plan(job, trial, exp, context) for job, trial, exp, context in started]

    @staticmethod
    def _run_of(trial: Trial, exp: Experiment) -> TrialRun:
        return TrialRun(exp.id, trial.id, trial.run_id, trial.job_dir,
                        excluded_nodes=tuple(trial.excluded_nodes or ()),
                        tag=(trial.request_id or "")[:8], owner=exp.owner)

    def _plan(self, job: Job, trial: Trial, exp: Experiment, context: bytes) -> _SubmitPlan:
        run = self._run_of(trial, exp)
        info = trial_info(self.settings, exp.config, run, hparams=trial.hparams, seed=trial.seed,
                          latest_checkpoint=trial.latest_checkpoint)
        token = secrets.token_urlsafe(32)  # only its hash is stored; the job's files get it
        trial.token = hash_token(token)
        return _SubmitPlan(job.id, run, dict(exp.config), info, context, token)

    def _render_and_submit(self, plan: _SubmitPlan) -> tuple[str, JobSpec, str]:
        spec, submission = self._prepare(plan)
        self.cluster_view.ensure_account(spec.account)
        return self.backend.submit(submission), spec, submission.script_path

    def _prepare(self, plan: _SubmitPlan,
                 pool: Pool | None = None) -> tuple[JobSpec, Submission]:
        """Write the trial's job directory and render its job (nothing submitted); ``pool``:
        the experiment's, when the caller has it already."""
        runas = getattr(self.backend, "runas", None)
        cert = job_cert_pem(self.settings.tls)
        # An experiment stored with a checkpoint directory others control (an older master's
        # shared default) is not run as its owner: a resumed trial would load what's there.
        check_run_storage(self.settings, plan.config, plan.run.owner)
        owner_mode = runas is not None and self.settings.runas.owner_mode
        if plan.run.run_id == 1:
            self._clear_stale_job_dir(plan.run, runas if owner_mode else None)
        if runas is not None and owner_mode:
            # The owner's helper writes the files: owned by the owner, private to them.
            runas.prepare(plan.run.owner, plan.run.job_dir, job_dir_archive(
                context_tar=plan.context, trial_info=plan.info, token=plan.token,
                master_cert=cert))
        else:
            prepare_job_dir(plan.run.job_dir, context_tar=plan.context, trial_info=plan.info,
                            token=plan.token, master_cert=cert, files=self.backend.transport)
        pool = pool or pool_for_config(self.sessions, self.settings, plan.config)
        spec = build_job_spec(self.settings, plan.config, plan.run, pool,
                              files=self.backend.transport)
        return spec, self.backend.render(spec)

    def _clear_stale_job_dir(self, run: TrialRun, runas: RunAs | None) -> None:
        """Remove what a trial's first run finds in its job directory: left by an earlier
        database under the same job root (its context would be run instead of this
        experiment's, its latest_checkpoint.json resumed from)."""
        files = self.backend.transport
        if not files.exists(run.job_dir):
            return
        log.warning("trial %s: removing %s, left by a trial this database does not know",
                    run.trial_id, run.job_dir)
        if runas is not None:
            runas.remove(run.owner, run.job_dir)
        else:
            files.remove_tree(run.job_dir)

    def _submission_failed(self, session: Session, job_pk: int, exc: Exception) -> None:
        job = session.get_one(Job, job_pk)
        trial = session.get_one(Trial, job.trial_id)
        job.active, job.phase, job.ended_at = False, "FAILED", utcnow()
        add_system_line(session, trial.id, f"submission failed: {exc}")
        transition(session, trial, State.ERROR, cause=f"submission failed: {exc}")

    def _recover_intents(self) -> int:
        """Find jobs a previous master submitted but never recorded; drop the rest.

        An intent whose job Slurm knows (by its unique name; an array task's by its array's
        name) is adopted; one it does not know never reached Slurm, so it is dropped and the
        trial is submitted afresh.
        """
        with session_scope(self.sessions) as session:
            intents = session.scalars(select(Job).where(Job.active, Job.job_id.is_(None))).all()
            if not intents:
                return 0
            names = [j.name for j in intents if j.name]
            found = arrays.recovered_ids(names, self.backend.find(arrays.names_to_find(names)),
                                         self.backend.array_task_id)
            for job in intents:
                self._settle_intent(session, job, found.get(job.name))
            return len(intents)

    @staticmethod
    def _settle_intent(session: Session, job: Job, job_id: str | None) -> None:
        if job_id is not None:
            job.job_id = job_id
            add_system_line(session, job.trial_id, f"found Slurm job {job_id} ({job.name}), "
                            "submitted before the master restarted; following it")
            return
        job.active, job.phase, job.ended_at = False, "NOT_SUBMITTED", utcnow()
        add_system_line(session, job.trial_id, f"the submission of {job.name} did not reach "
                        "Slurm before the master restarted; submitting again")

    # stopping ---------------------------------------------------------------------
    def _cancel_stopping(self) -> int:
        """Cancel the jobs of trials that must stop, with one scheduler call for all.

        Killed trials, and trials out of restarts (STOPPING_ERROR), lose their jobs at once.
        A trial stopped gracefully (by its searcher, a cancel, or a pause) is asked through
        ``should_preempt()``; its job is cancelled only if it is not running (a queued job
        is withdrawn), or once ``preemption_timeout`` has passed.
        """
        with session_scope(self.sessions) as session:
            stopping = session.scalars(select(Trial).where(Trial.state.in_(_STOP_ASKED))).all()
            jobs = self._active_jobs(session, [t.id for t in stopping])
            busy = {j.trial_id for j in jobs} | allocations.trials_with_steps(
                session, [t.id for t in stopping])
            self._end_idle_stopping(session, stopping, busy)
            by_id = {t.id: t for t in stopping}
            timeouts = _preemption_timeouts(session, {t.experiment_id for t in stopping})
            to_cancel = [j for j in jobs if j.job_id and not j.cancel_requested
                         and _must_cancel(by_id[j.trial_id], j, timeouts)]
            if to_cancel:
                owners = _owners(session, {j.trial_id for j in to_cancel}, self.settings)
                for owner, ids in _by_owner(to_cancel, owners).items():
                    self.backend.cancel(ids, owner=owner)
                for j in to_cancel:
                    j.cancel_requested = True
            return len(to_cancel)

    @staticmethod
    def _end_idle_stopping(session: Session, stopping: Sequence[Trial],
                           running: set[int]) -> None:
        for trial in stopping:
            if trial.id not in running and State(trial.state).is_stopping:
                transition(session, trial, STOPPING_TO_TERMINAL[State(trial.state)],
                           cause="nothing left to stop")

    @staticmethod
    def _active_jobs(session: Session, trial_ids: Sequence[int]) -> list[Job]:
        if not trial_ids:
            return []
        return list(session.scalars(select(Job).where(Job.trial_id.in_(trial_ids), Job.active)))

    # polling ------------------------------------------------------------------------
    def _poll(self) -> int:
        """One scheduler poll for every active job (trials' and command tasks'), applied
        in one transaction for the trials and one for the tasks.

        Reports a finished job left in its spool directory are collected first, in their
        own transaction, so that the trial's outcome sees its last metrics and checkpoints.
        """
        with session_scope(self.sessions) as session:
            rows = session.execute(select(Job.id, Job.trial_id, Job.job_id, Trial.job_dir)
                                   .join(Trial, Trial.id == Job.trial_id)
                                   .where(Job.active, Job.job_id.is_not(None))).all()
            task_refs = tasks.active_task_refs(session)
            linked = unmanaged.linked_job_refs(session)  # users' own jobs (core_v2)
        refs = [(job_pk, trial_id, JobRef(str(job_id), job_dir))
                for job_pk, trial_id, job_id, job_dir in rows]
        statuses = self._settle_missing(self.backend.poll(
            [ref for _, _, ref in refs] + [r for _, r in task_refs] + [r for _, r in linked]))
        with session_scope(self.sessions) as session:
            unmanaged.end_lost_runs(session, linked, statuses)
        if not refs and not task_refs:
            return len(linked)
        self.health.scheduler_ok()
        tasks.apply_task_statuses(self.sessions, task_refs, statuses)
        self._collect_spools([(trial_id, ref) for _, trial_id, ref in refs], statuses)
        with session_scope(self.sessions) as session:
            # One query for the jobs with their trials, one for their experiments' configs
            # (jobs that ended meanwhile, e.g. through a kill, are no longer active).
            pairs = session.execute(select(Job, Trial).join(Trial, Trial.id == Job.trial_id)
                                    .where(Job.id.in_([pk for pk, _, _ in refs]),
                                           Job.active)).all()
            configs = _configs_of(session, {trial.experiment_id for _, trial in pairs})
            for job, trial in pairs:
                status = statuses.get(str(job.job_id))
                if status is not None:
                    self._apply(session, job, trial, configs[trial.experiment_id], status)
        return len(refs) + len(task_refs)

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
        self._note_pending_reason(session, job, status)
        job.phase, job.native_state = status.phase.value, status.native_state
        job.reason, job.nodes = status.reason, status.nodes or job.nodes
        if status.exit_code is not None:
            job.exit_code = status.exit_code
        final = status.phase.is_terminal
        files = self.backend.transport
        ingest_job_logs(session, job, trial, config, final=final, files=files,
                        scheduler=self.backend.name)
        max_restarts = _max_restarts(config)
        if status.restarts is not None and status.restarts > job.requeues:
            job_outcomes.adopt_requeues(session, job, trial, status, max_restarts, files=files)
        if final:
            job.active, job.ended_at = False, utcnow()
            job_outcomes.job_ended(session, job, trial, status, max_restarts, files=files)
        elif status.phase is JobPhase.RUNNING and trial.state == State.QUEUED.value:
            transition(session, trial, State.RUNNING,
                       cause=f"job {job.job_id} running on {status.nodes or '?'}")

    @staticmethod
    def _note_pending_reason(session: Session, job: Job, status: JobStatus) -> None:
        """Say in the trial's log why its job waits, each time Slurm's reason changes."""
        if status.phase is JobPhase.PENDING and status.reason and status.reason != job.reason:
            add_system_line(session, job.trial_id,
                            f"job {job.job_id} is pending: {status.reason}")

    # experiments --------------------------------------------------------------------
    def _roll_up(self) -> None:
        with session_scope(self.sessions) as session:
            # Active experiments end when their searcher says so; this ends the ones being
            # stopped once nothing runs. Both live in experiments/ending.py.
            end_stopped_experiments(session)


def _configs_of(session: Session, experiment_ids: set[int]) -> dict[int, dict[str, Any]]:
    """Each experiment's effective config, with one query."""
    if not experiment_ids:
        return {}
    return dict(session.execute(select(Experiment.id, Experiment.config).where(
        Experiment.id.in_(experiment_ids))).all())


def _max_restarts(config: dict[str, Any]) -> int:
    value = config.get("max_restarts")
    return DEFAULT_MAX_RESTARTS if value is None else int(value)


def _preemption_timeouts(session: Session, experiment_ids: set[int]) -> dict[int, float]:
    """Each experiment's ``preemption_timeout`` in seconds (the default where unset)."""
    return {exp_id: float(config.get("preemption_timeout") or DEFAULT_PREEMPTION_TIMEOUT)
            for exp_id, config in _configs_of(session, experiment_ids).items()}


def _must_cancel(trial: Trial, job: Job, timeouts: dict[int, float]) -> bool:
    """Killed or failed, not yet running (nothing to ask), or past its preemption timeout."""
    if trial.state in _STOP_NOW or job.phase != JobPhase.RUNNING.value:
        return True
    if trial.stop_requested_at is None:
        return True
    waited = (utcnow() - as_utc(trial.stop_requested_at)).total_seconds()
    return waited > timeouts.get(trial.experiment_id, DEFAULT_PREEMPTION_TIMEOUT)


def _owners(session: Session, trial_ids: set[int], settings: MasterSettings) -> dict[int, str]:
    """``{trial id: experiment owner}`` in run-as-owner mode; empty otherwise."""
    if not settings.runas.owner_mode or not trial_ids:
        return {}
    rows = session.execute(select(Trial.id, Experiment.owner).join(
        Experiment, Experiment.id == Trial.experiment_id).where(Trial.id.in_(trial_ids)))
    return {trial_id: owner for trial_id, owner in rows}


def _by_owner(jobs: Sequence[Job], owners: Mapping[int, str]) -> dict[str | None, list[str]]:
    """Job ids grouped by the owner they are cancelled as (None: the service account)."""
    groups: dict[str | None, list[str]] = {}
    for job in jobs:
        groups.setdefault(owners.get(job.trial_id), []).append(str(job.job_id))
    return groups
