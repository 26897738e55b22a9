"""Filling in defaults by walking the schema, as Determined's ``with_defaults`` does.

Every optional property a schema names ends up present: the value given, else the
schema's ``default`` (None where it has none). Unions follow the member the value selects
(``searcher.name``, ``checkpoint_storage.type``, ...); objects and lists are walked
recursively. Maps keyed by the user (``hyperparameters``, ``data``, ``environment.ports``)
are copied as given.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

from hpcdet.expconf._keywords import union_key_matches
from hpcdet.expconf._schema import SCHEMAS
from hpcdet.expconf._validate import holds


def fill_defaults(value: Any, uid: str, *, defaults: bool = True) -> Any:
    """``value`` with the defaults of schema ``uid`` filled in (a new object).

    ``defaults=False`` only names the fields: each unset one is None, as in a merged config
    (Determined's merge result is a struct whose unset fields are null).
    """
    return _fill(value, SCHEMAS[uid], defaults)


def _fill(value: Any, schema: Any, defaults: bool) -> Any:
    if isinstance(value, Mapping):
        return _fill_object(value, schema, defaults)
    if isinstance(value, list):
        items = _items_schema(value, schema)
        return [_fill(item, items, defaults) for item in value] if items is not None \
            else copy.deepcopy(value)
    return copy.deepcopy(value)


def _fill_object(value: Mapping[str, Any], schema: Any, defaults: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, sub in _properties(value, schema):
        has_default = isinstance(sub, Mapping) and "default" in sub
        if key not in value and not has_default:
            continue  # a legacy alias or a required field: present only when given
        given = value.get(key)
        if given is None and has_default and defaults:
            given = copy.deepcopy(sub["default"])
        out[key] = _fill(given, sub, defaults)
    for key, given in value.items():
        out.setdefault(key, copy.deepcopy(given))
    return out


def _properties(value: Any, schema: Any) -> Iterator[tuple[str, Any]]:
    """The (name, schema) of each property the schema defines for this value."""
    for part in _active_parts(value, schema):
        yield from (part.get("properties") or {}).items()


def _items_schema(value: Any, schema: Any) -> Any:
    for part in _active_parts(value, schema):
        if "items" in part:
            return part["items"]
    return None


def _active_parts(value: Any, schema: Any) -> Iterator[Mapping[str, Any]]:
    """The schema and every subschema that applies to ``value``: refs, allOf, the union
    member ``value`` selects, and conditionals whose condition holds."""
    if not isinstance(schema, Mapping):
        return
    yield schema
    for key in ("$ref", "optionalRef"):
        if key in schema:
            yield from _active_parts(value, SCHEMAS[schema[key]])
    for member in schema.get("allOf") or []:
        yield from _active_parts(value, member)
    if "union" in schema:
        yield from _active_parts(value, _selected_member(value, schema["union"]["items"]))
    if "conditional" in schema and _condition_holds(value, schema["conditional"]):
        yield from _active_parts(value, schema["conditional"]["enforce"])


def _selected_member(value: Any, members: list[Mapping[str, Any]]) -> Any:
    return next((m for m in members if union_key_matches(m.get("unionKey"), value)), None)


def _condition_holds(value: Any, conditional: Mapping[str, Any]) -> bool:
    if "when" in conditional:
        return holds(conditional["when"], value)
    return not holds(conditional["unless"], value)
