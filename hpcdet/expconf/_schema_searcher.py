"""Searcher schemas: a union on ``name`` of every searcher Determined's schema names.

The searchers hpcdet runs (``single``, ``random``, ``grid``, ``adaptive_asha``) and
Determined's legacy ones (``async_halving``, ``custom``, ``adaptive``, ``adaptive_simple``,
``sync_halving``) are all valid as written (sanity), as in Determined 0.38, which parses
them. Once the config is complete (at submission), the legacy ones are refused as
Determined 0.38's ``AssertCurrent`` refuses them ("the 'custom' searcher has been removed
and is not valid for new experiments"); ``async_halving``, which Determined still runs, is
refused with what to write instead (``adaptive_asha`` with ``bracket_rungs: [num_rungs]`` is
the same single-bracket search). A searcher without a name (a partial one, to be completed by
a template) is checked field by field; ``name``/``metric`` are required once merged.
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
# Known to Determined's schema, valid as written, refused at submission.
UNSUPPORTED_SEARCHERS = ("async_halving", "custom", "adaptive", "adaptive_simple",
                         "sync_halving")
# Removed in Determined (0.36 deprecated custom; 0.38 removed it): Determined's own message.
REMOVED_SEARCHERS = ("custom", "adaptive", "adaptive_simple", "sync_halving")

_COMMON: Schema = {
    "metric": optional("string"),
    "smaller_is_better": optional("boolean", True),
    "source_trial_id": optional("integer"),
    "source_checkpoint_uuid": optional("string"),
}
_MAX_LENGTH: Schema = {"max_length": optional_ref("searcher-length", None)}
_LEGACY_MAX_LENGTH: Schema = {"max_length": optional_ref("check-positive-length")}
_CONCURRENCY: Schema = {"max_concurrent_trials": optional("integer", 16, minimum=0)}
_MAX_TRIALS: Schema = {"max_trials": optional("integer", minimum=1)}
_MODE: Schema = {"mode": optional_enum(["aggressive", "standard", "conservative"], "standard")}
_ASHA: Schema = {
    "time_metric": optional("string"),
    "max_time": optional("integer", minimum=1),
    **_MODE,
    "divisor": optional("number", 4, exclusiveMinimum=1),
    "max_rungs": optional("integer", 5, minimum=1),
    "bracket_rungs": optional("array", [], items={"type": "integer", "minimum": 1}),
    "stop_once": optional("boolean"),  # deprecated: ASHA always stops early
}


def _variant(name: str, title: str, fields: Schema, **extra: Any) -> Schema:
    return named(f"searcher-{name.replace('_', '-')}", title, {
        "type": "object", "additionalProperties": False, "required": ["name"],
        "properties": {"name": {"const": name}, **fields, **_COMMON}, **extra})


def _removed(name: str) -> Schema:
    """Refused once complete, with Determined 0.38's message."""
    return {"properties": {"name": always_fails(
        f"the '{name}' searcher has been removed and is not valid for new experiments")}}


SINGLE = _variant("single", "SingleConfig", _MAX_LENGTH)
RANDOM = _variant("random", "RandomConfig", {**_MAX_TRIALS, **_CONCURRENCY, **_MAX_LENGTH},
                  eventuallyRequired=["max_trials"])
GRID = _variant("grid", "GridConfig", {**_CONCURRENCY, **_MAX_LENGTH})
ADAPTIVE_ASHA = _variant(
    "adaptive_asha", "AdaptiveASHAConfig",
    {**_MAX_TRIALS, **_CONCURRENCY, **_ASHA, **_MAX_LENGTH},
    eventuallyRequired=["max_trials"],
    # Stopping-based ASHA counts time in time_metric up to max_time; a legacy max_length
    # stands in for both (its unit is the time metric, its value the maximum).
    eventually={"conditional": {"unless": is_set("max_length"),
                                "enforce": {"eventuallyRequired": ["time_metric", "max_time"]}}},
)
ASYNC_HALVING = _variant(
    "async_halving", "AsyncHalvingConfig",
    {"num_rungs": optional("integer", minimum=1), **_MAX_TRIALS,
     "divisor": optional("number", 4), **_CONCURRENCY, "stop_once": optional("boolean"),
     "time_metric": optional("string"), "max_time": optional("integer"),
     **_LEGACY_MAX_LENGTH},
    eventuallyRequired=["num_rungs", "max_trials"],
    eventually={"properties": {"name": always_fails(
        "the 'async_halving' searcher is not run by hpcdet: adaptive_asha with bracket_rungs: "
        "[num_rungs] is the same single-bracket search")}},
)
CUSTOM = named("searcher-custom", "CustomConfig", {
    "type": "object", "required": ["name"],  # Determined allows any other field
    "properties": {"name": {"const": "custom"}, "metric": optional("string"),
                   "smaller_is_better": optional("boolean", True),
                   "unit": optional_enum(["batches", "records", "epochs"])},
    "eventually": _removed("custom"),
})
ADAPTIVE = _variant(
    "adaptive", "AdaptiveConfig",
    {"budget": optional_ref("length"), "bracket_rungs": optional("array", []), **_MODE,
     "divisor": optional("number", 4), "max_rungs": optional("integer", 5, minimum=1),
     **_LEGACY_MAX_LENGTH, "train_stragglers": optional("boolean", True)},
    eventuallyRequired=["budget"], eventually=_removed("adaptive"))
ADAPTIVE_SIMPLE = _variant(
    "adaptive_simple", "AdaptiveSimpleConfig",
    {**_MAX_TRIALS, **_MODE, "divisor": optional("number", 4),
     "max_rungs": optional("integer", 5, minimum=1), **_LEGACY_MAX_LENGTH},
    eventuallyRequired=["max_trials"], eventually=_removed("adaptive_simple"))
SYNC_HALVING = _variant(
    "sync_halving", "SyncHalvingConfig",
    {"budget": optional_ref("check-positive-length"),
     "num_rungs": optional("integer", minimum=1), **_LEGACY_MAX_LENGTH,
     "divisor": optional("number", 4), "train_stragglers": optional("boolean", True)},
    eventuallyRequired=["num_rungs", "budget"], eventually=_removed("sync_halving"))

_VARIANTS = {"single": SINGLE, "random": RANDOM, "grid": GRID, "adaptive_asha": ADAPTIVE_ASHA,
             "async_halving": ASYNC_HALVING, "custom": CUSTOM, "adaptive": ADAPTIVE,
             "adaptive_simple": ADAPTIVE_SIMPLE, "sync_halving": SYNC_HALVING}

_UNION: Schema = {"union": {
    # Determined's wording (it names custom, which it still parses).
    "defaultMessage": 'is not an object where object["name"] is one of \'single\', '
                      "'random', 'grid', 'custom', or 'adaptive_asha'",
    "items": [{"unionKey": f"const:name={name}", "$ref": schema["$id"]}
              for name, schema in _VARIANTS.items()],
}}

# Every field of every searcher, accepted in a partial (nameless) searcher.
_ANY_FIELD = ("bracket_rungs", "divisor", "max_concurrent_trials", "max_length", "max_rungs",
              "max_time", "time_metric", "max_trials", "mode", "name", "num_rungs",
              "stop_once", "budget", "train_stragglers", "unit")
_PARTIAL: Schema = {
    "additionalProperties": False,
    "properties": {**{field: True for field in _ANY_FIELD}, **_COMMON},
}

SEARCHER = named("searcher", "SearcherConfig", {
    "type": "object",
    "eventuallyRequired": ["name", "metric"],
    "allOf": [{"conditional": {"when": is_set("name"), "enforce": _UNION}},
              {"conditional": {"unless": is_set("name"), "enforce": _PARTIAL}}],
})

SCHEMAS = [SEARCHER, *_VARIANTS.values()]
