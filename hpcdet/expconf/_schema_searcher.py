"""Searcher schemas: a union on ``name`` of the searchers hpcdet runs.

Names Determined knows but hpcdet does not run get one error on ``searcher.name``; a
searcher without a name (a partial one, to be completed by a template) is checked field by
field, and ``name``/``metric`` are only required once everything is merged.
"""

from __future__ import annotations

from typing import Any

from hpcdet.expconf._schema_base import (
    Schema,
    always_fails,
    is_set,
    named,
    optional,
    optional_enum,
    optional_ref,
)

SUPPORTED_SEARCHERS = ("single", "random", "grid", "adaptive_asha")
# Known to Determined's schema (some end-of-life there too), not run by hpcdet.
UNSUPPORTED_SEARCHERS = ("async_halving", "custom", "adaptive", "adaptive_simple",
                         "sync_halving", "pbt")

_COMMON: Schema = {
    "metric": optional("string"),
    "smaller_is_better": optional("boolean", True),
    "source_trial_id": optional("integer"),
    "source_checkpoint_uuid": optional("string"),
    "max_length": optional_ref("searcher-length", None),
}
_CONCURRENCY: Schema = {"max_concurrent_trials": optional("integer", 16, minimum=0)}
_MAX_TRIALS: Schema = {"max_trials": optional("integer", minimum=1)}
_ASHA: Schema = {
    "time_metric": optional("string"),
    "max_time": optional("integer", minimum=1),
    "mode": optional_enum(["aggressive", "standard", "conservative"], "standard"),
    "divisor": optional("number", 4, exclusiveMinimum=1),
    "max_rungs": optional("integer", 5, minimum=1),
    "bracket_rungs": optional("array", [], items={"type": "integer", "minimum": 1}),
    "stop_once": optional("boolean", False),  # deprecated: ASHA always stops early
}


def _variant(name: str, title: str, fields: Schema, **extra: Any) -> Schema:
    return named(f"searcher-{name.replace('_', '-')}", title, {
        "type": "object", "additionalProperties": False, "required": ["name"],
        "properties": {"name": {"const": name}, **_COMMON, **fields}, **extra})


SINGLE = _variant("single", "SingleConfig", {})
RANDOM = _variant("random", "RandomConfig", {**_MAX_TRIALS, **_CONCURRENCY},
                  eventuallyRequired=["max_trials"])
GRID = _variant("grid", "GridConfig", _CONCURRENCY)
ADAPTIVE_ASHA = _variant(
    "adaptive_asha", "AdaptiveASHAConfig", {**_MAX_TRIALS, **_CONCURRENCY, **_ASHA},
    eventuallyRequired=["max_trials"],
    # Stopping-based ASHA counts time in time_metric up to max_time; a legacy max_length
    # stands in for both (its unit is the time metric, its value the maximum).
    eventually={"conditional": {"unless": is_set("max_length"),
                                "enforce": {"eventuallyRequired": ["time_metric", "max_time"]}}},
)
_VARIANTS = {"single": SINGLE, "random": RANDOM, "grid": GRID, "adaptive_asha": ADAPTIVE_ASHA}


def _unsupported(name: str) -> Schema:
    message = (f"searcher {name!r} is not supported by hpcdet (supported: "
               f"{', '.join(SUPPORTED_SEARCHERS)})")
    return {"unionKey": f"const:name={name}", "properties": {"name": always_fails(message)}}


def _quoted_choice(names: tuple[str, ...]) -> str:
    quoted = [f"'{n}'" for n in names]
    return ", ".join(quoted[:-1]) + f", or {quoted[-1]}"


_UNION: Schema = {"union": {
    "defaultMessage": 'is not an object where object["name"] is one of '
                      + _quoted_choice(SUPPORTED_SEARCHERS),
    "items": [{"unionKey": f"const:name={name}", "$ref": schema["$id"]}
              for name, schema in _VARIANTS.items()]
    + [_unsupported(name) for name in UNSUPPORTED_SEARCHERS],
}}

# Fields of Determined's other searchers, accepted in a partial (nameless) searcher.
_LEGACY_FIELDS = ("num_rungs", "budget", "train_stragglers", "population_size", "num_rounds",
                  "length_per_round", "replace_function", "explore_function", "unit")
_PARTIAL: Schema = {
    "additionalProperties": False,
    "properties": {"name": True, **_COMMON, **_MAX_TRIALS, **_CONCURRENCY, **_ASHA,
                   **{field: True for field in _LEGACY_FIELDS}},
}

SEARCHER = named("searcher", "SearcherConfig", {
    "type": "object",
    "eventuallyRequired": ["name", "metric"],
    "allOf": [{"conditional": {"when": is_set("name"), "enforce": _UNION}},
              {"conditional": {"unless": is_set("name"), "enforce": _PARTIAL}}],
})

SCHEMAS = [SEARCHER, *_VARIANTS.values()]
