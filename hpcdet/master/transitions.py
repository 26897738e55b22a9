"""The one function that changes an experiment's, a trial's or a command task's state.

It checks :data:`hpcdet.states.TRANSITIONS`, assigns the new state, stamps ``ended_at`` on
terminal states (clears it on the others) and appends a
:class:`~hpcdet.master.models.StateChange` row. No other code assigns ``.state`` (a unit test
scans the package to keep it so).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from hpcdet.errors import HpcdetError
from hpcdet.master.models import CommandTask, Experiment, StateChange, Trial, utcnow
from hpcdet.states import EntityKind, State, is_allowed


class IllegalTransition(HpcdetError):
    """A transition the allowed-transitions table does not permit."""

    def __init__(self, kind: EntityKind, entity_id: int | None, current: State | None,
                 new: State) -> None:
        self.kind, self.current, self.new = kind, current, new
        was = current.value if current else "(new)"
        super().__init__(f"{kind.value} {entity_id}: cannot go from {was} to {new.value}")


Entity = Experiment | Trial | CommandTask
_KINDS: dict[type[Entity], EntityKind] = {Experiment: EntityKind.EXPERIMENT,
                                          Trial: EntityKind.TRIAL, CommandTask: EntityKind.TASK}


def current_state(entity: Entity) -> State | None:
    """The entity's state as an enum (None before its first transition)."""
    return State(entity.state) if entity.state else None


def transition(session: Session, entity: Entity, new: State, *, cause: str,
               actor: str = "system") -> bool:
    """Move ``entity`` to ``new`` and record it; return False if it is already there.

    Raises :class:`IllegalTransition` when the table does not allow the move.
    """
    kind = _KINDS[type(entity)]
    current = current_state(entity)
    if current is new:
        return False
    _enter(entity, new)
    if entity.id is None:
        session.flush()  # the history row needs the entity's id
    session.add(StateChange(entity_kind=kind.value, entity_id=entity.id,
                            from_state=current.value if current else None, to_state=new.value,
                            cause=cause, actor=actor))
    return True


def enter_all(session: Session, entities: Sequence[Entity], new: State, *, cause: str,
              actor: str = "system") -> None:
    """Give entities not yet in the database their first state, with one flush for them all.

    What :func:`transition` does for each, without its flush per entity (a history row needs
    the entity's id): a search's 500 initial trials or a step's refills insert in a batch.
    """
    for entity in entities:
        if current_state(entity) is not None:
            raise IllegalTransition(_KINDS[type(entity)], entity.id, current_state(entity), new)
        _enter(entity, new)
    session.add_all(entities)
    session.flush()
    session.add_all([StateChange(entity_kind=_KINDS[type(e)].value, entity_id=e.id,
                                 from_state=None, to_state=new.value, cause=cause, actor=actor)
                     for e in entities])


def _enter(entity: Entity, new: State) -> None:
    """Check the move against the table, assign the state, stamp ``ended_at`` if terminal
    (and clear it otherwise: reopening an ended experiment or trial undoes its end)."""
    current = current_state(entity)
    if not is_allowed(_KINDS[type(entity)], current, new):
        raise IllegalTransition(_KINDS[type(entity)], entity.id, current, new)
    entity.state = new.value
    entity.ended_at = utcnow() if new.is_terminal else None
