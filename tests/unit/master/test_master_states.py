"""The allowed-transitions table and the one transition function."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, get_args

import pytest
from sqlalchemy import select
from state_guard import Models, offenders, scan

from hpcdet.master.db import make_engine, make_session_factory
from hpcdet.master.models import Experiment, StateChange
from hpcdet.master.transitions import Entity, IllegalTransition, enter_all, transition
from hpcdet.states import (
    STOPPING_STATES,
    TERMINAL_STATES,
    TRANSITIONS,
    EntityKind,
    State,
    is_allowed,
)

PACKAGE = Path(__file__).resolve().parents[3] / "hpcdet"


# The one way out of an end is ``det experiment continue`` (experiments and their trials).
_CONTINUED = {EntityKind.EXPERIMENT: frozenset({State.ACTIVE}),
              EntityKind.TRIAL: frozenset({State.QUEUED}), EntityKind.TASK: frozenset()}


@pytest.mark.parametrize("kind", list(EntityKind))
def test_terminal_states_have_no_way_out_but_continue(kind: EntityKind) -> None:
    for state in TERMINAL_STATES:
        assert TRANSITIONS[kind][state] == _CONTINUED[kind]


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


def test_entities_entered_together_get_ids_in_order_and_their_history(tmp_path: Path) -> None:
    from hpcdet.master.db import migrate

    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    migrate(url)
    session = make_session_factory(make_engine(url))()
    made = [Experiment(name=f"e{i}", owner="bob", config={}, original_config="", context=b"",
                       searcher_name="single") for i in range(3)]
    enter_all(session, made, State.ACTIVE, cause="created", actor="bob")
    session.commit()
    assert [e.id for e in made] == sorted(e.id for e in made)
    rows = session.scalars(select(StateChange).order_by(StateChange.id)).all()
    assert [(r.entity_id, r.from_state, r.to_state, r.actor) for r in rows] == [
        (e.id, None, "ACTIVE", "bob") for e in made]
    with pytest.raises(IllegalTransition, match="cannot go from ACTIVE to ACTIVE"):
        enter_all(session, made[:1], State.ACTIVE, cause="again")  # not new any more
    fresh = Experiment(name="f", owner="bob", config={}, original_config="", context=b"",
                       searcher_name="single")
    with pytest.raises(IllegalTransition, match="cannot go from \\(new\\) to COMPLETED"):
        enter_all(session, [fresh], State.COMPLETED, cause="skip")


def lifecycle_models() -> Models:
    """The models :func:`transition` moves (and their tables), and every other mapped model."""
    lifecycle = set(get_args(Entity))
    mapped = {m.class_ for m in Experiment.registry.mappers}
    return Models(lifecycle=_names(lifecycle), others=_names(mapped - lifecycle))


def _names(classes: set[type[Any]]) -> frozenset[str]:
    """Class names and table names of mapped classes."""
    return frozenset({c.__name__ for c in classes} | {str(getattr(c, "__tablename__", ""))
                                                      for c in classes} - {""})


def test_nothing_but_the_transition_function_assigns_a_state() -> None:
    # The one module allowed is wherever transition() lives, so a move keeps the guard right.
    allowed = {Path(inspect.getfile(transition)).resolve()}
    assert offenders(PACKAGE, allowed, lifecycle_models()) == []


def test_the_guard_sees_the_transition_function_itself() -> None:
    module = Path(inspect.getfile(transition))
    assert [what for _, what in scan(module.read_text(), lifecycle_models())] == [
        "assigns .state"]


@pytest.mark.parametrize("snippet", [
    "trial.state = 'RUNNING'",
    "trial.state: str = 'RUNNING'",
    "trial.state += 'X'",
    "a, trial.state = 1, 'RUNNING'",
    "setattr(trial, 'state', 'RUNNING')",
    "session.execute(update(Trial).where(Trial.id == 1).values(state='RUNNING'))",
    "session.execute(sa.update(models.Experiment).values({'state': 'ACTIVE'}))",
    "session.execute(update(Trial).values(**{'state': 'RUNNING'}))",
    "session.execute(insert(CommandTask).values(dict(state='QUEUED')))",
    "session.execute(update(Trial), [{'id': 1, 'state': 'RUNNING'}])",
    "session.execute(insert(Trial), [dict(id=1, state='QUEUED')])",
    "session.query(Trial).filter(Trial.id == 1).update({'state': 'RUNNING'})",
    "session.bulk_update_mappings(Trial, [{'id': 1, 'state': 'RUNNING'}])",
    "Trial.__table__.update().values(state='RUNNING')",
    "stmt.values(state='RUNNING')",  # a target the scan cannot read counts
    "Trial(experiment_id=1, state='RUNNING')",
    "models.Experiment(name='e', **{'state': 'ACTIVE'})",
    "session.execute(text('UPDATE trials SET state = :s WHERE id = 1'))",
    "op.execute(\"insert into experiments (name, state) values ('e', 'ACTIVE')\")",
    "T = cast(Table, Trial.__table__)\nconn.execute(update(T).values(state='RUNNING'))",
    "T = Trial.__table__\ninsert_ignoring_conflict(conn, T, {'id': 1, 'state': 'QUEUED'})",
    "self._set('state', 'RUNNING')",
])
def test_the_guard_catches_every_way_of_writing_a_state(snippet: str) -> None:
    last = snippet.count("\n") + 1
    assert [line for line, _ in scan(snippet, lifecycle_models())] == [last], snippet


@pytest.mark.parametrize("snippet", [
    "if trial.state == 'RUNNING': pass",
    "row = {'id': trial.id, 'state': trial.state}",
    "session.execute(update(Checkpoint).where(Checkpoint.uuid == u).values(state='DELETED'))",
    "session.execute(insert(Checkpoint), [{'uuid': u, 'state': 'ACTIVE'}])",
    "NodeInfo(name='n1', state='IDLE')",
    "select(Trial).where(Trial.state == 'RUNNING')",
    "C = cast(Table, Checkpoint.__table__)\nconn.execute(update(C).values(state='DELETED'))",
    "C = Checkpoint.__table__\ninsert_ignoring_conflict(conn, C, {'uuid': u, 'state': 'ACTIVE'})",
    "request.args.get('state')",
])
def test_the_guard_lets_reads_and_other_models_states_be(snippet: str) -> None:
    assert list(scan(snippet, lifecycle_models())) == [], snippet
