"""The allowed-transitions table and the one transition function."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import select

from hpcdet.master.db import make_engine, make_session_factory
from hpcdet.master.models import Experiment, StateChange
from hpcdet.master.transitions import IllegalTransition, transition
from hpcdet.states import (
    STOPPING_STATES,
    TERMINAL_STATES,
    TRANSITIONS,
    EntityKind,
    State,
    is_allowed,
)

PACKAGE = Path(__file__).resolve().parents[3] / "hpcdet"


@pytest.mark.parametrize("kind", list(EntityKind))
def test_terminal_states_have_no_way_out(kind: EntityKind) -> None:
    for state in TERMINAL_STATES:
        assert TRANSITIONS[kind][state] == frozenset()


@pytest.mark.parametrize("kind", list(EntityKind))
def test_stopping_states_only_degrade(kind: EntityKind) -> None:
    severity = [State.STOPPING_COMPLETED, State.STOPPING_CANCELED, State.STOPPING_KILLED,
                State.STOPPING_ERROR]
    for state in STOPPING_STATES:
        for target in TRANSITIONS[kind][state] & STOPPING_STATES:
            assert severity.index(target) > severity.index(state), (state, target)


def test_trial_lifecycle_of_the_walking_skeleton() -> None:
    path = [None, State.QUEUED, State.RUNNING, State.COMPLETED]
    for current, new in zip(path, path[1:], strict=False):
        assert new is not None and is_allowed(EntityKind.TRIAL, current, new)
    assert not is_allowed(EntityKind.TRIAL, State.COMPLETED, State.RUNNING)
    assert not is_allowed(EntityKind.EXPERIMENT, None, State.COMPLETED)


def test_transition_records_history_and_refuses_illegal_moves(tmp_path: Path) -> None:
    from hpcdet.master.db import migrate

    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    migrate(url)
    session = make_session_factory(make_engine(url))()
    exp = Experiment(name="e", owner="bob", config={}, original_config="", context=b"",
                     searcher_name="single")
    session.add(exp)
    assert transition(session, exp, State.ACTIVE, cause="created", actor="bob")
    assert not transition(session, exp, State.ACTIVE, cause="again")
    with pytest.raises(IllegalTransition, match="cannot go from ACTIVE to COMPLETED"):
        transition(session, exp, State.COMPLETED, cause="skip stopping")
    transition(session, exp, State.STOPPING_COMPLETED, cause="done")
    transition(session, exp, State.COMPLETED, cause="done")
    session.commit()
    rows = session.scalars(select(StateChange).order_by(StateChange.id)).all()
    assert [(r.from_state, r.to_state) for r in rows] == [
        (None, "ACTIVE"), ("ACTIVE", "STOPPING_COMPLETED"), ("STOPPING_COMPLETED", "COMPLETED")]
    assert rows[0].actor == "bob" and exp.ended_at is not None


def test_nothing_but_the_transition_function_assigns_a_state() -> None:
    assignment = re.compile(r"\.state\s*=[^=]")
    offenders = [f"{path.relative_to(PACKAGE)}:{n}" for path in PACKAGE.rglob("*.py")
                 if path.name != "transitions.py"
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if assignment.search(line)]
    assert offenders == []
