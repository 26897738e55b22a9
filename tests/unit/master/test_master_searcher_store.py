"""The searcher between cycles: kept in memory, saved as a journal, restored after a crash.

A scripted "world" plays the trials (each live trial reports one validation per round; a
trial at ``max_time`` or asked to stop ends COMPLETED) and the real search step
(:class:`SearchDriver`) runs after each round, on a real database. Every way of running the
step must give the search that one steady master gives: a master restarted every cycle
(state from the database only), two masters taking turns (each one's searcher in memory
goes stale), a step that crashes before its commit, and the design before the journal.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session, sessionmaker

import hpcdet.master.experiments.searcher_store as searcher_store
from hpcdet.master.db import make_engine, make_session_factory, session_scope
from hpcdet.master.experiments.searcher_store import SearcherStore, current_state, restore
from hpcdet.master.experiments.searching import SearchDriver, SearchReport
from hpcdet.master.models import Experiment, SearcherEvent, SearcherJournalEntry, Trial
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.transitions import transition
from hpcdet.states import State

MAX_TIME = 8
CONFIG: dict[str, Any] = {
    "name": "journal", "entrypoint": "python3 train.py",
    "hyperparameters": {"lr": {"type": "double", "minval": 1e-4, "maxval": 1e-1}},
    "searcher": {"name": "adaptive_asha", "metric": "loss", "smaller_is_better": True,
                 "time_metric": "epochs", "max_time": MAX_TIME, "max_trials": 16,
                 "max_concurrent_trials": 4, "divisor": 2, "max_rungs": 5,
                 "mode": "standard"},
    "reproducibility": {"experiment_seed": 3},
    "resources": {"slots_per_trial": 1},
}
# Which driver runs the step of a round, and whether the step commits (False: it crashes
# before its commit).
Schedule = Callable[[int], tuple[SearchDriver, bool]]


@pytest.fixture
def sessions(settings: MasterSettings) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(settings.db_url)
    yield make_session_factory(engine)
    engine.dispose()


@pytest.fixture(autouse=True)
def short_journal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fold every 5 entries, so the searches below both journal and fold."""
    monkeypatch.setattr(searcher_store, "FOLD_MIN_ENTRIES", 5)


def new_experiment(sessions: sessionmaker[Session]) -> int:
    with session_scope(sessions) as session:
        exp = Experiment(name="journal", owner="test", config=CONFIG, original_config="",
                         context=b"", searcher_name="adaptive_asha")
        session.add(exp)
        transition(session, exp, State.ACTIVE, cause="test")
        session.flush()
        return exp.id


def play_round(sessions: sessionmaker[Session], exp_id: int) -> None:
    """Each live trial reports its next epoch; trials done or asked to stop end."""
    with session_scope(sessions) as session:
        for trial in session.scalars(select(Trial).where(Trial.experiment_id == exp_id)
                                     .order_by(Trial.id)):
            if trial.state == State.STOPPING_COMPLETED.value:
                transition(session, trial, State.COMPLETED, cause="stopped")
                continue
            if trial.state not in (State.QUEUED.value, State.RUNNING.value):
                continue
            transition(session, trial, State.RUNNING, cause="started")
            epoch = 1 + (session.scalar(select(func.count(SearcherEvent.id)).where(
                SearcherEvent.trial_id == trial.id)) or 0)
            quality = zlib.crc32(str(trial.request_id).encode()) % 1000 / 1000
            session.execute(insert(SearcherEvent), [{
                "experiment_id": exp_id, "trial_id": trial.id, "steps_completed": epoch,
                "metrics": {"loss": quality / epoch, "epochs": epoch}, "processed": False}])
            if epoch >= MAX_TIME:
                transition(session, trial, State.COMPLETED, cause="trained")


def run_search(sessions: sessionmaker[Session], schedule: Schedule) -> dict[str, Any]:
    """Rounds until the experiment ends; what it did, as comparable data."""
    exp_id = new_experiment(sessions)
    for number in range(200):
        driver, commits = schedule(number)
        with sessions() as session:  # a crashed step: its transaction never commits
            driver.step(session)
            if commits:
                session.commit()
        if outcome(sessions, exp_id)["state"] != State.ACTIVE.value:
            return outcome(sessions, exp_id)
        play_round(sessions, exp_id)
    raise AssertionError("the search did not end")


def outcome(sessions: sessionmaker[Session], exp_id: int) -> dict[str, Any]:
    with sessions() as session:
        exp = session.get_one(Experiment, exp_id)
        trials = session.scalars(select(Trial).where(Trial.experiment_id == exp_id)
                                 .order_by(Trial.id)).all()
        unconsumed = session.scalar(select(func.count(SearcherEvent.id)).where(
            SearcherEvent.experiment_id == exp_id, ~SearcherEvent.processed))
        return {"state": exp.state, "searcher": current_state(session, exp),
                "unconsumed": unconsumed,
                "trials": [(t.request_id, t.hparams, t.state, t.stop_reason) for t in trials]}


def started(sessions: sessionmaker[Session]) -> tuple[SearchDriver, int]:
    """A driver that started a new search, whose first round of validations is queued."""
    driver = SearchDriver(MasterSettings())
    exp_id = new_experiment(sessions)
    with session_scope(sessions) as session:
        driver.step(session)
    play_round(sessions, exp_id)
    return driver, exp_id


def steady() -> Schedule:
    driver = SearchDriver(MasterSettings())
    return lambda _: (driver, True)


def test_a_search_journals_and_folds_and_ends_with_every_trial_created_once(
        sessions: sessionmaker[Session]) -> None:
    result = run_search(sessions, steady())
    request_ids = [t[0] for t in result["trials"]]
    assert len(request_ids) == len(set(request_ids)) == 16
    assert result["state"] == State.COMPLETED.value and result["unconsumed"] == 0
    assert {t[3] for t in result["trials"]} == {"early_stopped", "searcher_done"}


def test_a_master_restarted_every_cycle_runs_the_same_search(
        sessions: sessionmaker[Session]) -> None:
    reference = run_search(sessions, steady())
    restarted = run_search(sessions, lambda _: (SearchDriver(MasterSettings()), True))
    assert restarted == reference


def test_two_masters_taking_turns_restore_each_others_changes(
        sessions: sessionmaker[Session]) -> None:
    """Each one's searcher in memory is stale on its turn: its token no longer matches."""
    reference = run_search(sessions, steady())
    one, two = SearchDriver(MasterSettings()), SearchDriver(MasterSettings())
    assert run_search(sessions, lambda n: (one if n % 2 else two, True)) == reference


def test_a_step_that_crashes_before_its_commit_is_replayed_exactly(
        sessions: sessionmaker[Session]) -> None:
    """The crashed step's searcher stays in memory under a token the database never got."""
    crashes = {3, 4, 9, 15}
    driver = SearchDriver(MasterSettings())
    survivor = run_search(sessions, lambda n: (driver, n not in crashes))
    # The same rounds, with no step at all where the other one crashed.
    skipped = SearchDriver(MasterSettings())
    reference = run_search(sessions, lambda n: (_Idle() if n in crashes else skipped, True))
    assert survivor == reference
    assert survivor["unconsumed"] == 0


class _Idle(SearchDriver):
    """A master that does nothing this round."""

    def __init__(self) -> None:
        super().__init__(MasterSettings())

    def step(self, session: Session) -> SearchReport:
        return SearchReport()


def test_the_design_before_the_journal_runs_the_same_search(
        sessions: sessionmaker[Session]) -> None:
    reference = run_search(sessions, steady())
    store = SearcherStore(keep_in_memory=False, fold_every_cycle=True)
    assert run_search(sessions, lambda _: (SearchDriver(MasterSettings(), store), True)) \
        == reference


def test_a_cycle_appends_to_the_journal_and_the_restored_searcher_matches_memory(
        sessions: sessionmaker[Session]) -> None:
    driver, exp_id = started(sessions)  # 4 validations queued: under the 5 that fold
    with session_scope(sessions) as session:
        assert driver.step(session).events_consumed == 4
    with sessions() as session:
        exp = session.get_one(Experiment, exp_id)
        journal = session.scalars(select(SearcherJournalEntry.seq).where(
            SearcherJournalEntry.experiment_id == exp_id)).all()
        assert sorted(journal) == [0, 1, 2, 3]
        in_memory = driver.store.open(session, exp)
        assert in_memory.journal_length == 4
        assert restore(session, exp).searcher.to_state() == in_memory.searcher.to_state()
        assert current_state(session, exp) == in_memory.searcher.to_state() \
            != exp.searcher_state


def test_the_searcher_of_an_ended_experiment_is_not_kept(
        sessions: sessionmaker[Session]) -> None:
    driver, exp_id = started(sessions)
    with session_scope(sessions) as session:
        driver.step(session)
        assert exp_id in driver.store.held()
        transition(session, session.get_one(Experiment, exp_id), State.STOPPING_CANCELED,
                   cause="killed")
    with session_scope(sessions) as session:
        driver.step(session)
    assert exp_id not in driver.store.held()
