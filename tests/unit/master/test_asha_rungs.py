"""Which ASHA rung each trial reached, read from a real searcher's saved state."""

from __future__ import annotations

import json
from typing import Any

from hpcdet.master.experiments.asha_rungs import RungReached, rungs_by_request, rungs_by_trial
from hpcdet.searcher import make_searcher
from hpcdet.searcher.asha import AdaptiveAshaSearch, AshaConfig

HPARAMS = {"lr": {"type": "double", "minval": 0.001, "maxval": 0.1}}


def asha(mode: str = "aggressive", max_trials: int = 4) -> AdaptiveAshaSearch:
    """Rungs of 1, 2 and 4 epochs (divisor 2, max_time 4)."""
    config = AshaConfig(max_trials=max_trials, max_time=4, divisor=2, mode=mode,
                        max_concurrent_trials=max_trials)
    return AdaptiveAshaSearch(HPARAMS, 42, config)


def saved(searcher: AdaptiveAshaSearch) -> dict[str, Any]:
    """The state as the master stores and reads it back (JSON: tuples become lists)."""
    state: dict[str, Any] = json.loads(json.dumps(searcher.to_state()))
    return state


def test_trials_start_in_rung_0_and_the_top_of_a_rung_moves_up() -> None:
    searcher = asha()
    first, second, third, fourth = (t.request_id for t in searcher.initial_trials())
    searcher.on_validation(first, 0.1, 1)  # alone in rung 0: promoted to rung 1
    searcher.on_validation(second, 0.5, 1)  # second of two in rung 0: stopped there
    searcher.on_validation(third, 0.05, 2)  # best in rung 0 and in rung 1: on to rung 2
    rungs = rungs_by_request(saved(searcher))
    assert rungs[first] == RungReached(rung=1, num_rungs=3, bracket=0, units_needed=2,
                                       recorded=False)
    assert rungs[second] == RungReached(0, 3, 0, 1, recorded=True)
    assert rungs[third] == RungReached(2, 3, 0, 4, recorded=False)
    assert rungs[fourth] == RungReached(0, 3, 0, 1, recorded=False)
    assert [rungs[t].text() for t in (first, second, fourth)] == [
        "2 of 3 (no result yet)", "1 of 3", "1 of 3 (no result yet)"]


def test_a_trial_that_finished_the_top_rung_has_its_result_there() -> None:
    searcher = asha()
    only = searcher.initial_trials()[0].request_id
    searcher.on_validation(only, 0.3, 4)  # first in every rung, up to the top
    reached = rungs_by_request(saved(searcher))[only]
    assert (reached.rung, reached.recorded, reached.text()) == (2, True, "3 of 3")
    assert reached.to_json() == {"rung": 2, "num_rungs": 3, "bracket": 0, "units_needed": 4,
                                 "recorded": True, "text": "3 of 3"}


def test_each_trial_is_read_from_its_own_bracket() -> None:
    searcher = asha(mode="conservative", max_trials=12)  # brackets of 3, 2 and 1 rungs
    trials = searcher.initial_trials()
    rungs = rungs_by_request(saved(searcher))
    owner = searcher.owner
    assert {rungs[t.request_id].bracket for t in trials} == {0, 1, 2}
    for trial in trials:
        reached = rungs[trial.request_id]
        assert reached.bracket == owner[trial.request_id]
        assert reached.num_rungs == len(searcher.brackets[reached.bracket].rungs)


def test_database_trials_are_matched_by_request_id() -> None:
    searcher = asha()
    first, second, *_ = (t.request_id for t in searcher.initial_trials())
    searcher.on_validation(first, 0.1, 1)
    got = rungs_by_trial(saved(searcher), {7: first, 8: second, 9: None, 10: "not-a-trial"})
    assert sorted(got) == [7, 8]
    assert (got[7].rung, got[8].rung) == (1, 0)


def test_states_without_rungs_give_none() -> None:
    grid = make_searcher({"name": "grid"}, {"lr": {"type": "categorical", "vals": [1, 2]}}, 1)
    grid.initial_trials()
    assert rungs_by_request(grid.to_state()) == {}
    assert rungs_by_request(None) == {} and rungs_by_request({}) == {}
    assert rungs_by_trial(None, {1: "x"}) == {}


def test_an_owner_pointing_outside_the_brackets_is_left_out() -> None:
    searcher = asha()
    first, second, *_ = (t.request_id for t in searcher.initial_trials())
    state = saved(searcher)
    state["method"]["owner"][first] = 5
    del state["method"]["brackets"][0]["trial_rungs"][second]
    got = rungs_by_request(state)
    assert first not in got and second not in got and len(got) == 2
