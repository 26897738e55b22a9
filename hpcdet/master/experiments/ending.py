"""How an experiment ends: the one place that decides it.

An active experiment ends when its searcher has closed every trial it asked for
(:func:`finish_searched`: COMPLETED, or ERROR when no trial succeeded). An experiment being
stopped (killed, cancelled, failed) ends once none of its trials is still live
(:func:`end_stopped_experiments`, run by the reconciler every cycle).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from hpcdet.master.models import Experiment, Trial
from hpcdet.master.transitions import transition
from hpcdet.states import STOPPING_STATES, STOPPING_TO_TERMINAL, State


def finish_searched(session: Session, exp: Experiment, *, failed: bool) -> None:
    """The searcher is done: the experiment ends (ERROR if no trial succeeded)."""
    stopping = State.STOPPING_ERROR if failed else State.STOPPING_COMPLETED
    transition(session, exp, stopping,
               cause="no trial completed" if failed else "the searcher has finished")
    transition(session, exp, State.ERROR if failed else State.COMPLETED,
               cause="all trials ended")


def end_stopped_experiments(session: Session) -> int:
    """End every stopping experiment none of whose trials is live any more; how many."""
    live = [s.value for s in STOPPING_STATES]
    ended = 0
    for exp in session.scalars(select(Experiment).where(Experiment.state.in_(live))):
        states = session.scalars(select(Trial.state).where(Trial.experiment_id == exp.id))
        if all(State(s).is_terminal for s in states):
            transition(session, exp, STOPPING_TO_TERMINAL[State(exp.state)],
                       cause="all trials ended")
            ended += 1
    return ended
