"""``with_defaults``: Determined's defaults everywhere, every field present, unset ones
None (cases ported from Determined's ``defaults.yaml`` and ``experiment.yaml``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hpcdet.expconf import validate, with_defaults

DEFAULTED: list[tuple[str, Any, Any]] = [
    ("bind_mount", {"host_path": "/asdf", "container_path": "/zxcv"},
     {"host_path": "/asdf", "container_path": "/zxcv", "propagation": "rprivate",
      "read_only": False}),
    ("searcher", {"name": "single", "max_length": {"batches": 1000}, "metric": "loss"},
     {"name": "single", "max_length": {"batches": 1000}, "metric": "loss",
      "smaller_is_better": True, "source_trial_id": None, "source_checkpoint_uuid": None}),
    ("searcher", {"name": "random", "max_trials": 1000, "metric": "loss",
                  "source_checkpoint_uuid": "asdf"},
     {"name": "random", "max_concurrent_trials": 16, "max_length": None,
      "max_trials": 1000, "metric": "loss", "smaller_is_better": True,
      "source_trial_id": None, "source_checkpoint_uuid": "asdf"}),
    ("searcher", {"name": "grid", "metric": "loss", "source_trial_id": 15},
     {"name": "grid", "max_concurrent_trials": 16, "max_length": None, "metric": "loss",
      "smaller_is_better": True, "source_trial_id": 15, "source_checkpoint_uuid": None}),
    ("searcher", {"name": "adaptive_asha", "max_trials": 100, "metric": "loss",
                  "time_metric": "batches", "max_time": 1000},
     {"name": "adaptive_asha", "max_trials": 100, "metric": "loss", "time_metric": "batches",
      "max_time": 1000, "max_length": None, "bracket_rungs": [], "divisor": 4,
      "mode": "standard", "max_rungs": 5, "max_concurrent_trials": 16,
      "smaller_is_better": True, "source_trial_id": None, "source_checkpoint_uuid": None,
      "stop_once": None}),
    ("resources", {"devices": [{"host_path": "/h1", "container_path": "/c1", "mode": "r"},
                               {"host_path": "/h2", "container_path": "/c2"}, "/h3:/c3:r"]},
     {"devices": [{"host_path": "/h1", "container_path": "/c1", "mode": "r"},
                  {"host_path": "/h2", "container_path": "/c2", "mode": "mrw"},
                  {"host_path": "/h3", "container_path": "/c3", "mode": "r"}],  # shimmed
      "agent_label": None, "native_parallel": False, "shm_size": None, "slots_per_trial": 1,
      "allocation": None,  # hpcdet's (allocation mode)
      "weight": 1, "max_slots": None, "priority": None, "resource_pool": None,
      "is_single_node": None, "slots": None}),
    ("checkpoint_storage", {"type": "shared_fs", "host_path": "/tmp"},
     {"type": "shared_fs", "host_path": "/tmp", "storage_path": None,
      "propagation": "rprivate", "container_path": None, "checkpoint_path": None,
      "tensorboard_path": None, "save_experiment_best": 0, "save_trial_best": 1,
      "save_trial_latest": 1}),
    ("checkpoint_storage", {"type": "directory", "container_path": "/d"},
     {"type": "directory", "container_path": "/d", "save_experiment_best": 0,
      "save_trial_best": 1, "save_trial_latest": 1}),
    ("environment", {"environment_variables": ["ASDF=asdf"], "ports": {"asdf": 1},
                     "registry_auth": {"username": "samiam", "password": "eggsnham"}},
     {"environment_variables": {"cpu": ["ASDF=asdf"], "cuda": ["ASDF=asdf"],
                                "rocm": ["ASDF=asdf"]},
      "force_pull_image": False, "image": {"cpu": None, "cuda": None, "rocm": None},
      "pod_spec": None, "ports": {"asdf": 1}, "add_capabilities": [],
      "drop_capabilities": [], "proxy_ports": [],
      "registry_auth": {"username": "samiam", "password": "eggsnham", "auth": None,
                        "email": None, "serveraddress": None, "identitytoken": None,
                        "registrytoken": None}}),
    ("slurm", {}, {"slots_per_node": None, "gpu_type": None, "sbatch_args": None,
                "launcher": None}),
    ("pbs", {"slots_per_node": 2}, {"slots_per_node": 2, "pbsbatch_args": None, "launcher": None}),
    ("length", {"epochs": 2}, {"epochs": 2}),
    ("log_policies", [{"pattern": "x"}],
     [{"name": None, "pattern": "x", "action": None, "actions": None, "signal": None},
      {"name": "CUDA OOM", "pattern": ".*CUDA out of memory.*", "action": None,
       "actions": None, "signal": None},
      {"name": "ECC Error", "pattern": ".*uncorrectable ECC error encountered.*",
       "action": None, "actions": None, "signal": None}]),
]


@pytest.mark.parametrize(("kind", "doc", "expected"), DEFAULTED)
def test_defaults_fill_every_field(kind: str, doc: Any, expected: Any) -> None:
    assert with_defaults(doc, kind) == expected


MINIMAL: dict[str, Any] = {
    "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1000}},
    "entrypoint": "model_def:MyTrial"}


def test_a_minimal_experiment_gets_determineds_defaults() -> None:
    config = with_defaults(MINIMAL)
    assert {key: config[key] for key in (
        "bind_mounts", "checkpoint_policy", "checkpoint_storage", "data", "debug",
        "description", "hyperparameters", "labels", "max_restarts", "min_checkpoint_period",
        "min_validation_period", "name", "perform_initial_validation", "records_per_epoch",
        "scheduling_unit", "reproducibility", "workspace", "project")} == {
        "bind_mounts": [], "checkpoint_policy": "best", "checkpoint_storage": None, "data": {},
        "debug": False, "description": None, "hyperparameters": {}, "labels": [],
        "max_restarts": 5, "min_checkpoint_period": {"batches": 0},
        "min_validation_period": {"batches": 0}, "name": None,
        "perform_initial_validation": False, "records_per_epoch": 0, "scheduling_unit": 100,
        "reproducibility": {"experiment_seed": None}, "workspace": None, "project": None}
    assert config["profiling"] == {"enabled": False, "begin_on_batch": 0,
                                   "end_after_batch": None, "sync_timings": True}
    assert config["optimizations"]["mixed_precision"] == "O0"
    assert config["searcher"]["smaller_is_better"] is True


def test_every_top_level_field_is_present() -> None:
    config = with_defaults({})
    for field in ("name", "description", "labels", "workspace", "project", "entrypoint",
                  "hyperparameters", "searcher", "resources", "checkpoint_storage",
                  "checkpoint_policy", "min_validation_period", "min_checkpoint_period",
                  "scheduling_unit", "records_per_epoch", "max_restarts",
                  "perform_initial_validation", "reproducibility", "environment",
                  "bind_mounts", "profiling", "optimizations", "log_policies",
                  "retention_policy", "slurm", "pbs", "data", "debug", "preemption_timeout"):
        assert field in config, field


def test_hyperparameters_are_shimmed_and_free_form_maps_kept_as_written() -> None:
    lr = {"type": "log", "minval": -3, "maxval": -1, "base": 10}
    n = {"type": "int", "minval": 1, "maxval": 4}
    hps = {"lr": lr, "layers": {"n": n, "act": "relu"}, "flag": None, "sizes": [1, 2]}
    config = with_defaults({"hyperparameters": hps, "data": {"url": "x", "n": [1]}})
    assert config["hyperparameters"] == {  # Determined's implicit constants made explicit
        "lr": lr, "flag": {"type": "const", "val": None},
        "sizes": {"type": "const", "val": [1, 2]},
        "layers": {"n": n, "act": {"type": "const", "val": "relu"}}}
    assert config["data"] == {"url": "x", "n": [1]}


def test_explicit_nulls_take_the_default_and_values_win() -> None:
    config = with_defaults({"max_restarts": None, "resources": {"slots_per_trial": 4}})
    assert config["max_restarts"] == 5 and config["resources"]["slots_per_trial"] == 4


def test_defaults_copy_and_are_idempotent() -> None:
    doc = copy.deepcopy(MINIMAL)
    config = with_defaults(doc)
    assert doc == MINIMAL
    config["searcher"]["metric"] = "changed"
    assert MINIMAL["searcher"]["metric"] == "loss"
    assert with_defaults(with_defaults(MINIMAL)) == with_defaults(MINIMAL)


def test_a_defaulted_config_is_still_sane() -> None:
    assert validate(with_defaults(MINIMAL)) == []


def test_the_image_map_is_filled_and_the_legacy_gpu_key_read_as_cuda() -> None:
    env = with_defaults({"image": {"cuda": "c"}}, "environment")
    assert env["image"] == {"cpu": None, "cuda": "c", "rocm": None}
    env = with_defaults({"image": {"gpu": "g", "cpu": "c"},
                         "environment_variables": {"gpu": ["A=1"]}}, "environment")
    assert env["image"] == {"cpu": "c", "cuda": "g", "rocm": None}
    assert env["environment_variables"] == {"cpu": [], "cuda": ["A=1"], "rocm": []}
    env = with_defaults({"image": {"gpu": "g", "cuda": "c"}}, "environment")
    assert env["image"]["cuda"] == "c"  # cuda wins over the legacy key


def test_device_strings_become_device_objects() -> None:
    resources = with_defaults({"devices": ["/dev/a:/a", "/dev/b:/b:r"]}, "resources")
    assert resources["devices"] == [{"host_path": "/dev/a", "container_path": "/a",
                                     "mode": "mrw"},
                                    {"host_path": "/dev/b", "container_path": "/b", "mode": "r"}]


def test_legacy_log_actions_are_shimmed_and_default_policies_added_once() -> None:
    policies = with_defaults([{"pattern": "p", "action": {"type": "exclude_node"}},
                              {"name": "CUDA OOM"}], "log_policies")
    assert [(p["name"], p["pattern"], p["action"]) for p in policies] == [
        (None, "p", "exclude_node"), ("CUDA OOM", None, None),
        ("ECC Error", ".*uncorrectable ECC error encountered.*", None)]
