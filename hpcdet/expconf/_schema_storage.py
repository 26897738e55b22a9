"""Checkpoint-storage schemas: a union on ``type``.

hpcdet writes ``shared_fs`` and ``directory`` storage. Determined's object stores (``s3``,
``gcs``, ``azure``) are valid there but not writable here, so they get one error on
``checkpoint_storage.type``. A storage without a type is partial (a template or the
master's default storage completes it); ``type`` is required once everything is merged.
"""

from __future__ import annotations

from hpcdet.expconf._schema_base import (
    GC_FIELDS,
    Schema,
    always_fails,
    is_set,
    message_check,
    named,
    optional,
)

SUPPORTED_STORAGE = ("shared_fs", "directory")
UNSUPPORTED_STORAGE = ("s3", "gcs", "azure")


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

_VARIANTS = {"shared_fs": SHARED_FS, "directory": DIRECTORY}

# Fields of every storage type Determined knows, accepted in a partial (typeless) storage.
_OBJECT_STORE_FIELDS = ("bucket", "prefix", "access_key", "secret_key", "endpoint_url",
                        "container", "connection_string", "account_url", "credential")


def _unsupported(kind: str) -> Schema:
    message = (f"checkpoint storage type {kind!r} is not supported by hpcdet (supported: "
               f"{', '.join(SUPPORTED_STORAGE)})")
    return {"unionKey": f"const:type={kind}", "properties": {"type": always_fails(message)}}


_UNION: Schema = {"union": {
    "defaultMessage": "is not an object where object[\"type\"] is one of 'shared_fs' or "
                      "'directory'",
    "items": [{"unionKey": f"const:type={kind}", "$ref": schema["$id"]}
              for kind, schema in _VARIANTS.items()]
    + [_unsupported(kind) for kind in UNSUPPORTED_STORAGE],
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

SCHEMAS = [CHECKPOINT_STORAGE, SHARED_FS, DIRECTORY]
