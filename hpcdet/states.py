"""Lifecycle states of experiments, trials and command tasks, and the allowed transitions.

This module is data only. The single function that *applies* a transition (checks this
table, assigns the state and appends a history row) is ``hpcdet.master.transitions.transition``;
nothing else assigns a state.

Names follow Determined's: experiments are ACTIVE or PAUSED while running, pass through a
STOPPING_* state, and end COMPLETED, CANCELED or ERROR. Trials use Determined's ACTIVE
sub-states QUEUED (waiting for, or in, the scheduler's queue) and RUNNING in place of ACTIVE,
so that a trial's history reads QUEUED -> RUNNING -> COMPLETED.

Command tasks (``det sbatch``) are one Slurm job each: QUEUED -> RUNNING -> COMPLETED, ERROR
or CANCELED, and STOPPING_KILLED while a kill waits for Slurm to confirm the cancellation.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping


class State(str, enum.Enum):
    """Every lifecycle state an experiment or a trial can be in."""

    ACTIVE = "ACTIVE"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPING_COMPLETED = "STOPPING_COMPLETED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_KILLED = "STOPPING_KILLED"
    STOPPING_ERROR = "STOPPING_ERROR"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERROR = "ERROR"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_STATES

    @property
    def is_stopping(self) -> bool:
        return self in STOPPING_STATES


class EntityKind(str, enum.Enum):
    """What a state belongs to; each kind has its own transitions table."""

    EXPERIMENT = "experiment"
    TRIAL = "trial"
    TASK = "task"


TERMINAL_STATES = frozenset({State.COMPLETED, State.CANCELED, State.ERROR})
STOPPING_STATES = frozenset(
    {State.STOPPING_COMPLETED, State.STOPPING_CANCELED, State.STOPPING_KILLED, State.STOPPING_ERROR}
)
# A stopping state may only degrade towards a more severe one (Determined's rule).
_STOPPING_DEGRADE: Mapping[State, frozenset[State]] = {
    State.STOPPING_COMPLETED: frozenset({State.STOPPING_CANCELED, State.STOPPING_KILLED,
                                         State.STOPPING_ERROR}),
    State.STOPPING_CANCELED: frozenset({State.STOPPING_KILLED, State.STOPPING_ERROR}),
    State.STOPPING_KILLED: frozenset({State.STOPPING_ERROR}),
    State.STOPPING_ERROR: frozenset(),
}
# Where each stopping state ends once nothing runs any more.
STOPPING_TO_TERMINAL: Mapping[State, State] = {
    State.STOPPING_COMPLETED: State.COMPLETED,
    State.STOPPING_CANCELED: State.CANCELED,
    State.STOPPING_KILLED: State.CANCELED,
    State.STOPPING_ERROR: State.ERROR,
}


def _stopping_rows() -> dict[State | None, frozenset[State]]:
    rows: dict[State | None, frozenset[State]] = {
        s: _STOPPING_DEGRADE[s] | {STOPPING_TO_TERMINAL[s], State.ERROR}
        for s in STOPPING_STATES
    }
    return rows


_ALL_STOPPING = STOPPING_STATES

EXPERIMENT_TRANSITIONS: Mapping[State | None, frozenset[State]] = {
    None: frozenset({State.ACTIVE, State.PAUSED}),
    State.ACTIVE: frozenset({State.PAUSED, State.ERROR} | _ALL_STOPPING),
    State.PAUSED: frozenset({State.ACTIVE, State.ERROR} | _ALL_STOPPING),
    **_stopping_rows(),
    # The one way out of an end: ``det experiment continue`` reopens it (Determined 0.38).
    State.COMPLETED: frozenset({State.ACTIVE}),
    State.CANCELED: frozenset({State.ACTIVE}),
    State.ERROR: frozenset({State.ACTIVE}),
}

TRIAL_TRANSITIONS: Mapping[State | None, frozenset[State]] = {
    None: frozenset({State.QUEUED, State.PAUSED}),
    # QUEUED -> CANCELED/ERROR: a job withdrawn or refused before it ever ran.
    State.QUEUED: frozenset({State.RUNNING, State.PAUSED, State.CANCELED, State.ERROR}
                            | _ALL_STOPPING),
    # RUNNING -> QUEUED: the job was requeued or the trial restarts in a new job.
    State.RUNNING: frozenset({State.QUEUED, State.PAUSED, State.COMPLETED, State.ERROR}
                             | _ALL_STOPPING),
    State.PAUSED: frozenset({State.QUEUED, State.CANCELED, State.ERROR} | _ALL_STOPPING),
    **_stopping_rows(),
    # ``det experiment continue``: the trial resumes from its latest checkpoint.
    State.COMPLETED: frozenset({State.QUEUED}),
    State.CANCELED: frozenset({State.QUEUED}),
    State.ERROR: frozenset({State.QUEUED}),
}

_TASK_ENDS = frozenset({State.COMPLETED, State.ERROR, State.CANCELED})

TASK_TRANSITIONS: Mapping[State | None, frozenset[State]] = {
    None: frozenset({State.QUEUED}),
    # QUEUED -> an end: the job finished between two polls, or was cancelled outside hpcdet.
    State.QUEUED: frozenset({State.RUNNING, State.STOPPING_KILLED} | _TASK_ENDS),
    # RUNNING -> QUEUED: Slurm requeued the job (preemption, node failure, scontrol requeue).
    State.RUNNING: frozenset({State.QUEUED, State.STOPPING_KILLED} | _TASK_ENDS),
    # A job that ended on its own before the kill reached it keeps its real outcome.
    State.STOPPING_KILLED: _TASK_ENDS,
    # A task has no graceful stop: nothing enters the other stopping states.
    **{s: frozenset() for s in STOPPING_STATES - {State.STOPPING_KILLED}},
    State.COMPLETED: frozenset(),
    State.CANCELED: frozenset(),
    State.ERROR: frozenset(),
}

TRANSITIONS: Mapping[EntityKind, Mapping[State | None, frozenset[State]]] = {
    EntityKind.EXPERIMENT: EXPERIMENT_TRANSITIONS,
    EntityKind.TRIAL: TRIAL_TRANSITIONS,
    EntityKind.TASK: TASK_TRANSITIONS,
}


def is_allowed(kind: EntityKind, current: State | None, new: State) -> bool:
    """Whether ``kind`` may move from ``current`` (None: not yet created) to ``new``."""
    return new in TRANSITIONS[kind].get(current, frozenset())
