"""Helpers for writing the schema data: ids, references and nullable fields.

Every optional field accepts null (null means "not set", as in Determined) and carries its
default, which :func:`hpcdet.expconf.with_defaults` fills in.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

ID_PREFIX = "urn:hpcdet:expconf:v0:"


def schema_id(name: str) -> str:
    """The ``$id`` of the schema called ``name`` (``length``, ``searcher-random``, ...)."""
    return ID_PREFIX + name


def ref(name: str) -> Schema:
    """A ``$ref`` to another schema of the registry."""
    return {"$ref": schema_id(name)}


def optional(kinds: str | list[str], default: Any = None, **rules: Any) -> Schema:
    """A field of JSON type(s) ``kinds`` that may also be null, with its default."""
    names = [kinds] if isinstance(kinds, str) else list(kinds)
    return {"type": [*names, "null"], "default": default, **rules}


def optional_ref(name: str, kinds: str | list[str] | None = "object",
                 default: Any = None) -> Schema:
    """A field that is null or valid against schema ``name``.

    ``kinds=None`` leaves the JSON type to the referenced schema (a union that words its
    own error), so that a wrong type is reported once.
    """
    typed = optional(kinds, default) if kinds is not None else {"default": default}
    return {**typed, "optionalRef": schema_id(name)}


def optional_enum(values: list[Any], default: Any = None) -> Schema:
    """A field that is null or one of ``values``."""
    return {"enum": [None, *values], "default": default}


def strings(default: Any = None) -> Schema:
    """A nullable list of strings."""
    return optional("array", default, items={"type": "string"})


def message_check(message: str, subschema: Any) -> Schema:
    """The ``checks`` keyword with a single check."""
    return {"checks": {message: subschema}}


def always_fails(message: str) -> Schema:
    """A schema whose only error is ``message`` (where it is applied)."""
    return message_check(message, False)


def is_set(name: str) -> Schema:
    """Matches an object where ``name`` is present and not null."""
    return {"required": [name], "properties": {name: {"not": {"type": "null"}}}}


def named(name: str, title: str, schema: Schema) -> Schema:
    """``schema`` with its ``$id`` and title set.

    No ``$schema``: a ``$ref`` into a schema that names its dialect would be checked by
    plain draft-07, without Determined's keywords.
    """
    return {"$id": schema_id(name), "title": title, **schema}


GC_FIELDS: Schema = {
    "save_experiment_best": optional("integer", 0, minimum=0),
    "save_trial_best": optional("integer", 1, minimum=0),
    "save_trial_latest": optional("integer", 1, minimum=0),
}
