"""Checkpoint-storage schemas: a union on ``type``.

Every storage type of Determined's schema is valid here (``shared_fs``, ``directory``,
``s3``, ``gcs``, ``azure``, with Determined's fields); whether the master can write a type
is decided at submission, not by the schema. A storage without a type is partial (a
template or the master's default storage completes it); ``type`` is required once
everything is merged.
"""

from __future__ import annotations

from hpcdet.expconf._schema_base import (
    GC_FIELDS,
    Schema,
    is_set,
    message_check,
    named,
    optional,
)

SUPPORTED_STORAGE = ("shared_fs", "directory", "s3", "gcs", "azure")
# Kept for callers of the public API: the schema refuses no storage type Determined knows.
UNSUPPORTED_STORAGE: tuple[str, ...] = ()


def _absolute(field: str) -> Schema:
    return message_check(f"{field} must be an absolute path", {"pattern": "^/"})


SHARED_FS = named("shared-fs", "SharedFSConfig", {
    "type": "object", "additionalProperties": False, "required": ["type"],
    "eventuallyRequired": ["host_path"],
    "properties": {
        "type": {"const": "shared_fs"},
        "host_path": {**optional("string"), **_absolute("host_path")},
        "storage_path": optional("string"),
        "propagation": optional("string", "rprivate"),
        "container_path": optional("string"),
        "checkpoint_path": optional("string"),
        "tensorboard_path": optional("string"),
        **GC_FIELDS,
    },
    **message_check("storage_path must either be a relative directory or a subdirectory of "
                    "host_path", {"compareProperties": {"type": "a_is_subdir_of_b",
                                                        "a": "storage_path", "b": "host_path"}}),
})

DIRECTORY = named("directory", "DirectoryConfig", {
    "type": "object", "additionalProperties": False, "required": ["type"],
    "eventuallyRequired": ["container_path"],
    "properties": {"type": {"const": "directory"},
                   "container_path": {**optional("string"), **_absolute("container_path")},
                   **GC_FIELDS},
})

_PREFIX_CHECK = message_check("prefix cannot contain /../", {"not": {"anyOf": [
    {"type": "string", "pattern": pattern}
    for pattern in (r"/\.\./", r"^\.\./", r"/\.\.$", r"^\.\.$")]}})

S3 = named("s3", "S3Config", {
    "type": "object", "additionalProperties": False, "required": ["type"],
    "eventuallyRequired": ["bucket"],
    "properties": {"type": {"const": "s3"},
                   **{field: optional("string") for field in (
                       "access_key", "bucket", "secret_key", "endpoint_url")},
                   "prefix": {**optional("string"), **_PREFIX_CHECK},
                   **GC_FIELDS},
})

GCS = named("gcs", "GCSConfig", {
    "type": "object", "additionalProperties": False, "required": ["type"],
    "eventuallyRequired": ["bucket"],
    "properties": {"type": {"const": "gcs"},
                   "bucket": optional("string"),
                   "prefix": {**optional("string"), **_PREFIX_CHECK},
                   **GC_FIELDS},
})

_BOTH_CONNECTION_AND_CREDENTIAL = {"not": {
    "required": ["connection_string", "credential"],
    "properties": {"connection_string": {"type": "string"}, "credential": {"type": "string"}}}}

AZURE = named("azure", "AzureConfig", {
    "type": "object", "additionalProperties": False, "required": ["type"],
    "eventuallyRequired": ["container"],
    "eventually": message_check(
        "Exactly one of connection_string or account_url must be set",
        {"oneOf": [{"eventuallyRequired": ["connection_string"]},
                   {"eventuallyRequired": ["account_url"]}]}),
    **message_check("credential and connection_string must not both be set",
                    _BOTH_CONNECTION_AND_CREDENTIAL),
    "properties": {"type": {"const": "azure"},
                   **{field: optional("string") for field in (
                       "container", "connection_string", "account_url", "credential")},
                   **GC_FIELDS},
})

_VARIANTS = {"shared_fs": SHARED_FS, "directory": DIRECTORY, "s3": S3, "gcs": GCS,
             "azure": AZURE}

# Fields of every storage type Determined knows, accepted in a partial (typeless) storage.
_OBJECT_STORE_FIELDS = ("bucket", "prefix", "access_key", "secret_key", "endpoint_url",
                        "container", "connection_string", "account_url", "credential",
                        "user")

_UNION: Schema = {"union": {
    "defaultMessage": "is not an object where object[\"type\"] is one of 'shared_fs', "
                      "'directory', 's3', 'gcs', or 'azure'",
    "items": [{"unionKey": f"const:type={kind}", "$ref": schema["$id"]}
              for kind, schema in _VARIANTS.items()],
}}

_PARTIAL: Schema = {
    "additionalProperties": False,
    "properties": {**SHARED_FS["properties"], "type": True, "container_path": True,
                   **{field: True for field in _OBJECT_STORE_FIELDS}},
}

CHECKPOINT_STORAGE = named("checkpoint-storage", "CheckpointStorageConfig", {
    "type": "object",
    "eventuallyRequired": ["type"],
    "allOf": [{"conditional": {"when": is_set("type"), "enforce": _UNION}},
              {"conditional": {"unless": is_set("type"), "enforce": _PARTIAL}}],
})

SCHEMAS = [CHECKPOINT_STORAGE, *_VARIANTS.values()]
