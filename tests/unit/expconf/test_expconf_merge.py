"""``merge``: a config over a template, as Determined merges (cases ported from
Determined's ``merging.yaml``, plus hpcdet's list rule: lists concatenate, template first).

``merge`` names every field of the merged schema (None where neither side sets one), like
Determined's merged struct; these cases compare the fields that are set (``set_fields``).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hpcdet.expconf import merge

MERGED: list[tuple[str, Any, Any, Any]] = [
    ("bind_mounts",
     [{"host_path": "/asdf", "container_path": "/asdf"}],
     [{"host_path": "/zxcv", "container_path": "/zxcv"},
      {"host_path": "/not_asdf", "container_path": "/asdf"}],
     [{"host_path": "/asdf", "container_path": "/asdf"},
      {"host_path": "/zxcv", "container_path": "/zxcv"}]),
    ("resources",
     {"devices": [{"host_path": "/asdf", "container_path": "/asdf"}, "/qwer:/qwer"]},
     {"devices": [{"host_path": "/zxcv", "container_path": "/zxcv"},
                  {"host_path": "/not_asdf", "container_path": "/asdf"}, "/x:/qwer:r"]},
     {"devices": [{"host_path": "/asdf", "container_path": "/asdf"},
                  {"host_path": "/qwer", "container_path": "/qwer"},
                  {"host_path": "/zxcv", "container_path": "/zxcv"}]}),
    ("checkpoint_storage",
     {"type": "gcs", "bucket": "of water", "save_experiment_best": 3},
     {"save_experiment_best": 10, "save_trial_best": 10, "save_trial_latest": 10},
     {"type": "gcs", "bucket": "of water", "save_experiment_best": 3, "save_trial_best": 10,
      "save_trial_latest": 10}),
    ("searcher",
     {"name": "random", "max_trials": 10, "max_length": {"epochs": 1}},
     {"metric": "sae", "smaller_is_better": True, "source_trial_id": 1,
      "source_checkpoint_uuid": "SOME-RANDOM-UUID"},
     {"name": "random", "max_trials": 10, "max_length": {"epochs": 1}, "metric": "sae",
      "smaller_is_better": True, "source_trial_id": 1,
      "source_checkpoint_uuid": "SOME-RANDOM-UUID"}),
    # a non-nested hyperparameter is atomic
    ("hyperparameter",
     {"type": "int", "minval": 10, "maxval": 100},
     {"type": "int", "minval": 50, "maxval": 500, "count": 5},
     {"type": "int", "minval": 10, "maxval": 100}),
    # nested hyperparameters merge recursively
    ("hyperparameter",
     {"transformer": {"backbone": "bert"}},
     {"transformer": {"task": "language-modeling"}},
     {"transformer": {"backbone": {"type": "const", "val": "bert"},
                      "task": {"type": "const", "val": "language-modeling"}}}),
    # only merge if both values are nested groups; null is the constant null
    ("hyperparameters",
     {"transformer": None, "lr": {"type": "const", "val": 1}},
     {"transformer": {"task": "lm"}, "lr": {"type": "double", "minval": 0, "maxval": 1},
      "wd": 0.1},
     {"transformer": {"type": "const"}, "lr": {"type": "const", "val": 1},
      "wd": {"type": "const", "val": 0.1}}),  # set_fields leaves out the null val
    ("hyperparameters",
     {"transformer": 3},
     {"transformer": {"task": "lm"}},
     {"transformer": {"type": "const", "val": 3}}),
    # unions: a template of another variant contributes only the common fields
    ("checkpoint_storage",
     {"type": "shared_fs", "host_path": "/tmp", "storage_path": "determined-cp",
      "propagation": "rprivate", "save_experiment_best": 0, "save_trial_best": 1},
     {"type": "s3", "bucket": "determined-cp", "save_experiment_best": 10,
      "save_trial_best": 10, "save_trial_latest": 10},
     {"type": "shared_fs", "host_path": "/tmp", "storage_path": "determined-cp",
      "propagation": "rprivate", "save_experiment_best": 0, "save_trial_best": 1,
      "save_trial_latest": 10}),
    ("searcher",
     {"name": "single", "max_length": {"batches": 1000}, "metric": "loss",
      "smaller_is_better": True},
     {"name": "random", "max_concurrent_trials": 2, "max_length": {"batches": 10000},
      "max_trials": 10000, "metric": "loss", "smaller_is_better": False,
      "source_checkpoint_uuid": "asdf"},
     {"name": "single", "max_length": {"batches": 1000}, "metric": "loss",
      "smaller_is_better": True, "source_checkpoint_uuid": "asdf"}),
    ("checkpoint_storage",
     {"type": "azure"},
     {"type": "azure", "connection_string": "conn_str", "container": "default_container"},
     {"type": "azure", "connection_string": "conn_str", "container": "default_container"}),
    # lengths never mix units
    ("searcher",
     {"name": "single", "max_length": {"epochs": 1}},
     {"name": "single", "max_length": {"batches": 10}},
     {"name": "single", "max_length": {"epochs": 1}}),
    ("slurm",
     {"sbatch_args": ["--mem=8G"], "slots_per_node": 2},
     {"sbatch_args": ["--time=1:00:00", "--mem=4G"], "slots_per_node": 4, "gpu_type": "a100"},
     {"sbatch_args": ["--time=1:00:00", "--mem=4G", "--mem=8G"], "slots_per_node": 2,
      "gpu_type": "a100"}),
    ("environment",
     {"image": {"cuda": "mine"}, "environment_variables": ["B=1"]},
     {"image": "theirs", "environment_variables": {"cpu": ["A=1"], "cuda": ["A=2"]}},
     {"image": {"cuda": "mine", "cpu": "theirs", "rocm": "theirs"},
      "environment_variables": {"cpu": ["A=1", "B=1"], "cuda": ["A=2", "B=1"],
                                "rocm": ["B=1"]}}),
    ("environment",
     {"image": "mine"},
     {"image": {"cpu": "theirs"}, "force_pull_image": True},
     {"image": {"cpu": "mine", "cuda": "mine", "rocm": "mine"}, "force_pull_image": True}),
]


def set_fields(value: Any) -> Any:
    """``value`` without the mapping keys whose value is None (recursively)."""
    if isinstance(value, dict):
        return {k: set_fields(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [set_fields(v) for v in value]
    return value


@pytest.mark.parametrize(("kind", "doc", "template", "expected"), MERGED)
def test_merging(kind: str, doc: Any, template: Any, expected: Any) -> None:
    assert set_fields(merge(doc, template, kind)) == expected


def test_the_merged_document_names_every_field_of_its_schema() -> None:
    merged = merge({"type": "gcs", "bucket": "b"}, {"save_trial_best": 3},
                   "checkpoint_storage")
    assert merged == {"type": "gcs", "bucket": "b", "prefix": None,
                      "save_experiment_best": None, "save_trial_best": 3,
                      "save_trial_latest": None}


CONFIG = {
    "name": "mine",
    "entrypoint": ["python3", "train.py"],
    "labels": ["a", "b"],
    "hyperparameters": {"lr": 0.1},
    "resources": {"slots_per_trial": 2},
    "bind_mounts": [{"host_path": "/mine/data", "container_path": "/data"}],
    "environment": {"environment_variables": ["A=config"]},
    "max_restarts": None,
}
TEMPLATE = {
    "name": "template",
    "description": "shared",
    "entrypoint": ["python3", "other.py", "--flag"],
    "labels": ["b", "c"],
    "hyperparameters": {"lr": 0.5, "wd": 0.01},
    "resources": {"slots_per_trial": 8, "resource_pool": "gpu"},
    "bind_mounts": [{"host_path": "/shared/data", "container_path": "/data"},
                    {"host_path": "/scratch", "container_path": "/scratch"}],
    "environment": {"environment_variables": ["A=template", "B=1"]},
    "max_restarts": 2,
}


def test_a_template_fills_gaps_and_the_config_wins() -> None:
    merged = set_fields(merge(CONFIG, TEMPLATE))
    assert merged["name"] == "mine" and merged["description"] == "shared"
    assert merged["entrypoint"] == ["python3", "train.py"]  # never concatenated
    assert merged["labels"] == ["b", "c", "a"]  # a set: template first, no repeats
    assert merged["hyperparameters"] == {"lr": {"type": "const", "val": 0.1},
                                         "wd": {"type": "const", "val": 0.01}}
    assert merged["resources"] == {"slots_per_trial": 2, "resource_pool": "gpu"}
    assert merged["bind_mounts"] == [{"host_path": "/mine/data", "container_path": "/data"},
                                     {"host_path": "/scratch", "container_path": "/scratch"}]
    # template first, so the config's A wins for whoever reads them in order
    assert merged["environment"]["environment_variables"] == {
        device: ["A=template", "B=1", "A=config"] for device in ("cpu", "cuda", "rocm")}
    assert merged["max_restarts"] == 2  # null counts as not set


def test_merge_changes_neither_input() -> None:
    config, template = copy.deepcopy(CONFIG), copy.deepcopy(TEMPLATE)
    merged = merge(config, template)
    merged["resources"]["slots_per_trial"] = 99
    merged["bind_mounts"][1]["host_path"] = "/changed"
    assert config == CONFIG and template == TEMPLATE


def test_merging_with_an_empty_side_is_the_shimmed_document() -> None:
    assert set_fields(merge(CONFIG, {})) == set_fields(with_shims(CONFIG))
    assert set_fields(merge({}, TEMPLATE)) == set_fields(with_shims(TEMPLATE))


def with_shims(doc: dict[str, Any]) -> dict[str, Any]:
    """What Determined's shims make of these configs: per-device variables, explicit consts."""
    out = copy.deepcopy(doc)
    variables = out["environment"]["environment_variables"]
    out["environment"]["environment_variables"] = {d: variables for d in ("cpu", "cuda", "rocm")}
    out["hyperparameters"] = {k: {"type": "const", "val": v}
                              for k, v in out["hyperparameters"].items()}
    return out


def test_unknown_kinds_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown config kind 'nope'"):
        merge({}, {}, kind="nope")
