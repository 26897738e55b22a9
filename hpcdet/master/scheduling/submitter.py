"""Submitting QUEUED trials as jobs: record the intent, prepare the job directory, submit.

Trials queued together go as job arrays (:mod:`.arrays`, which borrows this submitter's
one-trial steps); the rest one job each. Each submission commits its intent (a job row
with a name and no id) before the scheduler's submit command, so that a master that dies
in between finds the job again (:mod:`.intents`) instead of submitting it twice.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend, JobPhase, JobSpec, Submission
from hpcdet.dispatcher.jobdir import job_dir_archive, prepare_job_dir
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.transport import LocalTransport, TransportUnavailableError
from hpcdet.errors import HpcdetError
from hpcdet.master.db import session_scope
from hpcdet.master.models import Experiment, Job, Trial, utcnow
from hpcdet.master.queue.pools import Pool, pool_for_config
from hpcdet.master.queue.slots import record_layout
from hpcdet.master.reports.logs import add_system_line
from hpcdet.master.scheduling import allocations, arrays
from hpcdet.master.scheduling.cluster_view import ClusterView
from hpcdet.master.scheduling.jobspec import TrialRun, build_job_spec
from hpcdet.master.scheduling.submission import trial_info
from hpcdet.master.security.storage_roots import check_run_storage
from hpcdet.master.security.tokens import hash_token
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.tls import job_cert_pem
from hpcdet.master.transitions import transition
from hpcdet.states import State

log = logging.getLogger(__name__)
# Threads preparing an array's job directories at once (on this host's file system).
PREPARE_THREADS = 8


@dataclass(frozen=True)
class _SubmitPlan:
    """What one submission needs, read in the transaction that records the intent."""

    job_pk: int
    run: TrialRun
    config: dict[str, Any]
    info: dict[str, Any]
    context: bytes
    token: str


class Submitter:
    """Submits the trials that are QUEUED without a job; the host of the array path."""

    def __init__(self, settings: MasterSettings, sessions: sessionmaker[Session],
                 backend: Backend, cluster_view: ClusterView) -> None:
        self.settings, self.sessions, self.backend = settings, sessions, backend
        self.cluster_view = cluster_view
        # Trials queued together go as job arrays (not where the owner's helper writes files).
        self._arrays = (arrays.ArraySubmitter(self) if settings.resource_manager.job_arrays
                        and not settings.runas.owner_mode else None)

    def submit_queued(self) -> int:
        """Submit every trial QUEUED without an active job (and not held for an
        allocation); returns how many jobs (array tasks included) were submitted."""
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
        name and no id) is found again by :func:`.intents.recover_intents` instead of
        resubmitted.
        """
        with session_scope(self.sessions) as session:
            plan = self._record_intent(session, trial_id)
        if plan is None:
            return 0
        try:
            job_id, spec, script_path = self._render_and_submit(plan)
        except TransportUnavailableError:
            # The login node dropped: the intent stays, and the next cycle's
            # recover_intents adopts the job (if sbatch ran) or submits it again.
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
        if self.settings.resource_manager.expedited_requeue:
            # Whether the cluster allows it is asked here, at submit time: dry runs and the
            # check at an experiment's creation render a plain requeue, asking nothing.
            spec = self.backend.with_expedited_requeue(spec)
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
        job.active, job.phase, job.ended_at = False, JobPhase.FAILED.value, utcnow()
        add_system_line(session, trial.id, f"submission failed: {exc}")
        transition(session, trial, State.ERROR, cause=f"submission failed: {exc}")
