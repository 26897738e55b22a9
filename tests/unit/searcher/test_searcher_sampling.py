"""Tests for the nprand port and hyperparameter sampling."""

from __future__ import annotations

import json

import pytest

from hpcdet.searcher import NpRand, make_searcher, sample_all

HPARAMS = {
    "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
    "layers": {"type": "int", "minval": 1, "maxval": 3},
    "dropout": {"type": "double", "minval": 0.1, "maxval": 0.5},
    "act": {"type": "categorical", "vals": ["relu", "tanh"]},
    "opt": {"beta": {"type": "double", "minval": 0.8, "maxval": 0.99}, "name": "adam"},
    "batch": 32,
}


def test_seed_state_matches_numpy_randomkit() -> None:
    np = pytest.importorskip("numpy")  # numpy is only in the optional "train" extra
    expected = np.random.RandomState(1234).get_state(legacy=False)["state"]["key"]
    assert NpRand(1234).key == [int(k) for k in expected]


def test_unit_interval_matches_numpy_random_sample() -> None:
    np = pytest.importorskip("numpy")
    rng = NpRand(7)
    ours = [rng.unit_interval() for _ in range(700)]
    assert ours == list(np.random.RandomState(7).random_sample(700))


def test_intn_within_range_and_uniform_enough() -> None:
    rng = NpRand(3)
    draws = [rng.intn(3) for _ in range(3000)]
    assert set(draws) == {0, 1, 2}
    assert all(800 < draws.count(v) < 1200 for v in range(3))


def test_sample_all_types_and_sorted_keys() -> None:
    sample = sample_all(HPARAMS, NpRand(0))
    assert list(sample) == sorted(HPARAMS)
    assert 1e-4 <= sample["lr"] < 1e-1
    assert sample["layers"] in (1, 2, 3)
    assert 0.1 <= sample["dropout"] < 0.5
    assert sample["act"] in ("relu", "tanh")
    assert sample["opt"]["name"] == "adam" and 0.8 <= sample["opt"]["beta"] < 0.99
    assert sample["batch"] == 32


def test_int_range_is_inclusive_of_maxval() -> None:
    rng = NpRand(11)
    values = {
        sample_all({"x": {"type": "int", "minval": 5, "maxval": 6}}, rng)["x"] for _ in range(50)
    }
    assert values == {5, 6}


def _trials(seed: int) -> list[tuple[str, dict[str, object], int]]:
    searcher = make_searcher({"name": "random", "max_trials": 5}, HPARAMS, seed)
    return [(t.request_id, t.hparams, t.seed) for t in searcher.initial_trials()]


def test_same_seed_same_trials_different_seed_different() -> None:
    assert _trials(42) == _trials(42)
    assert _trials(42) != _trials(43)


def test_trial_seed_in_range() -> None:
    assert all(0 <= seed < 2**31 for _, _, seed in _trials(5))


def test_rng_state_round_trip_through_json() -> None:
    rng = NpRand(99)
    for _ in range(1000):
        rng.bits32()
    clone = NpRand.from_state(json.loads(json.dumps(rng.to_state())))
    assert [clone.bits32() for _ in range(700)] == [rng.bits32() for _ in range(700)]
