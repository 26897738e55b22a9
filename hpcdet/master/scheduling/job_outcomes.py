"""How a batch job ended (:func:`job_ending`, for trials and command tasks alike), and what
that means for a trial (or a requeue by the scheduler).

Every end of a run is one of three outcomes:

* **done**: the job exited 0 without having been asked to stop: the trial COMPLETED (or it
  reported an early exit, which its searcher reads).
* **interrupted**: preemption or the walltime, handled as they should be: the code
  checkpointed and exited after SIGTERM/SIGUSR2 (it left a ``preempted`` exit reason in
  the job directory, see :mod:`hpcdet.jobfiles`), Slurm preempted the job without
  requeueing it, it hit its time limit after saving a checkpoint during this run, or the
  master itself cancelled it (a pause or stop that outlived ``preemption_timeout``). The
  trial is resubmitted from its latest checkpoint; ``interruptions`` counts these and
  ``max_restarts`` ignores them.
* **failed**: anything else (non-zero exit, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, a TIMEOUT
  without a new checkpoint, a job cancelled behind the master's back, a job Slurm lost).
  A non-zero exit is a failure even when the chief recorded a preemption: a rank that
  fails makes srun SIGTERM the others, and the chief checkpoints as if preempted.
  The trial restarts from its latest checkpoint while ``restarts < max_restarts`` and no
  ``cancel_retries`` log policy matched, else it ends ERROR.

A job that Slurm requeues keeps its id; the master adopts each requeue it sees (Slurm's
restart count went up), classifies the execution that ended the same way, and moves the
trial back to QUEUED until the job runs again.
"""

from __future__ import annotations

import enum
import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from hpcdet.dispatcher import JobPhase, JobStatus
from hpcdet.dispatcher.transport import Transport
from hpcdet.jobfiles import PREEMPTED, exit_reason_path
from hpcdet.master.models import Checkpoint, Job, Trial, as_utc
from hpcdet.master.reports.logs import add_system_line
from hpcdet.master.transitions import transition
from hpcdet.states import STOPPING_TO_TERMINAL, State

DEFAULT_MAX_RESTARTS = 5
# How a job may end after its trial was asked to stop, for the trial to end COMPLETED.
_CLEAN_STOP = frozenset({JobPhase.COMPLETED, JobPhase.CANCELLED, JobPhase.PREEMPTED})


class Outcome(str, enum.Enum):
    """How one execution of a trial's job ended, from the trial's point of view."""

    DONE = "done"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


class Ending(str, enum.Enum):
    """How the scheduler says a job ended, whatever the job was for (trial or task)."""

    COMPLETED = "completed"  # exited 0
    CANCELLED = "cancelled"  # scancel/qdel, by hpcdet or anyone else
    PREEMPTED = "preempted"  # preempted and not requeued
    TIMEOUT = "timeout"  # its time limit (Slurm TIMEOUT; PBS walltime)
    FAILED = "failed"  # non-zero exit, node failure, out of memory, lost, ...


_ENDINGS = {JobPhase.COMPLETED: Ending.COMPLETED, JobPhase.CANCELLED: Ending.CANCELLED,
            JobPhase.PREEMPTED: Ending.PREEMPTED, JobPhase.TIMEOUT: Ending.TIMEOUT}


def job_ending(status: JobStatus) -> Ending:
    """The one classification of a finished job's status, for trials and command tasks."""
    return _ENDINGS.get(status.phase, Ending.FAILED)


def classify(session: Session, job: Job, trial: Trial, status: JobStatus, *,
             files: Transport) -> Outcome:
    """The outcome of the execution of ``job`` that just ended with ``status``; ``files``
    reaches the job directory (the backend's transport)."""
    ending = job_ending(status)
    # A job that failed failed, whatever its chief wrote: when one rank exits non-zero, srun
    # SIGTERMs the others, and the chief checkpoints and records a preemption it never had.
    if ending is not Ending.FAILED and _stopped_on_request(job, trial.job_dir, job.requeues,
                                                           files):
        return Outcome.INTERRUPTED
    if ending is Ending.CANCELLED and job.cancel_requested:
        return Outcome.INTERRUPTED  # the master cancelled it (a pause, a stop): no failure
    if ending is Ending.COMPLETED or trial.early_exit:
        return Outcome.DONE
    if ending is Ending.PREEMPTED:
        return Outcome.INTERRUPTED
    if ending is Ending.TIMEOUT and _checkpointed_during(session, job, trial):
        return Outcome.INTERRUPTED
    return Outcome.FAILED


def _stopped_on_request(job: Job, job_dir: str, execution: int,
                        files: Transport) -> bool:
    """Whether that execution recorded that it stopped because it was asked to
    (:mod:`hpcdet.jobfiles`); an unreachable cluster raises rather than answer no."""
    if not job.job_id:
        return False
    path = str(exit_reason_path(job_dir, str(job.job_id), execution))
    try:
        data = json.loads(files.read_file(path).decode("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("reason") == PREEMPTED


def _checkpointed_during(session: Session, job: Job, trial: Trial) -> bool:
    """Whether the trial registered a checkpoint since this job was submitted."""
    newest = session.scalars(select(Checkpoint.reported_at).where(
        Checkpoint.trial_id == trial.id).order_by(Checkpoint.reported_at.desc()).limit(1)).first()
    return newest is not None and as_utc(newest) >= as_utc(job.submitted_at)


def job_ended(session: Session, job: Job, trial: Trial, status: JobStatus,
              max_restarts: int, *, files: Transport) -> None:
    """Apply the end of ``job``'s last execution to ``trial`` (the one place that does)."""
    cause = end_cause(job.job_id, status)
    current = State(trial.state)
    if current.is_terminal:
        return
    outcome = classify(session, job, trial, status, files=files)
    if current.is_stopping:
        _end_stopping(session, trial, current, status, outcome, cause)
    elif current is State.PAUSED:
        add_system_line(session, trial.id, f"{cause}; the trial stays paused")
    elif outcome is Outcome.DONE:
        _complete(session, job, trial, status, cause)
    else:
        run_again(session, trial, outcome, cause, max_restarts)


def end_cause(job_id: str | None, status: JobStatus) -> str:
    """How job ``job_id`` ended, in words: the scheduler's state and exit code, or that it
    ended without one because the scheduler no longer knows the job (``MISSING``)."""
    if status.phase is JobPhase.MISSING:
        return (f"job {job_id} ended without an exit code "
                "(the scheduler no longer knows it)")
    if status.exit_code is None:
        return f"job {job_id} ended {ended_words(status)} without an exit code"
    return f"job {job_id} ended {ended_words(status)} (exit code {status.exit_code})"


def ended_words(status: JobStatus) -> str:
    """The scheduler's word for the job's end, led by hpcdet's phase where that word does
    not say it (PBS calls every finished job ``F``: the cause must say it was cancelled)."""
    native = status.native_state or ""
    if native.startswith(status.phase.value):
        return native
    return f"{status.phase.value} ({native})" if native else status.phase.value


def _end_stopping(session: Session, trial: Trial, current: State, status: JobStatus,
                  outcome: Outcome, cause: str) -> None:
    clean = status.phase in _CLEAN_STOP or outcome is Outcome.INTERRUPTED
    if current is State.STOPPING_COMPLETED and not clean:
        transition(session, trial, State.ERROR, cause=cause)  # it failed while stopping
    else:
        transition(session, trial, STOPPING_TO_TERMINAL[current], cause=cause)


def _complete(session: Session, job: Job, trial: Trial, status: JobStatus, cause: str) -> None:
    # A trial still QUEUED ran and ended between two polls.
    mark_running(session, trial, f"job {job.job_id}", status.nodes, ended=True)
    transition(session, trial, State.COMPLETED, cause=cause)


def run_again(session: Session, trial: Trial, outcome: Outcome, cause: str,
              max_restarts: int, *, job_alive: bool = False) -> bool:
    """Queue the trial again after an interruption or a failure; False if it may not.

    ``cause`` says what happened; the recorded cause adds what it counts as. A trial out
    of restarts ends ERROR, or STOPPING_ERROR while Slurm still holds its (requeued) job,
    which the reconciler then cancels at once.
    """
    if outcome is Outcome.INTERRUPTED:
        trial.interruptions += 1
        _requeue(session, trial, f"{cause}: interrupted after checkpointing "
                 f"(interruption {trial.interruptions}, not counted as a restart)")
        return True
    if trial.cancel_retries or trial.restarts >= max_restarts:
        why = ("a log policy cancelled retries" if trial.cancel_retries
               else f"max_restarts ({max_restarts}) reached")
        stop_at = State.STOPPING_ERROR if job_alive else State.ERROR
        transition(session, trial, stop_at, cause=f"{cause}: failed; {why}")
        return False
    trial.restarts += 1
    _requeue(session, trial, f"{cause}: failed; restart {trial.restarts} of {max_restarts}"
             f" from {_resume_point(trial)}")
    return True


def _requeue(session: Session, trial: Trial, cause: str) -> None:
    if not transition(session, trial, State.QUEUED, cause=cause):
        add_system_line(session, trial.id, cause)  # already QUEUED: keep the reason visible


def _resume_point(trial: Trial) -> str:
    return f"checkpoint {trial.latest_checkpoint}" if trial.latest_checkpoint else "the start"


def adopt_requeues(session: Session, job: Job, trial: Trial, status: JobStatus,
                   max_restarts: int, *, files: Transport) -> None:
    """The scheduler requeued ``job`` (its restart count went up): count each ended execution.

    A trial still RUNNING goes back to QUEUED (the caller moves it to RUNNING again if the
    job already runs). A trial out of restarts goes to STOPPING_ERROR, whose job the
    reconciler cancels at once.
    """
    restarts = status.restarts or 0
    for execution in range(job.requeues, restarts):
        outcome = (Outcome.INTERRUPTED
                   if _stopped_on_request(job, trial.job_dir, execution, files)
                   else Outcome.FAILED)
        job.requeues = execution + 1
        cause = f"the scheduler requeued job {job.job_id} (execution {execution + 1} ended)"
        if State(trial.state) not in (State.QUEUED, State.RUNNING):
            add_system_line(session, trial.id, cause)
        elif not run_again(session, trial, outcome, cause, max_restarts, job_alive=True):
            return


def mark_running(session: Session, trial: Trial, where: str, nodes: str | None, *,
                 ended: bool = False) -> None:
    """A QUEUED trial is RUNNING: ``where`` (its job, or its step in an allocation) was
    seen running on ``nodes`` (``ended``: seen only after it ended). The one place that
    decides QUEUED -> RUNNING for a trial; a trial in any other state is left as it is."""
    if trial.state != State.QUEUED.value:
        return
    seen = "ran on {} (seen after it ended)" if ended else "running on {}"
    transition(session, trial, State.RUNNING, cause=f"{where} {seen.format(nodes or '?')}")


def max_restarts(config: dict[str, Any]) -> int:
    """The experiment's ``max_restarts`` (the default where unset)."""
    value = config.get("max_restarts")
    return DEFAULT_MAX_RESTARTS if value is None else int(value)
