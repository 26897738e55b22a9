"""Tests for adaptive ASHA (stopping variant) arithmetic and decisions."""

from __future__ import annotations

import json

import pytest

from hpcdet.searcher import AdaptiveAshaSearch, AshaBracket, AshaConfig, Create, Stop
from hpcdet.searcher.asha import (
    EXITED_METRIC,
    bracket_max_concurrent,
    bracket_max_trials,
    max_rungs_cap,
    mode_brackets,
    num_continue,
    rung_units,
)

HP = {"x": {"type": "double", "minval": 0.0, "maxval": 1.0}}


def test_worked_example_brackets_5_4_3_split_71_22_7() -> None:
    assert bracket_max_trials(100, 4.0, [5, 4, 3]) == [71, 22, 7]
    search = AdaptiveAshaSearch(HP, 0, AshaConfig(100, 1000, bracket_rungs=(3, 5, 4)))
    assert [b.max_trials for b in search.brackets] == [71, 22, 7]
    assert [len(b.rungs) for b in search.brackets] == [5, 4, 3]


def test_standard_mode_with_100_trials_is_capped_by_max_trials() -> None:
    # floor(log(100)/log(4)) + 1 == 4 rungs at most, so standard gives [4, 3, 2].
    assert max_rungs_cap(5, 1000, 100, 4.0) == 4
    search = AdaptiveAshaSearch(HP, 0, AshaConfig(100, 1000))
    assert [len(b.rungs) for b in search.brackets] == [4, 3, 2]
    assert [b.max_trials for b in search.brackets] == [70, 22, 8]


def test_standard_mode_default_five_rungs() -> None:
    assert max_rungs_cap(5, 1000, 1000, 4.0) == 5
    assert mode_brackets("standard", 5) == [5, 4, 3]
    assert mode_brackets("aggressive", 5) == [5]
    assert mode_brackets("conservative", 5) == [5, 4, 3, 2, 1]
    assert max_rungs_cap(5, 10, 1000, 4.0) == 2


def test_concurrency_split() -> None:
    assert bracket_max_concurrent(16, 4.0, [71, 22, 7]) == [6, 5, 5]
    assert bracket_max_concurrent(2, 4.0, [71, 22, 7]) == [1, 1, 1]
    assert bracket_max_concurrent(0, 4.0, [71, 22, 7]) == [7, 7, 7]
    assert bracket_max_concurrent(0, 4.0, [9, 2]) == [4, 4]


def test_rung_units() -> None:
    # 1000/4**4 = 3.9 -> 3, 1000/64 = 15.6 -> 15, 1000/16 = 62.5 -> 62, 250, 1000.
    assert rung_units(5, 4.0, 1000) == [3, 15, 62, 250, 1000]
    assert rung_units(3, 4.0, 5) == [1, 1, 5]


def test_num_continue() -> None:
    assert [num_continue(n, 4.0) for n in (1, 3, 4, 7, 8, 12)] == [1, 1, 1, 1, 2, 3]


def test_initial_trials_per_bracket() -> None:
    search = AdaptiveAshaSearch(HP, 0, AshaConfig(100, 1000, bracket_rungs=(5, 4, 3)))
    assert len(search.initial_trials()) == 16
    unlimited = AshaBracket(3, 4.0, 100, 10, 0)
    assert unlimited.initial_count() == 10  # clamp(1, 4**2, 10)


def _bracket() -> AshaBracket:
    bracket = AshaBracket(3, 4.0, 16, 100, 4)  # rungs need 1, 4, 16 units
    for name in "abcdefgh":
        bracket.add_trial(name)
    return bracket


def test_top_quarter_of_rung_continues() -> None:
    bracket = _bracket()
    assert [r.units_needed for r in bracket.rungs] == [1, 4, 16]
    assert bracket.should_stop("a", 1, 0.5) is False  # first result is the best so far
    assert bracket.should_stop("b", 1, 0.9) is True  # rank 1 >= max(int(2/4), 1)
    assert bracket.should_stop("c", 1, 0.1) is False  # new best
    assert bracket.should_stop("d", 1, 0.4) is True  # rank 1 of 4 -> 1 continues
    assert bracket.should_stop("e", 1, 0.45) is True
    assert bracket.should_stop("f", 1, 0.6) is True
    assert bracket.should_stop("g", 1, 0.7) is True
    assert bracket.should_stop("h", 1, 0.2) is False  # rank 1 of 8 -> 2 continue


def test_not_enough_units_no_decision_and_multi_rung_jump() -> None:
    bracket = _bracket()
    assert bracket.should_stop("a", 0, 0.5) is False
    assert bracket.rungs[0].metrics == []
    assert bracket.should_stop("a", 16, 0.5) is True  # passes rungs 0, 1 and tops out at 2
    assert [len(r.metrics) for r in bracket.rungs] == [1, 1, 1]


def test_larger_is_better_negates_metric() -> None:
    config = AshaConfig(
        16, 16, bracket_rungs=(3,), max_concurrent_trials=2, smaller_is_better=False
    )
    search = AdaptiveAshaSearch(HP, 0, config)
    a, b = search.initial_trials()
    assert search.on_validation(a.request_id, 0.5, 1) == []
    assert search.on_validation(b.request_id, 0.9, 1) == []  # larger is better: new best
    assert search.brackets[0].rungs[0].metrics[0] == (-0.9, b.request_id)


def test_stop_creates_replacement_within_budget() -> None:
    config = AshaConfig(3, 16, bracket_rungs=(3,), max_concurrent_trials=2)
    search = AdaptiveAshaSearch(HP, 0, config)
    a, b = search.initial_trials()
    search.on_validation(a.request_id, 0.1, 1)
    actions = search.on_validation(b.request_id, 0.9, 1)
    assert actions[0] == Stop(b.request_id) and isinstance(actions[1], Create)
    c = actions[1].request
    assert search.on_validation(c.request_id, 0.95, 1) == [Stop(c.request_id)]  # budget spent


def test_invalid_hp_replaced_and_metrics_removed() -> None:
    config = AshaConfig(2, 16, bracket_rungs=(3,), max_concurrent_trials=2)
    search = AdaptiveAshaSearch(HP, 0, config)
    a, b = search.initial_trials()
    search.on_validation(a.request_id, 0.1, 4)
    (create,) = search.on_trial_exited(a.request_id, "invalid_hp")
    assert isinstance(create, Create)
    assert all(not r.metrics for r in search.brackets[0].rungs)
    assert search.brackets[0].wants_more() is False  # 3 created, 1 invalid, budget 2


def test_errored_trial_scores_worst_and_refills() -> None:
    config = AshaConfig(3, 16, bracket_rungs=(3,), max_concurrent_trials=2)
    search = AdaptiveAshaSearch(HP, 0, config)
    a, b = search.initial_trials()
    search.on_validation(a.request_id, 0.1, 1)
    (create,) = search.on_trial_exited(b.request_id, "errored")
    assert isinstance(create, Create)
    assert search.brackets[0].rungs[0].metrics[-1] == (EXITED_METRIC, b.request_id)
    assert search.on_trial_exited(a.request_id, "completed") == []
    assert not search.is_complete()
    search.on_trial_exited(create.request.request_id, "completed")
    assert search.is_complete() and not search.is_failure()


def test_progress_mean_over_brackets() -> None:
    config = AshaConfig(2, 16, bracket_rungs=(3,), max_concurrent_trials=2)
    search = AdaptiveAshaSearch(HP, 0, config)
    a, b = search.initial_trials()
    assert search.progress() == 0.0
    search.on_validation(a.request_id, 0.1, 1)
    assert search.progress() == pytest.approx(1 / 2.4)
    search.on_validation(b.request_id, 0.2, 1)
    search.on_trial_exited(a.request_id, "completed")
    search.on_trial_exited(b.request_id, "completed")
    assert search.progress() == 1.0


def _drive(search: AdaptiveAshaSearch, live: list[str], steps: int) -> list[object]:
    """Feed deterministic validations; return the actions taken."""
    log: list[object] = []
    for step in range(steps):
        trial = live[step % len(live)]
        actions = search.on_validation(trial, (step * 37 % 11) / 11, 1 + step % 20)
        for action in actions:
            if isinstance(action, Create):
                live.append(action.request.request_id)
            elif action.trial_id in live:
                live.remove(action.trial_id)
                log.extend(search.on_trial_exited(action.trial_id, "completed"))
        log.extend(actions)
        if not live:
            break
    return log


def test_state_round_trip_mid_search_gives_identical_decisions() -> None:
    config = AshaConfig(40, 20, max_concurrent_trials=6)
    original = AdaptiveAshaSearch(HP, 8, config)
    live = [t.request_id for t in original.initial_trials()]
    _drive(original, live, 30)
    state = json.loads(json.dumps(original.to_state()))
    restored = AdaptiveAshaSearch(HP, 8, config)
    restored.from_state(state)
    assert _drive(restored, list(live), 200) == _drive(original, list(live), 200)
    assert restored.to_state() == original.to_state()


def test_a_stopped_trial_reporting_again_is_not_ranked_twice() -> None:
    """A trial keeps reporting until it notices its stop; those reports are ignored."""
    config = AshaConfig(max_trials=4, max_time=4, divisor=2.0, mode="aggressive",
                        max_concurrent_trials=4)
    search = AdaptiveAshaSearch(HP, 0, config)
    a, b, *_ = [r.request_id for r in search.initial_trials()]
    assert search.on_validation(a, 1.0, 1) == []
    assert Stop(b) in search.on_validation(b, 2.0, 1)
    assert search.on_validation(b, 0.5, 2) == []
    assert search.on_validation(b, 0.4, 4) == []
    assert [t for _, t in search.brackets[0].rungs[0].metrics] == [a, b]
    restored = AdaptiveAshaSearch(HP, 0, config)
    restored.from_state(search.to_state())
    assert restored.on_validation(b, 0.3, 4) == []
