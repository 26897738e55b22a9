"""The experiment-config schema (Determined's v0 field names), as JSON Schema data.

Fields hpcdet acts on are typed precisely; fields it accepts but does not act on yet are
listed in :data:`NOT_YET_ACTED_ON`, so ``det experiment create`` can warn about them.
"""

from __future__ import annotations

from typing import Any

_POS_INT: dict[str, Any] = {"type": "integer", "minimum": 1}
_NONNEG_INT: dict[str, Any] = {"type": "integer", "minimum": 0}
_STR_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
_ANY_OBJECT: dict[str, Any] = {"type": "object"}

LENGTH: dict[str, Any] = {
    "oneOf": [
        _POS_INT,
        {"type": "object", "additionalProperties": False, "minProperties": 1,
         "maxProperties": 1,
         "properties": {"batches": _POS_INT, "records": _POS_INT, "epochs": _POS_INT}},
    ],
}

SEARCHER: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"enum": ["single", "random", "grid", "adaptive_asha", "async_halving",
                          "custom"]},
        "metric": {"type": "string", "minLength": 1},
        "smaller_is_better": {"type": "boolean"},
        "max_length": LENGTH,
        "source_trial_id": {"type": ["integer", "null"]},
        "source_checkpoint_uuid": {"type": ["string", "null"]},
    },
}

RESOURCES: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "slots_per_trial": _POS_INT,
        "resource_pool": {"type": "string"},
        "max_slots": {"type": ["integer", "null"], "minimum": 1},
        "priority": {"type": ["integer", "null"], "minimum": 1, "maximum": 99},
        "weight": {"type": "number", "exclusiveMinimum": 0},
        "shm_size": {"type": ["integer", "string", "null"]},
        "native_parallel": {"type": "boolean"},
        "is_single_node": {"type": ["boolean", "null"]},
        "devices": {"type": "array"},
    },
}

SLURM: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "sbatch_args": _STR_LIST,
        "gpu_type": {"type": "string"},
        "slots_per_node": _POS_INT,
    },
}

PBS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"pbsbatch_args": _STR_LIST, "slots_per_node": _POS_INT},
}

ENVIRONMENT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "image": {"type": ["string", "object"]},
        "environment_variables": {"type": ["array", "object"]},
        "force_pull_image": {"type": "boolean"},
        "registry_auth": _ANY_OBJECT,
        "pod_spec": _ANY_OBJECT,
        "add_capabilities": _STR_LIST,
        "drop_capabilities": _STR_LIST,
        "proxy_ports": {"type": "array"},
    },
}

BIND_MOUNT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["host_path", "container_path"],
    "properties": {
        "host_path": {"type": "string", "pattern": "^/"},
        "container_path": {"type": "string", "minLength": 1},
        "read_only": {"type": "boolean"},
        "propagation": {"type": "string"},
    },
}

CHECKPOINT_STORAGE: dict[str, Any] = {
    "type": "object",
    "required": ["type"],
    "properties": {
        "type": {"enum": ["shared_fs", "directory", "s3", "gcs", "azure"]},
        "host_path": {"type": "string", "pattern": "^/"},
        "storage_path": {"type": "string"},
        "container_path": {"type": "string", "pattern": "^/"},
        "save_experiment_best": _NONNEG_INT,
        "save_trial_best": _NONNEG_INT,
        "save_trial_latest": _NONNEG_INT,
    },
}

EXPERIMENT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 256},
        "description": {"type": "string"},
        "labels": _STR_LIST,
        "workspace": {"type": "string"},
        "project": {"type": "string"},
        "entrypoint": {"oneOf": [{"type": "string", "minLength": 1},
                                 {"type": "array", "minItems": 1,
                                  "items": {"type": "string"}}]},
        "hyperparameters": _ANY_OBJECT,
        "searcher": SEARCHER,
        "resources": RESOURCES,
        "checkpoint_storage": CHECKPOINT_STORAGE,
        "checkpoint_policy": {"enum": ["best", "all", "none"]},
        "min_validation_period": LENGTH,
        "min_checkpoint_period": LENGTH,
        "scheduling_unit": _POS_INT,
        "records_per_epoch": _NONNEG_INT,
        "max_restarts": _NONNEG_INT,
        "perform_initial_validation": {"type": "boolean"},
        "reproducibility": {"type": "object", "additionalProperties": False,
                            "properties": {"experiment_seed": {"type": "integer", "minimum": 0,
                                                               "maximum": 2**31 - 1}}},
        "environment": ENVIRONMENT,
        "bind_mounts": {"type": "array", "items": BIND_MOUNT},
        "profiling": _ANY_OBJECT,
        "optimizations": _ANY_OBJECT,
        "log_policies": {"type": ["array", "object"]},
        "retention_policy": _ANY_OBJECT,
        "slurm": SLURM,
        "pbs": PBS,
        "data": _ANY_OBJECT,
        "debug": {"type": "boolean"},
        "preemption_timeout": _POS_INT,
        "integrations": _ANY_OBJECT,
    },
}

# Accepted and stored, but not acted on by this version: reported as warnings at submission.
NOT_YET_ACTED_ON = (
    "workspace", "project", "min_validation_period", "min_checkpoint_period", "scheduling_unit",
    "records_per_epoch", "perform_initial_validation", "profiling", "optimizations",
    "log_policies", "retention_policy", "pbs", "data", "debug", "preemption_timeout",
    "checkpoint_policy", "integrations", "resources.max_slots", "resources.priority",
    "resources.weight", "resources.shm_size", "resources.devices", "slurm.gpu_type",
)
