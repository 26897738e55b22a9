"""Hyperparameter schemas: typed ranges, constants, nested groups and lists.

A hyperparameter is ``{type: int|double|log|const|categorical, ...}``, any value without a
``type`` (an implicit constant), a mapping of hyperparameters (a nested group) or a list of
hyperparameters. ``check-grid-hyperparameter`` is applied when the grid searcher is in use.
"""

from __future__ import annotations

from hpcdet.expconf._schema_base import Schema, message_check, named, optional, ref

HP_TYPES = ("int", "double", "log", "const", "categorical")
_RANGE_TYPES = ("int", "double", "log")


def _range(kind: str, title: str, number: str, **extra: Schema) -> Schema:
    required = ["type", "minval", "maxval", *extra]
    return named(f"hyperparameter-{kind}", title, {
        "type": "object", "additionalProperties": False, "required": required,
        "properties": {"type": {"const": kind}, "minval": {"type": number},
                       "maxval": {"type": number}, **extra,
                       "count": optional("integer", minimum=1)},
        "compareProperties": {"type": "a<b", "a": "minval", "b": "maxval"},
    })


INT = _range("int", "IntHyperparameter", "integer")
DOUBLE = _range("double", "DoubleHyperparameter", "number")
LOG = _range("log", "LogHyperparameter", "number",
             base={"type": "number", "exclusiveMinimum": 0})

CONST = named("hyperparameter-const", "ConstHyperparameter", {
    "type": "object", "additionalProperties": False, "required": ["type", "val"],
    "properties": {"type": {"const": "const"}, "val": True},
})

CATEGORICAL = named("hyperparameter-categorical", "CategoricalHyperparameter", {
    "type": "object", "additionalProperties": False, "required": ["type", "vals"],
    "properties": {"type": {"const": "categorical"},
                   "vals": {"type": "array", "minItems": 1}},
})

_BAD_TYPE = ('if a hyperparameter object\'s ["type"] is set, it must be one of "int", '
             '"double", "log", "const", or "categorical"')

HYPERPARAMETER = named("hyperparameter", "Hyperparameter", {"union": {"items": [
    *({"unionKey": f"const:type={kind}", **ref(f"hyperparameter-{kind}")}
      for kind in HP_TYPES),
    {"unionKey": "type:array", "type": "array", "items": ref("hyperparameter")},
    {"unionKey": "always", "type": "object",
     **message_check(_BAD_TYPE, {"properties": {"type": False}}),
     "additionalProperties": ref("hyperparameter")},
    {"unionKey": "never", "not": {"type": ["object", "array"]}},
]}})

HYPERPARAMETERS = named("hyperparameters", "Hyperparameters", {
    "type": "object", "additionalProperties": ref("hyperparameter")})

_NEEDS_COUNT = {"conditional": {
    "unless": {"not": {"properties": {"type": {"enum": list(_RANGE_TYPES)}}}},
    "enforce": {"not": {"properties": {"count": {"type": "null"}}}},
}}

GRID_CHECK = named("check-grid-hyperparameter", "CheckGridHyperparameter", {"union": {"items": [
    {"unionKey": "type:array", "type": "array", "items": ref("check-grid-hyperparameter")},
    {"unionKey": "not:hasattr:type", "type": "object", "properties": {"type": False},
     "additionalProperties": ref("check-grid-hyperparameter")},
    {"unionKey": "never", "not": {"type": ["object", "array"]}},
    {"unionKey": "hasattr:type", "type": "object", "required": ["type"],
     "properties": {"type": {"type": "string"}},
     **message_check("grid search is in use but count was not provided", _NEEDS_COUNT)},
]}})

SCHEMAS = [INT, DOUBLE, LOG, CONST, CATEGORICAL, HYPERPARAMETER, HYPERPARAMETERS, GRID_CHECK]
