"""Schemas of the smaller sections: lengths, mounts, environment, resources, HPC, misc.

Shapes, defaults and messages follow Determined's ``schemas/expconf/v0/*.json``.
"""

from __future__ import annotations

from hpcdet.expconf._schema_base import (
    Schema,
    message_check,
    named,
    optional,
    optional_enum,
    optional_ref,
    ref,
    strings,
)

LENGTH_UNITS = ("batches", "records", "epochs")


def _single_unit(unit: str) -> Schema:
    return {"unionKey": f"singleproperty:{unit}", "type": "object",
            "additionalProperties": False, "required": [unit],
            "properties": {unit: {"type": "integer", "minimum": 0}}}


LENGTH = named("length", "Length", {"union": {
    "defaultMessage": 'a length object must have one attribute named "batches", "records", '
                      'or "epochs"',
    "items": [_single_unit(unit) for unit in LENGTH_UNITS],
}})

POSITIVE_LENGTH = named("check-positive-length", "CheckPositiveLength", {"allOf": [
    ref("length"), {"additionalProperties": {"type": "integer", "minimum": 1}}]})

SEARCHER_LENGTH = named("searcher-length", "SearcherLength", {"union": {"items": [
    {"unionKey": "not:type:object", "type": "integer", "minimum": 0},
    {"unionKey": "always", **ref("check-positive-length")},
]}})

BIND_MOUNT = named("bind-mount", "BindMount", {
    "type": "object", "additionalProperties": False,
    "required": ["host_path", "container_path"],
    "properties": {
        "host_path": {"type": "string",
                      **message_check("host_path must be an absolute path", {"pattern": "^/"})},
        "container_path": {"type": "string", **message_check(
            'container_path must not be "."', {"not": {"const": "."}})},
        "read_only": optional("boolean", False),
        "propagation": optional("string", "rprivate"),
    },
})

BIND_MOUNTS = named("bind-mounts", "BindMountsConfig",
                    {"type": "array", "items": ref("bind-mount")})

DEVICE = named("device", "Device", {
    "type": "object", "additionalProperties": False,
    "required": ["host_path", "container_path"],
    "properties": {"host_path": {"type": "string"}, "container_path": {"type": "string"},
                   "mode": optional("string", "mrw")},
})

DEVICES = named("devices", "DevicesConfig", {"type": "array", "items": {"union": {
    "defaultMessage": 'is neither a "host:container[:mode]" string nor a device object',
    "items": [{"unionKey": "type:object", **ref("device")},
              {"unionKey": "never", "type": "string", "pattern": "^[^:]+:[^:]+(:[^:]+)?$"}],
}}})

_PER_DEVICE_KEYS = ("cpu", "cuda", "rocm")
_LEGACY_GPU_KEY = "gpu"  # Determined's name for "cuda" before ROCm: read as cuda

ENVIRONMENT_IMAGE_MAP = named("environment-image-map", "EnvironmentImageMap", {
    "type": "object", "additionalProperties": False,
    "properties": {key: optional("string") for key in (*_PER_DEVICE_KEYS, _LEGACY_GPU_KEY)},
})

ENVIRONMENT_VARIABLES_MAP = named("environment-variables-map", "EnvironmentVariablesMap", {
    "type": "object", "additionalProperties": False,
    "properties": {key: strings([]) for key in (*_PER_DEVICE_KEYS, _LEGACY_GPU_KEY)},
})

ENVIRONMENT_IMAGE = named("environment-image", "EnvironmentImage", {"union": {
    "defaultMessage": "is neither a string nor a map of cpu, cuda, or rocm to strings",
    "items": [{"unionKey": "never", **ref("environment-image-map")},
              {"unionKey": "never", "type": "string"}],
}})

ENVIRONMENT_VARIABLES = named("environment-variables", "EnvironmentVariables", {"union": {
    "defaultMessage": "is neither a list of strings nor a map of cpu, cuda, or rocm to lists "
                      "of strings",
    "items": [{"unionKey": "never", **ref("environment-variables-map")},
              {"unionKey": "never", "type": "array", "items": {"type": "string"}}],
}})

PROXY_PORT = named("proxy-port", "ProxyPort", {
    "type": "object", "additionalProperties": False, "required": ["proxy_port"],
    "properties": {"proxy_port": {"type": "integer", "minimum": 1, "maximum": 65535},
                   "proxy_tcp": optional("boolean", False),
                   "unauthenticated": optional("boolean", False),
                   "default_service_id": optional("boolean", False)},
})

PROXY_PORTS = named("proxy-ports", "ProxyPortsConfig",
                     {"type": "array", "items": ref("proxy-port")})

REGISTRY_AUTH = named("registry-auth", "RegistryAuth", {
    "type": "object", "additionalProperties": False,
    "properties": {key: optional("string") for key in (
        "username", "password", "auth", "email", "serveraddress", "identitytoken",
        "registrytoken")},
})

# Determined's own container in a pod spec is Determined's to configure (hpcdet runs no pods
# but keeps the check, so that a config is refused where Determined refuses it).
_OURS = {field: f"container {label} is not configurable{hint}" for field, label, hint in [
    ("image", "Image", ", set it in the experiment config"), ("command", "Command", ""),
    ("args", "Args", ""), ("working_dir", "WorkingDir", ""), ("ports", "Ports", ""),
    ("liveness_probe", "LivenessProbe", ""), ("readiness_probe", "ReadinessProbe", ""),
    ("startup_probe", "StartupProbe", ""), ("lifecycle", "Lifecycle", ""),
    ("termination_message_path", "TerminationMessagePath", ""),
    ("termination_message_policy", "TerminationMessagePolicy", ""),
    ("image_pull_policy", "ImagePullPolicy", ", set it in the experiment config"),
    ("security_context", "SecurityContext", ", set it in the experiment config")]}
_OURS = {field: message.replace("Args is", "Args are") for field, message in _OURS.items()}
POD_SPEC: Schema = {
    "disallowProperties": {"name": "pod Name is not a configurable option",
                           "name_space": "pod NameSpace is not a configurable option"},
    "properties": {"spec": {**optional("object"), "properties": {"containers": {
        **optional("array"), "items": {"conditional": {
            "when": {"properties": {"name": {"const": "determined-container"}}},
            "enforce": {"type": "object", "disallowProperties": _OURS}}}}}}},
}

ENVIRONMENT = named("environment", "EnvironmentConfig", {
    "type": "object", "additionalProperties": False,
    "properties": {
        "image": optional_ref("environment-image", None, {}),
        "environment_variables": optional_ref("environment-variables", None, []),
        "ports": optional("object", {}, additionalProperties={"type": "integer"}),
        "force_pull_image": optional("boolean", False),
        "registry_auth": optional_ref("registry-auth"),
        "pod_spec": {**optional("object"), **POD_SPEC},
        "add_capabilities": strings([]),
        "drop_capabilities": strings([]),
        "proxy_ports": optional_ref("proxy-ports", "array", []),
    },
})

# Slurm's --time forms that hold hours: [D-]HH:MM:SS.
WALLTIME_PATTERN = r"^([0-9]+-)?[0-9]{1,3}:[0-5][0-9]:[0-5][0-9]$"
ALLOCATION: Schema = {
    "additionalProperties": False, "required": ["slots", "walltime"],
    "properties": {
        "slots": {"type": "integer", "minimum": 1},
        "walltime": {"type": "string", **message_check(
            "must be a walltime of the form HH:MM:SS or D-HH:MM:SS",
            {"pattern": WALLTIME_PATTERN})},
    },
}

RESOURCES = named("resources", "ResourcesConfig", {
    "type": "object", "additionalProperties": False,
    "properties": {
        # 0, as in Determined: a CPU-only trial, one rank and no GPU (docs/configuration.md).
        "slots_per_trial": optional("integer", 1, minimum=0),
        "max_slots": optional("integer", minimum=1),
        "weight": optional("number", 1, exclusiveMinimum=0),
        "priority": optional("integer", minimum=1, maximum=99),
        "resource_pool": optional("string"),
        "shm_size": {**optional(["integer", "string"]), **message_check(
            "must be a valid memory size",
            {"pattern": r"^([0-9]*[.])?[0-9]+ ?(([kmgtpKMGTP]([iI]?[bB])?)|[bB])?$"})},
        "devices": optional_ref("devices", "array", []),
        "is_single_node": optional("boolean"),
        "native_parallel": optional("boolean", False),
        "agent_label": optional("string"),  # ignored by Determined too
        "slots": optional("integer"),  # legacy, no effect
        # hpcdet's: allocation mode (docs/allocation-mode.md), one long job whose slots run
        # the experiment's trials one after another as srun steps.
        "allocation": optional("object", None, **ALLOCATION),
    },
})

SLURM = named("slurm", "SlurmConfig", {
    "type": "object", "additionalProperties": False,
    "properties": {"slots_per_node": optional("integer", minimum=1),
                   "gpu_type": optional("string"),
                   "sbatch_args": strings(),
                   # hpcdet's: how ranks start (null: srun); see docs/configuration.md.
                   "launcher": optional_enum(["default", "srun", "srun-pmix", "mpiexec"])},
})

PBS = named("pbs", "PbsConfig", {
    "type": "object", "additionalProperties": False,
    "properties": {"slots_per_node": optional("integer", minimum=1),
                   "pbsbatch_args": strings(),
                   # hpcdet's: how ranks start (null: mpiexec, PBS has no srun).
                   "launcher": optional_enum(["default", "mpiexec"])},
})

PROFILING = named("profiling", "ProfilingConfig", {
    "type": "object", "additionalProperties": False,
    "properties": {"enabled": optional("boolean", False),
                   "begin_on_batch": optional("integer", 0, minimum=0),
                   "end_after_batch": optional("integer", minimum=0),
                   "sync_timings": optional("boolean", True)},
    "conditional": {"when": {"properties": {"enabled": {"const": True}}},
                    "enforce": {"compareProperties": {
                        "type": "a<=b", "a": "begin_on_batch", "b": "end_after_batch"}}},
})

OPTIMIZATIONS = named("optimizations", "OptimizationsConfig", {
    "type": "object", "additionalProperties": False,
    "properties": {
        "aggregation_frequency": optional("integer", 1, minimum=1),
        "average_aggregated_gradients": optional("boolean", True),
        "average_training_metrics": optional("boolean", True),
        "gradient_compression": optional("boolean", False),
        "grad_updates_size_file": optional("string"),
        "mixed_precision": {**optional("string", "O0"), **message_check(
            "mixed_precision should be a string starting with an uppercase letter 'O'",
            {"pattern": "^O"})},
        "tensor_fusion_threshold": optional("integer", 64, minimum=0),
        "tensor_fusion_cycle_time": optional("integer", 1, minimum=0),
        "auto_tune_tensor_fusion": optional("boolean", False),
    },
})

RETENTION_POLICY = named("retention-policy", "RetentionPolicyConfig", {
    "type": "object", "additionalProperties": False,
    "properties": {"log_retention_days": optional("integer", minimum=-1, maximum=32767)},
})

# hpcdet's own (Determined has none): how long this experiment's training metrics stay at
# full resolution; each key set here wins over master.yaml's metrics_retention
# (hpcdet.master.settings.retention, det-master vacuum-metrics).
METRICS_RETENTION = named("metrics-retention", "MetricsRetentionConfig", {
    "type": "object", "additionalProperties": False,
    "properties": {"training_days": optional("integer", minimum=0, maximum=36500),
                   "action": {"enum": [None, "downsample", "drop", "keep"], "default": None},
                   "keep_every": optional("integer", minimum=1, maximum=1_000_000)},
})

REPRODUCIBILITY = named("reproducibility", "ReproducibilityConfig", {
    "type": "object", "additionalProperties": False, "eventuallyRequired": ["experiment_seed"],
    "properties": {"experiment_seed": optional("integer", minimum=0, maximum=2**31 - 1)},
})

CHECKPOINT_POLICY = optional_enum(["best", "all", "none"], "best")

SCHEMAS = [LENGTH, POSITIVE_LENGTH, SEARCHER_LENGTH, BIND_MOUNT, BIND_MOUNTS,
           DEVICE, DEVICES, ENVIRONMENT_IMAGE_MAP, ENVIRONMENT_VARIABLES_MAP, ENVIRONMENT_IMAGE,
           ENVIRONMENT_VARIABLES, PROXY_PORT, PROXY_PORTS, REGISTRY_AUTH, ENVIRONMENT,
           RESOURCES, SLURM, PBS, PROFILING, OPTIMIZATIONS, RETENTION_POLICY, METRICS_RETENTION,
           REPRODUCIBILITY]
