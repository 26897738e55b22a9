"""Sanity validation (what the user wrote), with cases ported from Determined's
``schemas/test_cases/v0/*.yaml``: the same documents, and the same messages where
Determined's cases give one."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from hpcdet.expconf import validate

FULL_EXPERIMENT = """
name: pytorch-noop
description: pytorch-noop description
labels: [a, b]
workspace: ws
project: proj
entrypoint: python3 -m determined.launch.torch_distributed python3 train.py
bind_mounts:
  - {host_path: /asdf, container_path: /asdf, read_only: true, propagation: rprivate}
checkpoint_policy: best
checkpoint_storage:
  type: shared_fs
  host_path: /tmp
  storage_path: determined-cp
  propagation: rprivate
  container_path: /asdf
  checkpoint_path: /qwer
  tensorboard_path: /zxcv
  save_experiment_best: 0
  save_trial_best: 1
  save_trial_latest: 1
data: {any: thing}
debug: false
environment:
  environment_variables: {}
  force_pull_image: false
  image: {cpu: cpu-image, cuda: cuda-image, rocm: rocm-image}
  pod_spec: null
  ports: {qwer: 1234, asdf: 5678}
  registry_auth: {username: usr, password: pwd, auth: ath, email: eml,
                  serveraddress: srvaddr, identitytoken: idtkn, registrytoken: rgtkn}
  add_capabilities: [CAP_CHOWN]
  drop_capabilities: [CAP_KILL]
  proxy_ports: [{proxy_port: 8888, proxy_tcp: true}]
hyperparameters:
  global_batch_size: {type: const, val: 32}
  list_hparam: [10, {type: const, val: asdf}, {type: int, minval: 1, maxval: 2}]
  dict_hparam:
    double_hparam: {type: double, minval: 1, maxval: 10}
    log_hparam: {type: log, minval: 1, maxval: 10, base: 1}
  categorical_hparam: {type: categorical, vals: [1, 2, 3, 4]}
log_policies:
  - {name: CUDA OOM, pattern: ".*CUDA out of memory.*", action: cancel_retries}
  - {pattern: a, actions: [{signal: sig}, cancel_retries, exclude_node]}
max_restarts: 5
min_validation_period: {batches: 0}
min_checkpoint_period: {epochs: 1}
optimizations:
  aggregation_frequency: 1
  auto_tune_tensor_fusion: false
  average_aggregated_gradients: true
  average_training_metrics: false
  gradient_compression: false
  grad_updates_size_file: "/tmp/hi I am a size file"
  mixed_precision: O0
  tensor_fusion_cycle_time: 5
  tensor_fusion_threshold: 64
perform_initial_validation: false
preemption_timeout: 600
profiling: {enabled: true, begin_on_batch: 0, end_after_batch: 1, sync_timings: false}
records_per_epoch: 0
reproducibility: {experiment_seed: 1606239866}
resources:
  agent_label: big_al
  devices: [{host_path: /dev/infiniband, container_path: /dev/infiniband, mode: rmw}]
  slots_per_trial: 15
  weight: 1000
  max_slots: 900
  priority: 55
  resource_pool: asdf
  native_parallel: false
  shm_size: 4G
retention_policy: {log_retention_days: 30}
scheduling_unit: 100
searcher:
  max_length: {batches: 1000}
  metric: loss
  name: single
  smaller_is_better: true
  source_checkpoint_uuid: null
  source_trial_id: null
slurm: {slots_per_node: 5, gpu_type: a100, sbatch_args: ["--mem=8G"]}
pbs: {slots_per_node: 5, pbsbatch_args: ["-l walltime=1:00:00"]}
security: {kerberos: {config_file: xyz}}
"""


def test_a_full_determined_experiment_is_sane() -> None:
    assert validate(yaml.safe_load(FULL_EXPERIMENT)) == []


SANE: list[tuple[str, Any]] = [
    # searchers.yaml
    ("searcher", {"name": "single", "max_length": {"batches": 1000}, "metric": "loss",
                  "smaller_is_better": True, "source_checkpoint_uuid": None,
                  "source_trial_id": None}),
    ("searcher", {"name": "random", "max_concurrent_trials": 2, "max_length": 1000,
                  "max_trials": 1000, "metric": "loss", "source_checkpoint_uuid": "asdf"}),
    ("searcher", {"name": "grid", "max_concurrent_trials": 2, "metric": "loss"}),
    ("searcher", {"name": "adaptive_asha", "max_length": {"batches": 1000}, "max_trials": 100,
                  "bracket_rungs": [1, 2, 3, 4, 5], "divisor": 5, "mode": "standard",
                  "max_rungs": 5, "max_concurrent_trials": 5, "metric": "loss",
                  "smaller_is_better": True, "source_trial_id": 15, "stop_once": True}),
    ("searcher", {"name": "adaptive_asha", "metric": "loss", "max_trials": 16,
                  "time_metric": "batches", "max_time": 100}),
    # a partial searcher may be completed by a template
    ("searcher", {"metric": "loss", "max_trials": 5}),
    # unions.yaml
    ("checkpoint_storage", {"type": "shared_fs", "host_path": "/tmp",
                            "storage_path": "determined-cp", "propagation": "rprivate",
                            "container_path": "/asdf", "save_trial_latest": 1}),
    ("checkpoint_storage", {"type": "directory", "container_path": "/path/on/disk",
                            "save_experiment_best": 0, "save_trial_best": 1}),
    ("checkpoint_storage", {"save_experiment_best": 3}),
    ("length", {"records": 1}),
    ("length", {"batches": 1}),
    ("length", {"epochs": 1}),
    ("environment", {"image": "alpine", "environment_variables": ["ABCD=1234"]}),
    ("environment", {"image": {"cpu": "alpine", "cuda": "alpine", "rocm": "alpine"},
                     "environment_variables": {"cpu": ["ABCD=1234"], "cuda": ["ABCD=1234"],
                                               "rocm": ["ABCD=1234"]}}),
    ("environment", {"image": {"cpu": "alpine", "gpu": "alpine"}}),
    # compare_properties.yaml
    ("hyperparameter", {"type": "int", "minval": 2, "maxval": 3}),
    ("checkpoint_storage", {"type": "shared_fs", "host_path": "/tmp"}),
    ("checkpoint_storage", {"type": "shared_fs", "host_path": "/tmp",
                            "storage_path": "/tmp/storage_path"}),
    ("checkpoint_storage", {"type": "shared_fs", "host_path": "/tmp",
                            "storage_path": "storage_path"}),
    # hyperparameters.yaml
    ("hyperparameter", {"nest": {"const_implicit_empty": None, "const_implicit_bool": True,
                                 "const_implicit_int": 1234, "const_implicit_float": 12.5,
                                 "const_implicit_list": [1, "fish", 2, "fish"],
                                 "const_implicit_dict": {"red": "fish", "blue": "fish"}}}),
    ("hyperparameter", [{"type": "const", "val": "asdf"},
                        {"type": "const", "val": [1, "fish"]},
                        {"type": "const", "val": {"red": "fish"}}]),
    ("hyperparameter", {"type": "double", "minval": 1, "maxval": 2}),
    ("hyperparameter", {"type": "log", "minval": 1, "maxval": 10, "base": 3.14}),
    ("hyperparameter", {"type": "categorical",
                        "vals": [None, True, 0, 0.0, "asdf", [1, "fish"], {"red": "fish"}]}),
    # defaults.yaml / misc
    ("bind_mount", {"host_path": "/asdf", "container_path": "/zxcv"}),
    ("resources", {"devices": [{"host_path": "/h1", "container_path": "/c1", "mode": "r"},
                               "/h3:/c3:r", "/h4:/c4"]}),
    ("resources", {"slots_per_trial": 0}),  # a CPU-only trial, as in Determined
    ("log_policies", []),
    ("log_policies", [{"pattern": "a", "action": {"type": "exclude_node"}}]),
    ("slurm", {"slots_per_node": 2, "gpu_type": "a100", "sbatch_args": ["--mem=1G"]}),
    ("pbs", {"slots_per_node": 2, "pbsbatch_args": ["-l mem=1gb"]}),
    ("experiment", {"entrypoint": ["python3", "-m", "determined.launch.torch_distributed",
                                   "train.py"]}),
    ("experiment", {"workspace": "w", "project": "p"}),
    ("experiment", {"profiling": {"enabled": True, "begin_on_batch": 2,
                                  "end_after_batch": 2}}),
    ("experiment", {"searcher": {"name": "grid", "metric": "m"}, "hyperparameters": {
        "a": {"type": "int", "minval": 1, "maxval": 2, "count": 2},
        "c": {"type": "categorical", "vals": [1, 2]}, "k": 3}}),
    ("experiment", {"searcher": {"name": "single", "max_length": {"epochs": 2}}}),
]


@pytest.mark.parametrize(("kind", "doc"), SANE)
def test_sane_documents_have_no_errors(kind: str, doc: Any) -> None:
    assert validate(doc, kind) == []


INVALID: list[tuple[str, Any, list[str]]] = [
    # compare_properties.yaml
    ("hyperparameter", {"type": "int", "minval": 2, "maxval": 2},
     ["<config>: minval must be less than maxval"]),
    ("hyperparameter", {"type": "double", "minval": 2, "maxval": 1},
     ["<config>: minval must be less than maxval"]),
    ("experiment", {"profiling": {"enabled": True, "begin_on_batch": 2, "end_after_batch": 1}},
     ["<config>.profiling: begin_on_batch must be less than end_after_batch"]),
    *(("checkpoint_storage", {"type": "shared_fs", "host_path": "/tmp", "storage_path": path},
       ["<config>: storage_path must either be a relative directory or a subdirectory of "
        "host_path"])
      for path in ("/storage_path", "../storage_path", "anywhere/../../storage_path",
                   "/tmp/anywhere/../../storage_path", "/tmpfoo")),
    # length.yaml
    ("length", {}, ['<config>: a length object must have one attribute named "batches", '
                    '"records", or "epochs"']),
    ("length", {"batches": 10, "records": 10},
     ['<config>: a length object must have one attribute named "batches", "records", or '
      '"epochs"']),
    ("length", {"batches": -1}, ["<config>.batches: must be >= 0, got -1"]),
    ("searcher", {"name": "single", "max_length": {"batches": 0}},
     ["<config>.max_length.batches: must be >= 1, got 0"]),
    ("searcher", {"name": "single", "max_length": -1},
     ["<config>.max_length: must be >= 0, got -1"]),
    # hyperparameters.yaml: paths inside nested and list hyperparameters
    ("hyperparameter", [[{"type": "categorical"}, {"type": "categorical"}],
                        {"one": {"a": {"type": "categorical"},
                                 "b": [{"type": "categorical"}, {"type": "categorical"}]}}],
     ["<config>[0][0]: vals is a required property",
      "<config>[0][1]: vals is a required property",
      "<config>[1].one.a: vals is a required property",
      "<config>[1].one.b[0]: vals is a required property",
      "<config>[1].one.b[1]: vals is a required property"]),
    ("hyperparameters", {"lr": {"type": "bogus", "minval": 1}},
     ['<config>.lr: if a hyperparameter object\'s ["type"] is set, it must be one of "int", '
      '"double", "log", "const", or "categorical"']),
    ("hyperparameters", {"lr": {"type": "log", "minval": 1, "maxval": 2}},
     ["<config>.lr: base is a required property"]),
    ("hyperparameters", {"lr": {"type": "log", "minval": 1, "maxval": 2, "base": 0}},
     ["<config>.lr.base: must be > 0, got 0"]),
    ("hyperparameters", {"n": {"type": "int", "minval": 1.5, "maxval": 3}},
     ["<config>.n.minval: must be an integer, got 1.5"]),
    ("hyperparameters", {"c": {"type": "categorical", "vals": []}},
     ["<config>.c.vals: must have at least 1 item(s)"]),
    ("hyperparameters", {"x": {"type": "int", "minval": 1, "maxval": 2, "min": 0}},
     ["<config>.x: unknown field(s) 'min' (known: count, maxval, minval, type)"]),
    # experiment.yaml / misc.yaml: grid search needs counts, wherever the hyperparameter is
    ("experiment", {"searcher": {"name": "grid", "metric": "loss"}, "hyperparameters": {
        "global_batch_size": {"type": "const", "val": 32},
        "list_hparam": [10, {"type": "const", "val": "asdf"},
                        {"type": "int", "minval": 1, "maxval": 2}],
        "dict_hparam": {
            "double_hparam": {"type": "double", "minval": 1, "maxval": 10, "count": 2},
            "log_hparam": {"type": "log", "minval": 1, "maxval": 10, "base": 1}},
        "categorical_hparam": {"type": "categorical", "vals": [1, 2, 3, 4]}}},
     ["<config>.hyperparameters.dict_hparam.log_hparam: grid search is in use but count "
      "was not provided",
      "<config>.hyperparameters.list_hparam[2]: grid search is in use but count was not "
      "provided"]),
    # misc.yaml: bind mounts
    ("bind_mount", {"host_path": "asdf", "container_path": "."},
     ['<config>.container_path: container_path must not be "."',
      "<config>.host_path: host_path must be an absolute path"]),
    ("bind_mounts", [{"host_path": "/a"}],
     ["<config>[0]: container_path is a required property"]),
    # log_policies.yaml
    ("log_policies", [{"pattern": "a", "actions": ["notallowedstring", 3]}],
     ['<config>[0].actions[0]: expect one of the followings: cancel_retries, exclude_node, '
      'or an object with a single "signal" field',
      '<config>[0].actions[1]: expect one of the followings: cancel_retries, exclude_node, '
      'or an object with a single "signal" field']),
    ("log_policies", [{"pattern": "a", "actions": [{"signal": "sig"}],
                       "action": {"type": "cancel_retries"}}],
     ['<config>[0]: both the deprecated "action" field and the newer "actions" field are '
      'detected']),
    # unions: unknown members get the union's own message
    ("checkpoint_storage", {"type": "hdfs"},
     ['<config>: is not an object where object["type"] is one of \'shared_fs\', '
      "'directory', 's3', 'gcs', or 'azure'"]),
    ("searcher", {"name": "bayesian"},
     ['<config>: is not an object where object["name"] is one of \'single\', '
      "'random', 'grid', 'custom', or 'adaptive_asha'"]),
    ("environment", {"image": 3},
     ["<config>.image: is neither a string nor a map of cpu, cuda, or rocm to strings"]),
    ("environment", {"environment_variables": "A=1"},
     ["<config>.environment_variables: is neither a list of strings nor a map of "
      "cpu, cuda, or rocm to lists of strings"]),
    # field rules of the experiment and its sections
    ("experiment", {"workspace": "w"},
     ["<config>: workspace and project must either both be present or both be absent"]),
    ("experiment", {"project": "p", "workspace": None},
     ["<config>: workspace and project must either both be present or both be absent"]),
    ("experiment", {"resources": {"slots_per_trial": "two"}},
     ["<config>.resources.slots_per_trial: must be an integer, got 'two'"]),
    ("experiment", {"resources": {"slots_per_trial": -1, "priority": 100}},
     ["<config>.resources.priority: must be <= 99, got 100",
      "<config>.resources.slots_per_trial: must be >= 0, got -1"]),
    ("experiment", {"max_restarts": -1, "checkpoint_policy": "some"},
     ["<config>.checkpoint_policy: must be one of best, all, none, got 'some'",
      "<config>.max_restarts: must be >= 0, got -1"]),
    ("experiment", {"reproducibility": {"experiment_seed": 2**31}},
     ["<config>.reproducibility.experiment_seed: must be <= 2147483647, got 2147483648"]),
    ("experiment", {"entrypoint": ""}, ["<config>.entrypoint: must not be empty"]),
    ("experiment", {"labels": ["a", 1]}, ["<config>.labels[1]: must be a string, got 1"]),
    ("experiment", {"retention_policy": {"log_retention_days": -2}},
     ["<config>.retention_policy.log_retention_days: must be >= -1, got -2"]),
    ("experiment", {"slurm": {"sbatch_args": "--mem=1G"}},
     ["<config>.slurm.sbatch_args: must be a list, got '--mem=1G'"]),
    ("experiment", {"optimizations": {"mixed_precision": "o1"}},
     ["<config>.optimizations.mixed_precision: mixed_precision should be a string "
      "starting with an uppercase letter 'O'"]),
    ("searcher", {"name": "random", "max_trials": 0, "bogus": 1},
     ["<config>.max_trials: must be >= 1, got 0",
      "<config>: unknown field(s) 'bogus' (known: max_concurrent_trials, max_length, "
      "max_trials, metric, name, smaller_is_better, source_checkpoint_uuid, "
      "source_trial_id)"]),
    ("searcher", {"name": "adaptive_asha", "divisor": 1, "mode": "fast", "max_time": 0},
     ["<config>.divisor: must be > 1, got 1", "<config>.max_time: must be >= 1, got 0",
      "<config>.mode: must be one of aggressive, standard, conservative, got 'fast'"]),
    ("checkpoint_storage", {"type": "shared_fs", "host_path": "tmp"},
     ["<config>.host_path: host_path must be an absolute path"]),
]


@pytest.mark.parametrize(("kind", "doc", "expected"), INVALID)
def test_invalid_documents_get_every_error_at_once(kind: str, doc: Any,
                                                   expected: list[str]) -> None:
    assert validate(doc, kind) == sorted(expected)


LEGACY_SEARCHERS = [
    {"name": "custom", "metric": "loss", "unit": "batches", "anything": 1},
    {"name": "adaptive", "metric": "loss", "budget": {"batches": 100}, "max_rungs": 3},
    {"name": "adaptive_simple", "metric": "loss", "max_trials": 4, "max_rungs": 3},
    {"name": "sync_halving", "metric": "loss", "num_rungs": 3, "budget": {"epochs": 1}},
    {"name": "async_halving", "metric": "loss", "num_rungs": 3, "max_trials": 4,
     "max_time": 100, "time_metric": "batches"},
]


@pytest.mark.parametrize("searcher", LEGACY_SEARCHERS)
def test_legacy_searchers_are_valid_as_written_as_in_determined(searcher: Any) -> None:
    assert validate({"searcher": searcher}) == []


@pytest.mark.parametrize("searcher", LEGACY_SEARCHERS[:4])
def test_removed_searchers_are_refused_once_complete_with_determineds_message(
        searcher: Any) -> None:
    assert validate(searcher, "searcher", "complete") == [
        f"<config>.name: the '{searcher['name']}' searcher has been removed and is not valid "
        "for new experiments"]


def test_async_halving_is_refused_once_complete_naming_the_equivalent() -> None:
    assert validate(LEGACY_SEARCHERS[4], "searcher", "complete") == [
        "<config>.name: the 'async_halving' searcher is not run by hpcdet: adaptive_asha with "
        "bracket_rungs: [num_rungs] is the same single-bracket search"]


def test_a_searcher_determined_does_not_know_gets_determineds_union_message() -> None:
    assert validate({"searcher": {"name": "pbt", "metric": "loss"}}) == [
        '<config>.searcher: is not an object where object["name"] is one of \'single\', '
        "'random', 'grid', 'custom', or 'adaptive_asha'"]


CLOUD_STORAGES = [
    {"type": "s3", "bucket": "b", "prefix": "runs/a", "endpoint_url": "http://127.0.0.1:9000",
     "access_key": "k", "secret_key": "s", "save_trial_best": 2},
    {"type": "gcs", "bucket": "b", "prefix": "runs"},
    {"type": "azure", "container": "c", "connection_string": "cs"},
    {"type": "azure", "container": "c", "account_url": "https://a", "credential": "cred"},
]


@pytest.mark.parametrize("storage", CLOUD_STORAGES)
def test_object_stores_are_valid_with_determineds_fields(storage: dict[str, Any]) -> None:
    assert validate({"checkpoint_storage": storage}) == []
    assert validate(storage, "checkpoint_storage", "complete") == []


@pytest.mark.parametrize(("storage", "phase", "expected"), [
    ({"type": "s3", "bucket": "b", "prefix": "a/../b"}, "sanity",
     "<config>.prefix: prefix cannot contain /../"),
    ({"type": "gcs", "bucket": "b", "prefix": ".."}, "sanity",
     "<config>.prefix: prefix cannot contain /../"),
    ({"type": "s3"}, "complete", "<config>: bucket is a required property"),
    ({"type": "s3", "bucket": "b", "region": "x"}, "sanity",
     "<config>: unknown field(s) 'region' (known: access_key, bucket, endpoint_url, prefix, "
     "save_experiment_best, save_trial_best, save_trial_latest, secret_key, type)"),
    ({"type": "azure", "container": "c"}, "complete",
     "<config>: Exactly one of connection_string or account_url must be set"),
    ({"type": "azure", "container": "c", "connection_string": "x", "credential": "y"},
     "sanity", "<config>: credential and connection_string must not both be set"),
])
def test_object_stores_are_checked_as_determined_checks_them(storage: dict[str, Any],
                                                              phase: str, expected: str) -> None:
    assert expected in validate(storage, "checkpoint_storage", phase)


def test_unknown_fields_name_the_known_ones() -> None:
    (line,) = validate({"bogus_key": 1})
    assert line.startswith("<config>: unknown field(s) 'bogus_key' (known: bind_mounts, ")


def test_errors_are_sorted_and_deduplicated_and_the_root_is_named() -> None:
    doc = {"resources": {"slots_per_trial": -1}, "labels": [1], "max_restarts": -1}
    lines = validate(doc, root="<template>")
    assert lines == sorted(set(lines)) and len(lines) == 3
    assert all(line.startswith("<template>.") for line in lines)


def test_a_document_that_is_not_a_mapping_is_one_error() -> None:
    assert validate(["a"]) == ["<config>: must be a mapping, got ['a']"]
