"""Completeness (after defaults and a template are merged): Determined's
``eventuallyRequired`` fields, worded "X is a required property" on the object that lacks
them, plus hpcdet's own requirements (max_trials, ASHA's time budget)."""

from __future__ import annotations

from typing import Any

import pytest

from hpcdet.expconf import validate, with_defaults

RUNNABLE: dict[str, Any] = {
    "name": "exp",
    "entrypoint": "python3 train.py",
    "hyperparameters": {"lr": 0.1},
    "searcher": {"name": "single", "metric": "loss"},
    "checkpoint_storage": {"type": "shared_fs", "host_path": "/ckpt"},
    "reproducibility": {"experiment_seed": 7},
}


def complete_errors(doc: Any, kind: str = "experiment") -> list[str]:
    return validate(with_defaults(doc, kind), kind, phase="complete")


def test_a_runnable_config_is_complete() -> None:
    assert complete_errors(RUNNABLE) == []


def test_completeness_names_every_missing_field_of_an_empty_config() -> None:
    assert complete_errors({}) == [
        "<config>.reproducibility: experiment_seed is a required property",
        "<config>: checkpoint_storage is a required property",
        "<config>: entrypoint is a required property",
        "<config>: name is a required property",
        "<config>: searcher is a required property",
    ]


def test_without_defaults_the_empty_sections_are_missing_too() -> None:
    assert "<config>: hyperparameters is a required property" in validate(
        {}, phase="complete")


def test_completeness_includes_the_sanity_errors() -> None:
    doc = {**RUNNABLE, "max_restarts": -1}
    assert complete_errors(doc) == ["<config>.max_restarts: must be >= 0, got -1"]


@pytest.mark.parametrize(("searcher", "expected"), [
    ({"metric": "loss"}, ["<config>: name is a required property"]),
    ({"name": "single"}, ["<config>: metric is a required property"]),
    ({"name": "random", "metric": "loss"}, ["<config>: max_trials is a required property"]),
    ({"name": "grid", "metric": "loss"}, []),
    ({"name": "adaptive_asha", "metric": "loss"},
     ["<config>: max_time is a required property",
      "<config>: max_trials is a required property",
      "<config>: time_metric is a required property"]),
    ({"name": "adaptive_asha", "metric": "loss", "max_trials": 4, "time_metric": "batches"},
     ["<config>: max_time is a required property"]),
    ({"name": "adaptive_asha", "metric": "loss", "max_trials": 4, "time_metric": "batches",
      "max_time": 100}, []),
    # legacy: max_length stands in for max_time, its unit for time_metric
    ({"name": "adaptive_asha", "metric": "loss", "max_trials": 4,
      "max_length": {"epochs": 3}}, []),
])
def test_searcher_completeness(searcher: dict[str, Any], expected: list[str]) -> None:
    assert complete_errors(searcher, "searcher") == expected


@pytest.mark.parametrize(("storage", "expected"), [
    ({"save_trial_best": 2}, ["<config>: type is a required property"]),
    ({"type": "shared_fs"}, ["<config>: host_path is a required property"]),
    ({"type": "directory"}, ["<config>: container_path is a required property"]),
    ({"type": "directory", "container_path": "/ckpt"}, []),
])
def test_checkpoint_storage_completeness(storage: dict[str, Any], expected: list[str]) -> None:
    assert complete_errors(storage, "checkpoint_storage") == expected


def test_null_counts_as_missing() -> None:
    doc = {**RUNNABLE, "name": None, "reproducibility": {"experiment_seed": None}}
    assert complete_errors(doc) == [
        "<config>.reproducibility: experiment_seed is a required property",
        "<config>: name is a required property"]


def test_sanity_does_not_ask_for_what_the_master_or_a_template_provides() -> None:
    assert validate({"searcher": {"name": "random"}, "checkpoint_storage": {
        "type": "shared_fs"}}) == []
