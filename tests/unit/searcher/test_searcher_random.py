"""Tests for the single and random searchers."""

from __future__ import annotations

import json

from hpcdet.searcher import Create, RandomSearch, make_searcher

HP = {"x": {"type": "double", "minval": 0.0, "maxval": 1.0}}


def test_initial_batch_limited_by_max_concurrent_trials() -> None:
    assert len(RandomSearch(HP, 0, max_trials=40).initial_trials()) == 16
    assert len(RandomSearch(HP, 0, max_trials=40, max_concurrent_trials=3).initial_trials()) == 3
    assert len(RandomSearch(HP, 0, max_trials=40, max_concurrent_trials=0).initial_trials()) == 40


def test_single_is_one_trial() -> None:
    search = make_searcher({"name": "single"}, HP, 0)
    (trial,) = search.initial_trials()
    assert search.on_trial_exited(trial.request_id, "completed") == []
    assert search.is_complete() and search.progress() == 1.0


def test_invalid_hp_replaced_without_spending_budget() -> None:
    search = RandomSearch(HP, 0, max_trials=2, max_concurrent_trials=2)
    a, b = search.initial_trials()
    (replacement,) = search.on_trial_exited(a.request_id, "invalid_hp")
    assert isinstance(replacement, Create)
    assert replacement.request.hparams != a.hparams
    assert search.on_trial_exited(b.request_id, "completed") == []
    assert not search.is_complete()
    assert search.on_trial_exited(replacement.request.request_id, "errored") == []
    assert search.is_complete() and not search.is_failure()
    assert search.progress() == 1.0


def test_exits_refill_until_max_trials() -> None:
    search = RandomSearch(HP, 0, max_trials=3, max_concurrent_trials=1)
    (trial,) = search.initial_trials()
    created = 1
    while True:
        actions = search.on_trial_exited(trial.request_id, "completed")
        if not actions:
            break
        trial = actions[0].request  # type: ignore[union-attr]
        created += 1
    assert created == 3 and search.is_complete()


def test_all_errored_is_failure() -> None:
    search = RandomSearch(HP, 0, max_trials=1)
    (trial,) = search.initial_trials()
    search.on_trial_exited(trial.request_id, "errored")
    assert search.is_complete() and search.is_failure()


def test_state_round_trip_continues_same_search() -> None:
    search = RandomSearch(HP, 5, max_trials=6, max_concurrent_trials=2)
    a, _ = search.initial_trials()
    search.on_trial_exited(a.request_id, "invalid_hp")
    restored = RandomSearch(HP, 5, max_trials=6, max_concurrent_trials=2)
    restored.from_state(json.loads(json.dumps(search.to_state())))
    _, b = search.requested[-2:]
    assert restored.on_trial_exited(b, "completed") == search.on_trial_exited(b, "completed")
    assert restored.to_state() == search.to_state()
