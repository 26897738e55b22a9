"""Validation against the schema registry, rendered as ``<config>.path[2].field: message``.

Two validators per schema, as in Determined: *sanity* (what the user wrote) and
*completeness* (sanity plus ``eventuallyRequired``/``eventually``, after defaults merge).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from typing import Any, cast

import jsonschema
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.jsonschema import DRAFT7

from hpcdet.expconf import _keywords
from hpcdet.expconf._schema import SCHEMAS

_TYPE_NAMES = {"integer": "an integer", "string": "a string", "object": "a mapping",
               "array": "a list", "boolean": "true or false", "number": "a number",
               "null": "null"}


@functools.cache
def _registry() -> Registry[Any]:
    resources = [(uid, DRAFT7.create_resource(schema)) for uid, schema in SCHEMAS.items()]
    return Registry().with_resources(resources)


@functools.cache
def _validator_class(complete: bool) -> type[Validator]:
    keywords = _keywords.COMPLETENESS if complete else _keywords.SANITY
    extended = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft7Validator, keywords)
    return cast("type[Validator]", extended)


@functools.cache
def validator_for(uid: str, complete: bool) -> Validator:
    """The (cached) validator of schema ``uid`` for one phase."""
    return _validator_class(complete)(SCHEMAS[uid], registry=_registry())


def holds(schema: Any, instance: Any) -> bool:
    """Whether ``instance`` satisfies a (sanity) subschema, such as a conditional's ``when``."""
    return bool(_validator_class(False)(schema, registry=_registry()).is_valid(instance))


def schema_errors(doc: Any, uid: str, *, complete: bool, root: str) -> list[str]:
    """Every problem with ``doc`` against schema ``uid``, one rendered line each."""
    errors = validator_for(uid, complete).iter_errors(doc)
    return sorted({render(error, root) for error in errors})


def render(error: jsonschema.ValidationError, root: str) -> str:
    """``<root>.path.to[2].field: message``."""
    path = root + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                          for p in error.absolute_path)
    return f"{path}: {message(error)}"


def message(error: jsonschema.ValidationError) -> str:
    """A short message for a built-in keyword; custom keywords carry their own."""
    kind = str(error.validator)
    if kind == "required":  # "'name' is a required property", worded like eventuallyRequired
        return re.sub(r"^'([^']*)'", r"\1", str(error.message))
    describe = _MESSAGES.get(kind)
    if describe is None:
        return str(error.message)
    return describe(error.validator_value, error.instance, error.schema)


def _additional(expected: Any, value: Any, schema: Any) -> str:
    known = set(schema.get("properties") or {})
    extra = sorted(set(value) - known, key=str)  # YAML allows keys that are not strings
    return (f"unknown field(s) {', '.join(map(repr, extra))} "
            f"(known: {', '.join(sorted(known))})")


def _type(expected: Any, value: Any, schema: Any) -> str:
    names = [expected] if isinstance(expected, str) else list(expected)
    wanted = [n for n in names if n != "null"] or names
    return f"must be {' or '.join(_TYPE_NAMES.get(n, n) for n in wanted)}, got {value!r}"


def _enum(expected: Any, value: Any, schema: Any) -> str:
    return f"must be one of {_listing(v for v in expected if v is not None)}, got {value!r}"


def _listing(values: Iterable[Any]) -> str:
    return ", ".join(str(v) for v in values)


_MESSAGES: dict[str, Callable[[Any, Any, Any], str]] = {
    "additionalProperties": _additional,
    "type": _type,
    "enum": _enum,
    "const": lambda expected, value, schema: f"must be {expected!r}, got {value!r}",
    "minimum": lambda expected, value, schema: f"must be >= {expected}, got {value!r}",
    "maximum": lambda expected, value, schema: f"must be <= {expected}, got {value!r}",
    "exclusiveMinimum": lambda expected, value, schema: f"must be > {expected}, got {value!r}",
    "minLength": lambda expected, value, schema: "must not be empty",
    "minItems": lambda expected, value, schema: f"must have at least {expected} item(s)",
    "pattern": lambda expected, value, schema: f"must match {expected}, got {value!r}",
}
