"""Trials as steps of an allocation: placement, their ends, stops, and the fallback.

A step is one run of one trial inside an allocation (:class:`AllocationStep`). The master
*places* a QUEUED trial into a running allocation's free slots: it prepares the trial's job
directory and writes the trial's job script exactly as for a batch job (the same
:func:`build_job_spec` and ``Backend.render``), and records the step ASSIGNED. The agent
picks it up on its next exchange (:mod:`hpcdet.master.api.allocations`), runs the script
inside the allocation, where its ``srun`` becomes a step (``SLURM_EXACT``), and reports
the start (the trial goes RUNNING) and the exit code (EXITED). The reconciler then applies
the exit through :func:`hpcdet.master.scheduling.job_outcomes.job_ended`, as for a job:
same classification, same restarts.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend, JobPhase, JobStatus
from hpcdet.dispatcher.jobdir import prepare_job_dir
from hpcdet.master.allocation_models import Allocation, AllocationStep
from hpcdet.master.db import session_scope
from hpcdet.master.models import Experiment, Job, Trial, as_utc, utcnow
from hpcdet.master.queue.pools import pool_for_config
from hpcdet.master.reports.logs import add_system_line, ingest_job_logs
from hpcdet.master.scheduling import job_outcomes
from hpcdet.master.scheduling.job_outcomes import Outcome, max_restarts
from hpcdet.master.scheduling.jobspec import TrialRun, build_job_spec
from hpcdet.master.scheduling.stop_policy import STOP_ASKED, must_stop_now, preemption_timeout
from hpcdet.master.scheduling.submission import trial_info
from hpcdet.master.security.tokens import hash_token
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.tls import job_cert_pem
from hpcdet.master.transitions import transition
from hpcdet.states import STOPPING_TO_TERMINAL, State

log = logging.getLogger(__name__)

ASSIGNED, RUNNING, EXITED, CLOSED = "ASSIGNED", "RUNNING", "EXITED", "CLOSED"
_ACTIVE = (ASSIGNED, RUNNING, EXITED)


def busy(session: Session, allocation: Allocation) -> bool:
    """Whether any step of ``allocation`` is not closed yet."""
    return session.scalars(select(AllocationStep.id).where(
        AllocationStep.allocation_id == allocation.id,
        AllocationStep.phase.in_(_ACTIVE)).limit(1)).first() is not None


def step_log_id(job_id: str, run_id: int) -> str:
    """The name a step's output files carry: ``slurm-<job id>.<run id>.out`` in the trial's
    job directory (the agent writes them; the master ingests them like a job's)."""
    return f"{job_id}.{run_id}"


class StepDriver:
    """The reconciler-side half of steps: apply exits, stop steps."""

    def __init__(self, settings: MasterSettings, sessions: sessionmaker[Session],
                 backend: Backend) -> None:
        self.settings, self.sessions, self.backend = settings, sessions, backend

    # exits ------------------------------------------------------------------------------
    def apply_exits(self) -> int:
        """Apply each step the agent reported ended to its trial, as a job's end is."""
        with session_scope(self.sessions) as session:
            steps = session.scalars(select(AllocationStep).where(
                AllocationStep.phase == EXITED)).all()
            for step in steps:
                allocation = session.get_one(Allocation, step.allocation_id)
                self._apply_exit(session, allocation, step)
            return len(steps)

    def _apply_exit(self, session: Session, allocation: Allocation,
                    step: AllocationStep) -> None:
        step.phase = CLOSED
        trial = session.get_one(Trial, step.trial_id)
        if trial.run_id != step.run_id:
            return  # a later run of the trial already started elsewhere
        config = session.get_one(Experiment, trial.experiment_id).config
        code = step.exit_code
        logs = step_job(allocation, step, job_id=step_log_id(str(allocation.job_id),
                                                             step.run_id))
        ingest_job_logs(session, logs, trial, config, final=True, files=self.backend.transport,
                        scheduler=self.backend.name)
        add_system_line(session, trial.id, f"step of allocation job {allocation.job_id} "
                        f"(run {step.run_id}) exited with code {code}")
        job_outcomes.job_ended(session, step_job(allocation, step), trial, step_status(
            allocation, step), max_restarts(config), files=self.backend.transport)

    # stops ------------------------------------------------------------------------------
    def stop_steps(self) -> None:
        """Ask the agents to end the steps of trials that must stop now (killed, out of
        restarts), or that were asked to stop gracefully longer than their
        ``preemption_timeout`` ago; the others stop on their own through
        ``should_preempt()``, as in a job."""
        with session_scope(self.sessions) as session:
            rows = session.execute(select(AllocationStep, Trial).join(
                Trial, Trial.id == AllocationStep.trial_id).where(
                AllocationStep.phase.in_((ASSIGNED, RUNNING)),
                ~AllocationStep.cancel_requested, Trial.state.in_(STOP_ASKED))).all()
            for step, trial in rows:
                if _must_end(session, trial):
                    step.cancel_requested = True
                    add_system_line(session, trial.id, "asking the allocation's agent to end "
                                    f"the trial's step (run {step.run_id})")


def place_queued(settings: MasterSettings, backend: Backend, session: Session,
                 allocation: Allocation) -> int:
    """Place the experiment's QUEUED trials into ``allocation``'s free slots, oldest first;
    how many were placed. Called when the agent asks for work (the exchange route), so a
    trial waits for a slot, not for a reconcile cycle; the agent is its only caller, one
    request at a time, so a trial is never placed twice."""
    if allocation.phase != "RUNNING" or allocation.release_requested \
            or allocation.cancel_requested:
        return 0
    free = allocation.slots - _used_slots(session, allocation.id)
    placed = 0
    for trial in _queued(session, allocation.experiment_id) if free > 0 else []:
        try:
            with session.begin_nested():  # a failed placement leaves the others' rows
                taken = _prepare_step(settings, backend, session, allocation, trial, free)
        except Exception as exc:  # one trial's bad files must not stop the others
            log.exception("placing trial %s into allocation %s failed", trial.id,
                          allocation.id)
            add_system_line(session, trial.id, f"placement failed: {exc}")
            transition(session, trial, State.ERROR, cause=f"placement failed: {exc}")
            continue
        free -= taken
        placed += bool(taken)
        if free <= 0:
            break
    return placed


def _queued(session: Session, experiment_id: int) -> list[Trial]:
    return list(session.scalars(select(Trial).where(
        Trial.experiment_id == experiment_id, Trial.state == State.QUEUED.value,
        ~select(Job.id).where(Job.trial_id == Trial.id, Job.active).exists(),
        ~select(AllocationStep.id).where(AllocationStep.trial_id == Trial.id,
                                         AllocationStep.phase.in_(_ACTIVE)).exists())
        .order_by(Trial.id)))


def _prepare_step(settings: MasterSettings, backend: Backend, session: Session,
                  allocation: Allocation, trial: Trial, free: int) -> int:
    """Write the trial's next run (job directory, token, job script); record its step."""
    exp = session.get_one(Experiment, trial.experiment_id)
    slots = int((exp.config.get("resources") or {}).get("slots_per_trial") or 1)
    if slots > free:
        return 0
    trial.run_id += 1
    run = TrialRun(exp.id, trial.id, trial.run_id, trial.job_dir,
                   excluded_nodes=tuple(trial.excluded_nodes or ()),
                   tag=(trial.request_id or "")[:8], owner=exp.owner)
    token = secrets.token_urlsafe(32)
    trial.token = hash_token(token)
    files = backend.transport
    if run.run_id == 1 and files.exists(run.job_dir):  # left by an earlier database
        files.remove_tree(run.job_dir)
    prepare_job_dir(run.job_dir, context_tar=exp.context, token=token,
                    trial_info=trial_info(settings, exp.config, run, hparams=trial.hparams,
                                          seed=trial.seed,
                                          latest_checkpoint=trial.latest_checkpoint),
                    master_cert=job_cert_pem(settings.tls), files=files)
    pool = pool_for_config(session, settings, exp.config)
    submission = backend.render(build_job_spec(settings, exp.config, run, pool, files=files))
    files.write_file(submission.script_path, submission.script.encode("utf-8"), 0o700)
    session.add(AllocationStep(allocation_id=allocation.id, trial_id=trial.id,
                               run_id=run.run_id, slots=slots,
                               script_path=submission.script_path))
    add_system_line(session, trial.id, f"placed into allocation {allocation.id} "
                    f"(run {run.run_id})")
    return slots


def fall_back(settings: MasterSettings, session: Session, allocation: Allocation,
              phase: JobPhase) -> None:
    """The allocation job ended: close its steps and send their trials back to QUEUED.

    A step that never started loses nothing (its trial simply stays QUEUED). One that ran
    counts as its job would: a walltime or a preemption is an interruption, anything else
    a failure (a restart); a trial being stopped ends as its stop says; a paused one stays.
    """
    steps = session.scalars(select(AllocationStep).where(
        AllocationStep.allocation_id == allocation.id,
        AllocationStep.phase.in_(_ACTIVE))).all()
    for step in steps:
        started = step.phase != ASSIGNED
        step.phase, step.ended_at = CLOSED, step.ended_at or utcnow()
        trial = session.get_one(Trial, step.trial_id)
        if not started or trial.run_id != step.run_id or State(trial.state).is_terminal:
            continue
        cause = f"allocation job {allocation.job_id} ended ({phase.value}) under the trial"
        current = State(trial.state)
        if current.is_stopping:
            transition(session, trial, STOPPING_TO_TERMINAL[current], cause=cause)
        elif current is State.PAUSED:
            add_system_line(session, trial.id, f"{cause}; the trial stays paused")
        else:
            outcome = (Outcome.INTERRUPTED if phase in (JobPhase.TIMEOUT, JobPhase.PREEMPTED)
                       else Outcome.FAILED)
            config = session.get_one(Experiment, trial.experiment_id).config
            job_outcomes.run_again(session, trial, outcome, cause, max_restarts(config))


# the agent's reports (the exchange route) -----------------------------------------------
def record_started(session: Session, allocation: Allocation, trial_id: int, run_id: int,
                   step_id: str | None) -> None:
    """The agent started the step: the trial is RUNNING (reports are idempotent)."""
    step = _step(session, allocation, trial_id, run_id)
    if step is None or step.phase != ASSIGNED:
        return
    step.phase, step.started_at, step.step_id = RUNNING, utcnow(), step_id
    trial = session.get_one(Trial, trial_id)
    if trial.run_id == run_id:
        where = step_id or f"allocation job {allocation.job_id}"
        job_outcomes.mark_running(session, trial, f"step {where}", allocation.nodes)


def record_exited(session: Session, allocation: Allocation, trial_id: int, run_id: int,
                  exit_code: int | None) -> None:
    """The step ended with ``exit_code`` (None: the agent could not start it)."""
    step = _step(session, allocation, trial_id, run_id)
    if step is None or step.phase not in (ASSIGNED, RUNNING):
        return
    step.phase, step.ended_at = EXITED, utcnow()
    step.exit_code = exit_code if exit_code is not None else 127


def instructions(session: Session, allocation: Allocation) -> dict[str, Any]:
    """What the agent should do now: steps to launch, steps to end, whether to exit."""
    steps = session.scalars(select(AllocationStep).where(
        AllocationStep.allocation_id == allocation.id,
        AllocationStep.phase.in_((ASSIGNED, RUNNING)))).all()
    return {
        "launch": [{"trial_id": s.trial_id, "run_id": s.run_id, "script": s.script_path,
                    "job_dir": _job_dir(session, s.trial_id)}
                   for s in steps if s.phase == ASSIGNED and not s.cancel_requested],
        "cancel": [{"trial_id": s.trial_id, "run_id": s.run_id}
                   for s in steps if s.cancel_requested],
        "exit": allocation.release_requested and not steps,
    }


def step_job(allocation: Allocation, step: AllocationStep, *,
             job_id: str | None = None) -> Job:
    """A transient (never stored) :class:`Job` standing for the step, so that a step's end
    is classified, and its logs read, by the same code as a job's."""
    return Job(trial_id=step.trial_id, run_id=step.run_id, job_id=job_id or allocation.job_id,
               name="", requeues=0, active=False, cancel_requested=step.cancel_requested,
               phase=None, nodes=allocation.nodes, log_offsets={},
               submitted_at=as_utc(step.placed_at))


def step_status(allocation: Allocation, step: AllocationStep) -> JobStatus:
    """The step's end as a job status: exit 0 COMPLETED; a step the master ended CANCELLED
    (an interruption, as a job the master cancelled); any other exit FAILED."""
    code = step.exit_code
    phase = (JobPhase.COMPLETED if code == 0 else
             JobPhase.CANCELLED if step.cancel_requested else JobPhase.FAILED)
    return JobStatus(str(allocation.job_id), phase, f"STEP EXIT {code}", exit_code=code,
                     nodes=allocation.nodes, source="agent")


def _step(session: Session, allocation: Allocation, trial_id: int,
          run_id: int) -> AllocationStep | None:
    return session.scalars(select(AllocationStep).where(
        AllocationStep.allocation_id == allocation.id, AllocationStep.trial_id == trial_id,
        AllocationStep.run_id == run_id)).first()


def _job_dir(session: Session, trial_id: int) -> str:
    return session.scalars(select(Trial.job_dir).where(Trial.id == trial_id)).one()


def _used_slots(session: Session, allocation_id: int) -> int:
    return int(session.scalar(select(func.coalesce(func.sum(AllocationStep.slots), 0)).where(
        AllocationStep.allocation_id == allocation_id,
        AllocationStep.phase.in_(_ACTIVE))) or 0)


def _must_end(session: Session, trial: Trial) -> bool:
    config = session.get_one(Experiment, trial.experiment_id).config
    return must_stop_now(trial, preemption_timeout(config))


def active_steps(session: Session, trial_ids: Sequence[int]) -> list[AllocationStep]:
    """The steps not yet closed of ``trial_ids``."""
    if not trial_ids:
        return []
    return list(session.scalars(select(AllocationStep).where(
        AllocationStep.trial_id.in_(trial_ids), AllocationStep.phase.in_(_ACTIVE))))
