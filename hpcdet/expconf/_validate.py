"""JSON-Schema validation rendered as ``<config>.path[2].field: message`` lines."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jsonschema

_TYPE_NAMES = {"integer": "an integer", "string": "a string", "object": "a mapping",
               "array": "a list", "boolean": "true or false", "number": "a number",
               "null": "null"}


def schema_errors(doc: Any, schema: dict[str, Any], root: str) -> list[str]:
    """Every violation of ``schema`` by ``doc``, one line each."""
    validator = jsonschema.Draft7Validator(schema)
    return [_render(error, root) for error in _leaves(validator.iter_errors(doc))]


def _leaves(errors: Iterable[jsonschema.ValidationError]) -> list[jsonschema.ValidationError]:
    # For oneOf/anyOf, report the branch that got furthest instead of "is not valid under any".
    out: list[jsonschema.ValidationError] = []
    for error in errors:
        if error.validator in ("oneOf", "anyOf") and error.context:
            best = max(error.context, key=lambda e: (len(e.absolute_path), -len(e.context)))
            out.extend(_leaves([best]) if best.validator != "type" else [error])
        else:
            out.append(error)
    return out


def _render(error: jsonschema.ValidationError, root: str) -> str:
    path = root + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                          for p in error.absolute_path)
    return f"{path}: {_message(error)}"


def _message(error: jsonschema.ValidationError) -> str:
    kind = error.validator
    value: Any = error.instance
    expected: Any = error.validator_value
    schema: Any = error.schema
    if kind == "additionalProperties":
        known_fields = set(schema.get("properties", {}))
        extra = sorted(set(value) - known_fields)
        known = ", ".join(sorted(known_fields))
        return f"unknown field(s) {', '.join(map(repr, extra))} (known: {known})"
    if kind == "type":
        names = expected if isinstance(expected, list) else [expected]
        wanted = " or ".join(_TYPE_NAMES.get(str(n), str(n)) for n in names)
        return f"must be {wanted}, got {value!r}"
    if kind == "enum":
        return f"must be one of {', '.join(map(str, expected))}, got {value!r}"
    if kind == "required":
        return str(error.message).replace("is a required property", "is required")
    if kind in ("minimum", "exclusiveMinimum"):
        return f"must be {'>' if kind == 'exclusiveMinimum' else '>='} {expected}, got {value!r}"
    if kind == "maximum":
        return f"must be <= {expected}, got {value!r}"
    if kind == "oneOf":
        return f"has an invalid form: {value!r}"
    return str(error.message)
