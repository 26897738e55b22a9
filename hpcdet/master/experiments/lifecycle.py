"""What a user can do to an experiment's lifecycle: pause, activate, cancel, kill, archive.

Each function changes states through :func:`~hpcdet.master.transitions.transition` only
and leaves the scheduler work to the reconciler, which runs within seconds:

* **pause**: the experiment and its queued or running trials become PAUSED. A running
  trial's code sees ``should_preempt()`` (the preemption route says yes to PAUSED trials),
  checkpoints and exits, freeing its allocation; a queued job is withdrawn (``scancel``).
  Searchers do not act on a paused experiment; reports wait for them.
* **activate**: the experiment is ACTIVE again; its paused trials are QUEUED and
  resubmitted from their latest checkpoints once their old jobs are gone.
* **cancel**: like Determined's cancel: every trial still going is asked to checkpoint and
  stop (STOPPING_CANCELED); queued jobs are withdrawn; the experiment ends CANCELED.
* **kill**: every job is cancelled at once (STOPPING_KILLED); the experiment ends CANCELED.
* **archive / unarchive**: only ended experiments; hides them from default lists, keeps
  everything.

Asking for what is already so (pausing a paused experiment) changes nothing and is not
an error; asking for what the state does not allow is a 409 naming the state.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from hpcdet.master.errors import Conflict
from hpcdet.master.models import Experiment, Trial, utcnow
from hpcdet.master.transitions import transition
from hpcdet.states import EntityKind, State, is_allowed


def pause(session: Session, exp: Experiment, actor: str) -> None:
    """Pause an ACTIVE experiment: its trials checkpoint and free their allocations."""
    for trial in _switch(session, exp, actor, "pause", (State.ACTIVE, State.PAUSED),
                         {State.QUEUED, State.RUNNING}):
        transition(session, trial, State.PAUSED, cause="experiment paused", actor=actor)
        trial.stop_requested_at = utcnow()


def activate(session: Session, exp: Experiment, actor: str) -> None:
    """Resume a PAUSED experiment: paused trials are resubmitted from their checkpoints."""
    for trial in _switch(session, exp, actor, "activate", (State.PAUSED, State.ACTIVE),
                         {State.PAUSED}):
        transition(session, trial, State.QUEUED, cause="experiment activated", actor=actor)
        trial.stop_requested_at = None


def _switch(session: Session, exp: Experiment, actor: str, verb: str,
            states: tuple[State, State], trials_in: set[State]) -> list[Trial]:
    """Move a managed ``exp`` from ``states[0]`` to ``states[1]`` (nothing if it is there
    already) and return its trials in ``trials_in``, for the caller to move."""
    source, target = states
    if exp.state == target.value:
        return []
    _require_managed(exp, verb)
    _require(exp, {source}, verb)
    transition(session, exp, target, cause=f"{verb} requested", actor=actor)
    return _trials(session, exp, trials_in)


def cancel(session: Session, exp: Experiment, actor: str) -> None:
    """Stop gracefully: running trials checkpoint and stop, queued jobs are withdrawn."""
    _stop(session, exp, State.STOPPING_CANCELED, "cancel", actor)


def kill(session: Session, exp: Experiment, actor: str) -> None:
    """Stop at once: every job of the experiment is cancelled."""
    _stop(session, exp, State.STOPPING_KILLED, "kill", actor)


def fail(session: Session, exp: Experiment, cause: str) -> None:
    """The master cannot go on with this experiment (its searcher failed): its trials stop
    at once and it ends in ERROR once they have."""
    if State(exp.state).is_terminal or exp.state == State.STOPPING_ERROR.value:
        return
    transition(session, exp, State.STOPPING_ERROR, cause=cause)
    going = {State.QUEUED, State.RUNNING, State.PAUSED, State.STOPPING_COMPLETED,
             State.STOPPING_CANCELED}
    for trial in _trials(session, exp, going):
        transition(session, trial, State.STOPPING_ERROR, cause=f"experiment failed: {cause}")
        trial.stop_requested_at = trial.stop_requested_at or utcnow()


def set_archived(exp: Experiment, archived: bool) -> None:
    """Archive (hide) or unarchive an ended experiment."""
    if archived and not State(exp.state).is_terminal:
        raise Conflict("conflict", f"experiment {exp.id} is {exp.state}: only an ended "
                       "experiment can be archived (cancel or kill it first)")
    exp.archived = archived


def _stop(session: Session, exp: Experiment, stopping: State, verb: str, actor: str) -> None:
    current = State(exp.state)
    if current is stopping:
        return
    if current.is_terminal:
        raise Conflict("conflict", f"experiment {exp.id} already ended {exp.state}")
    if current.is_stopping and not is_allowed(EntityKind.EXPERIMENT, current, stopping):
        return  # already stopping more severely (killed, failing): nothing to add
    transition(session, exp, stopping, cause=f"{verb} requested", actor=actor)
    going = {State.QUEUED, State.RUNNING, State.PAUSED, State.STOPPING_COMPLETED,
             State.STOPPING_CANCELED}
    for trial in _trials(session, exp, going):
        transition(session, trial, stopping, cause=f"experiment {verb}ed", actor=actor)
        trial.stop_requested_at = trial.stop_requested_at or utcnow()


def _require(exp: Experiment, allowed: set[State], verb: str) -> None:
    if State(exp.state) not in allowed:
        raise Conflict("conflict", f"cannot {verb} experiment {exp.id}: it is {exp.state}")


def _require_managed(exp: Experiment, verb: str) -> None:
    """Pausing needs a master that can start the trials again: not an unmanaged one."""
    if exp.unmanaged:
        raise Conflict("conflict", f"cannot {verb} experiment {exp.id}: it is unmanaged "
                       "(its script runs outside the master); stop the script, or kill the "
                       "experiment so that its preemption check says stop")


def _trials(session: Session, exp: Experiment, states: set[State]) -> list[Trial]:
    return list(session.scalars(select(Trial).where(
        Trial.experiment_id == exp.id, Trial.state.in_([s.value for s in states]))
        .order_by(Trial.id)))


def kill_trial(session: Session, trial: Trial, actor: str) -> None:
    """Stop one trial at once (``det trial kill``): the reconciler cancels its jobs and it
    ends CANCELED; the searcher hears of it as of any trial that errored."""
    current = State(trial.state)
    if current.is_terminal:
        raise Conflict("conflict", f"trial {trial.id} already ended {trial.state}")
    if not is_allowed(EntityKind.TRIAL, current, State.STOPPING_KILLED):
        return  # already stopping as severely or more
    transition(session, trial, State.STOPPING_KILLED, cause="kill requested", actor=actor)
    trial.stop_requested_at = trial.stop_requested_at or utcnow()
