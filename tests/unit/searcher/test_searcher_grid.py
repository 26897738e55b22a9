"""Tests for grid points (Determined's grid.go arithmetic) and grid search."""

from __future__ import annotations

import pytest

from hpcdet.searcher import GridSearch, grid_axis, grid_points


def test_int_axis_evenly_spaced_and_rounded() -> None:
    assert grid_axis({"type": "int", "minval": 0, "maxval": 10, "count": 4}) == [0, 3, 7, 10]


def test_int_axis_count_clamped_to_range() -> None:
    spec = {"type": "int", "minval": 1, "maxval": 3, "count": 10}
    assert grid_axis(spec) == [1, 2, 3]


def test_int_axis_count_one_is_rounded_midpoint_half_away_from_zero() -> None:
    assert grid_axis({"type": "int", "minval": 1, "maxval": 4, "count": 1}) == [3]
    assert grid_axis({"type": "int", "minval": -4, "maxval": -1, "count": 1}) == [-3]


def test_double_axis() -> None:
    spec = {"type": "double", "minval": 0.0, "maxval": 1.0, "count": 5}
    assert grid_axis(spec) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert grid_axis({**spec, "count": 1}) == [0.5]


def test_log_axis() -> None:
    spec = {"type": "log", "minval": -3, "maxval": -1, "base": 10, "count": 3}
    assert grid_axis(spec) == pytest.approx([1e-3, 1e-2, 1e-1])
    assert grid_axis({**spec, "count": 1}) == pytest.approx([1e-2])
    assert grid_axis({"type": "log", "minval": 0, "maxval": 3, "base": 2, "count": 4}) == [
        1.0,
        2.0,
        4.0,
        8.0,
    ]


def test_categorical_and_const_axes() -> None:
    assert grid_axis({"type": "categorical", "vals": ["a", 2, None]}) == ["a", 2, None]
    assert grid_axis({"type": "const", "val": 7}) == [7]
    assert grid_axis(7) == [7]


def test_cartesian_product_sorted_keys_first_axis_slowest() -> None:
    hparams = {
        "b": {"type": "categorical", "vals": ["x", "y"]},
        "a": {"type": "int", "minval": 1, "maxval": 3, "count": 3},
    }
    points = grid_points(hparams)
    assert [(p["a"], p["b"]) for p in points] == [
        (1, "x"),
        (1, "y"),
        (2, "x"),
        (2, "y"),
        (3, "x"),
        (3, "y"),
    ]


def test_nested_leaves_are_axes_and_empty_nested_kept() -> None:
    hparams = {
        "opt": {"lr": {"type": "categorical", "vals": [1, 2]}, "name": "sgd"},
        "empty": {},
    }
    assert grid_points(hparams) == [
        {"empty": {}, "opt": {"lr": 1, "name": "sgd"}},
        {"empty": {}, "opt": {"lr": 2, "name": "sgd"}},
    ]


def test_grid_search_pops_from_end_and_refills_on_exit() -> None:
    hparams = {"x": {"type": "int", "minval": 0, "maxval": 4, "count": 5}}
    search = GridSearch(hparams, seed=1, max_concurrent_trials=2)
    first = search.initial_trials()
    assert [t.hparams["x"] for t in first] == [4, 3]
    actions = search.on_trial_exited(first[0].request_id, "invalid_hp")
    assert [a.request.hparams["x"] for a in actions] == [2]  # type: ignore[union-attr]
    assert search.progress() == pytest.approx(0.2)


def test_grid_search_completes_after_every_point_closes() -> None:
    search = GridSearch(
        {"x": {"type": "categorical", "vals": [1, 2]}}, seed=0, max_concurrent_trials=0
    )
    trials = search.initial_trials()
    assert len(trials) == 2
    for trial in trials:
        assert not search.is_complete()
        assert search.on_trial_exited(trial.request_id, "completed") == []
    assert search.is_complete() and not search.is_failure()
