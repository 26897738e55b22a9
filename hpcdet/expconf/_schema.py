"""The experiment-config schema (Determined's v0 fields), the registry of all schemas, and
the list of fields hpcdet accepts but does not act on yet.
"""

from __future__ import annotations

from hpcdet.expconf import (
    _schema_extras,
    _schema_hparams,
    _schema_logs,
    _schema_parts,
    _schema_searcher,
    _schema_storage,
)
from hpcdet.expconf._schema_base import (
    Schema,
    is_set,
    message_check,
    named,
    optional,
    optional_ref,
    ref,
    schema_id,
    strings,
)
from hpcdet.expconf._schema_parts import CHECKPOINT_POLICY

_GRID_NEEDS_COUNTS: Schema = {"conditional": {
    "when": {"required": ["searcher"],
             "properties": {"searcher": {**is_set("name"),
                                         "properties": {"name": {"const": "grid"}}}}},
    "enforce": {"properties": {"hyperparameters": {
        "additionalProperties": ref("check-grid-hyperparameter")}}},
}}

_WORKSPACE_WITH_PROJECT = message_check(
    "workspace and project must either both be present or both be absent",
    {"anyOf": [{"required": ["workspace", "project"],
                "properties": {"workspace": {"type": "string"},
                               "project": {"type": "string"}}},
               {"properties": {"workspace": {"type": "null"},
                               "project": {"type": "null"}}}]})

EXPERIMENT = named("experiment", "ExperimentConfig", {
    "type": "object",
    "additionalProperties": False,
    "eventuallyRequired": ["checkpoint_storage", "entrypoint", "hyperparameters", "name",
                           "reproducibility", "searcher"],
    "properties": {
        "name": optional("string"),
        "description": optional("string"),
        "labels": strings([]),
        "workspace": optional("string"),
        "project": optional("string"),
        "entrypoint": optional(["string", "array"], items={"type": "string"},
                               minLength=1, minItems=1),
        "hyperparameters": optional_ref("hyperparameters", "object", {}),
        "searcher": optional_ref("searcher"),
        "resources": optional_ref("resources", "object", {}),
        "checkpoint_storage": optional_ref("checkpoint-storage"),
        "checkpoint_policy": CHECKPOINT_POLICY,
        "min_validation_period": optional_ref("length", "object", {"batches": 0}),
        "min_checkpoint_period": optional_ref("length", "object", {"batches": 0}),
        "scheduling_unit": optional("integer", 100, minimum=1),
        "records_per_epoch": optional("integer", 0, minimum=0),
        "max_restarts": optional("integer", 5, minimum=0),
        "perform_initial_validation": optional("boolean", False),
        "reproducibility": optional_ref("reproducibility", "object", {}),
        "environment": optional_ref("environment", "object", {}),
        "bind_mounts": optional_ref("bind-mounts", "array", []),
        "profiling": optional_ref("profiling", "object", {}),
        "optimizations": optional_ref("optimizations", "object", {}),
        "log_policies": optional_ref("log-policies", "array"),
        "retention_policy": optional_ref("retention-policy"),
        # hpcdet's own: overrides master.yaml's metrics_retention for this experiment.
        "metrics_retention": optional_ref("metrics-retention"),
        "slurm": optional_ref("slurm", "object", {}),
        "pbs": optional_ref("pbs", "object", {}),
        "data": optional("object", {}),
        "debug": optional("boolean", False),
        "preemption_timeout": optional("integer", minimum=1),
        # Determined fields for features hpcdet has no counterpart for: accepted as given.
        "integrations": optional_ref("integrations"),
        "security": optional_ref("security"),
        "tensorboard_storage": optional_ref("tensorboard-storage"),
        "data_layer": optional("object"),
        "internal": {"type": "null", "default": None},  # pre-0.15.6 experiments only
    },
    # Determined also requires records_per_epoch when a length is in epochs, to convert it
    # to batches; hpcdet never converts (the trial reports epochs itself), so it does not.
    "allOf": [_GRID_NEEDS_COUNTS, _WORKSPACE_WITH_PROJECT],
})

SCHEMAS: dict[str, Schema] = {schema["$id"]: schema for schema in [
    EXPERIMENT, *_schema_parts.SCHEMAS, *_schema_searcher.SCHEMAS, *_schema_hparams.SCHEMAS,
    *_schema_storage.SCHEMAS, *_schema_logs.SCHEMAS, *_schema_extras.SCHEMAS]}

# The config kinds the public API takes, each the id of its schema: every schema by its
# name with "_" for "-" (``checkpoint_storage``, ``searcher_adaptive_asha``, ``log_action``),
# and Determined's file names for the HPC sections (``hpc_cluster_slurm`` is ``slurm``).
KINDS: dict[str, str] = {
    **{uid.rsplit(":", 1)[1].replace("-", "_"): uid for uid in SCHEMAS},
    "hpc_cluster_slurm": schema_id("slurm"),
    "hpc_cluster_pbs": schema_id("pbs"),
}

# Accepted and stored, but not acted on by this version: reported as warnings at submission.
# (checkpoint_policy and the save_* fields are read once checkpoint GC lands; until then
# setting them has no effect, so they warn.)
NOT_YET_ACTED_ON = (
    "workspace", "project", "records_per_epoch",
    # The PyTorchTrial trainer honours aggregation_frequency and average_training_metrics.
    "optimizations.average_aggregated_gradients", "optimizations.gradient_compression",
    "optimizations.mixed_precision", "optimizations.tensor_fusion_threshold",
    "optimizations.tensor_fusion_cycle_time", "optimizations.auto_tune_tensor_fusion",
    "optimizations.grad_updates_size_file",
    "retention_policy", "debug", "integrations", "security", "tensorboard_storage",
    "data_layer", "internal",
    "searcher.source_trial_id", "searcher.source_checkpoint_uuid", "searcher.stop_once",
    "resources.max_slots", "resources.priority", "resources.weight", "resources.shm_size",
    "resources.devices", "resources.is_single_node", "resources.native_parallel",
    "resources.agent_label", "resources.slots",
    "checkpoint_storage.propagation",
    "checkpoint_storage.checkpoint_path", "checkpoint_storage.tensorboard_path",
    "environment.registry_auth", "environment.pod_spec",
    "environment.add_capabilities", "environment.drop_capabilities", "environment.ports",
    "environment.proxy_ports",
)
