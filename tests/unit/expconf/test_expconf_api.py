"""The small public helpers: warnings, lengths, environment variables, argument checks."""

from __future__ import annotations

from typing import Any

import pytest

from hpcdet.expconf import (
    KINDS,
    environment_variables,
    length_value,
    merge,
    validate,
    warnings_for,
    with_defaults,
)

WARNING = "accepted but not acted on by this version of hpcdet"


def test_fields_hpcdet_does_not_act_on_are_warned_about() -> None:
    doc = {"name": "x", "min_validation_period": {"batches": 5},
           "records_per_epoch": 1000,
           "optimizations": {"aggregation_frequency": 2, "mixed_precision": "O1"},
           "resources": {"slots_per_trial": 2, "priority": 3, "resource_pool": "p"},
           "checkpoint_storage": {"type": "shared_fs", "host_path": "/c",
                                  "save_trial_best": 2},
           "environment": {"image": "i", "pod_spec": {}},
           "searcher": {"name": "single", "source_trial_id": 3}}
    assert warnings_for(doc) == [f"<config>.{path}: {WARNING}" for path in (
        "records_per_epoch", "optimizations.mixed_precision",
        "searcher.source_trial_id", "resources.priority", "environment.pod_spec")]


@pytest.mark.parametrize("doc", [
    {"name": "x", "description": "d", "labels": ["a"], "entrypoint": "python3 t.py",
     "hyperparameters": {"a": 1}, "max_restarts": 1, "reproducibility": {"experiment_seed": 1},
     "environment": {"image": "i", "environment_variables": ["A=1"]},
     "bind_mounts": [{"host_path": "/a", "container_path": "/b"}],
     "slurm": {"sbatch_args": ["--mem=1G"], "slots_per_node": 1, "gpu_type": "a100"},
     "resources": {"slots_per_trial": 2, "resource_pool": "p"}, "data": {"x": 1},
     "preemption_timeout": 60,
     "searcher": {"name": "adaptive_asha", "metric": "m", "max_trials": 2,
                  "time_metric": "batches", "max_time": 10}},
    {"workspace": None, "profiling": None},  # null means not set
    {"profiling": {"enabled": True, "begin_on_batch": 2, "end_after_batch": 9}},
])
def test_fields_hpcdet_acts_on_are_not_warned_about(doc: dict[str, Any]) -> None:
    assert warnings_for(doc) == []


@pytest.mark.parametrize(("length", "expected"), [
    (100, ("batches", 100)),
    ({"batches": 5}, ("batches", 5)),
    ({"records": 6}, ("records", 6)),
    ({"epochs": 2}, ("epochs", 2)),
])
def test_length_value(length: Any, expected: tuple[str, int]) -> None:
    assert length_value(length) == expected


@pytest.mark.parametrize("length", [True, None, {}, {"batches": 1, "epochs": 1},
                                    {"steps": 3}, {"epochs": "2"}, "10"])
def test_length_value_refuses_what_is_not_a_length(length: Any) -> None:
    with pytest.raises(ValueError, match="not a length"):
        length_value(length)


@pytest.mark.parametrize(("env", "expected"), [
    (None, {}),
    ({"environment_variables": ["A=1", "B=x=y", "C"]}, {"A": "1", "B": "x=y", "C": ""}),
    ({"environment_variables": {"cpu": ["A=1"], "cuda": ["A=2", "B=3"], "rocm": None}},
     {"A": "2", "B": "3"}),
    (with_defaults({"environment_variables": ["A=1"]}, "environment"), {"A": "1"}),
])
def test_environment_variables(env: Any, expected: dict[str, str]) -> None:
    assert environment_variables(env) == expected


def test_unknown_kinds_and_phases_are_programming_errors() -> None:
    with pytest.raises(ValueError, match="unknown config kind 'nope'"):
        validate({}, kind="nope")
    with pytest.raises(ValueError, match="unknown config kind 'nope'"):
        with_defaults({}, kind="nope")
    with pytest.raises(ValueError, match="unknown validation phase 'later'"):
        validate({}, phase="later")


# A null document defaulted: None, except where Determined reads null as a value.
NULL_DEFAULTED = {"hyperparameter": {"type": "const", "val": None},
                  "log_policies": [
                      {"name": "CUDA OOM", "pattern": ".*CUDA out of memory.*", "action": None,
                       "actions": None, "signal": None},
                      {"name": "ECC Error", "pattern": ".*uncorrectable ECC error encountered.*",
                       "action": None, "actions": None, "signal": None}]}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_validates_defaults_and_merges(kind: str) -> None:
    assert isinstance(validate(None, kind), list)
    assert with_defaults(None, kind) == NULL_DEFAULTED.get(kind)
    assert merge(None, None, kind) == (NULL_DEFAULTED[kind] if kind == "hyperparameter"
                                       else None)


@pytest.mark.parametrize("kind", ["profiling", "log_policy", "log_action", "environment_image",
                                  "environment_variables", "devices", "device", "bind_mount",
                                  "bind_mounts", "length", "s3", "gcs", "azure", "directory",
                                  "shared_fs", "searcher_custom", "searcher_sync_halving",
                                  "pbs", "slurm", "hpc_cluster_slurm", "security"])
def test_determineds_sub_document_kinds_are_known(kind: str) -> None:
    assert kind in KINDS
