"""Experiment configuration, compatible with Determined's v0 schema.

The public API the master and the CLI use:

* :func:`validate` -> every problem as sorted ``<config>.path.to[2].field: message`` lines,
  in two phases as Determined does: ``sanity`` (what the user wrote, at submission) and
  ``complete`` (after the master's defaults and a template are merged)::

      >>> validate({"resources": {"slots_per_trial": "two"}})
      ["<config>.resources.slots_per_trial: must be an integer, got 'two'"]

* :func:`with_defaults` -> a plain dict with every field present (unset ones None);
* :func:`merge` -> a config merged over a template;
* :func:`warnings_for` -> the fields hpcdet accepts but does not act on yet.

``kind`` selects the whole experiment or one sub-document (:data:`KINDS`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

# First of this package's modules: it imports jsonschema before the others do (see there).
from hpcdet.expconf import _jsonschema_import  # noqa: F401
from hpcdet.expconf._defaults import fill_defaults
from hpcdet.expconf._merge import merge_log_policies, merger_for
from hpcdet.expconf._reruns import constants, single_trial_config, without_nulls
from hpcdet.expconf._schema import KINDS, NOT_YET_ACTED_ON
from hpcdet.expconf._schema_logs import DEFAULT_LOG_POLICIES
from hpcdet.expconf._schema_parts import LENGTH_UNITS
from hpcdet.expconf._schema_searcher import SUPPORTED_SEARCHERS, UNSUPPORTED_SEARCHERS
from hpcdet.expconf._schema_storage import SUPPORTED_STORAGE, UNSUPPORTED_STORAGE
from hpcdet.expconf._shims import shim
from hpcdet.expconf._validate import schema_errors

ROOT = "<config>"
PHASES = ("sanity", "complete")


def validate(doc: Any, kind: str = "experiment", phase: str = "sanity", *,
             root: str = ROOT) -> list[str]:
    """Every problem with ``doc`` as sorted, deduplicated ``<root>.path: message`` lines.

    ``phase="sanity"`` checks what was written; ``phase="complete"`` also requires what
    must be known to run (Determined's ``eventuallyRequired``), and is meant for the
    config after :func:`merge` and :func:`with_defaults`. ``root`` names the document in
    the lines (``<template>`` for a template).
    """
    if phase not in PHASES:
        raise ValueError(f"unknown validation phase {phase!r} (one of {', '.join(PHASES)})")
    return schema_errors(doc, _schema_of(kind), complete=phase == "complete", root=root)


def with_defaults(doc: Any, kind: str = "experiment") -> Any:
    """A copy of ``doc`` with Determined's shims applied and its defaults filled in.

    Every field is present; unset fields without a default are None. The shims are
    Determined's (per-device ``image``/``environment_variables`` maps, device strings as
    objects, implicit constants as ``{type: const, val}``, legacy log actions); Determined's
    default log policies (``CUDA OOM``, ``ECC Error``) are added unless the config names
    them. It never invents what the master decides (``name``,
    ``reproducibility.experiment_seed``, ``checkpoint_storage``) nor a container image.
    """
    uid = _schema_of(kind)
    filled = shim(fill_defaults(shim(doc, kind), uid), kind)
    if kind == "log_policies":
        return _with_default_policies(filled)
    if kind == "experiment" and isinstance(filled, dict):
        filled["log_policies"] = _with_default_policies(filled.get("log_policies"))
    return filled


def _with_default_policies(policies: Any) -> Any:
    defaults = fill_defaults(list(DEFAULT_LOG_POLICIES), KINDS["log_policies"], defaults=False)
    return merge_log_policies(policies if policies is not None else [], defaults)


def merge(doc: Any, template: Any, kind: str = "experiment") -> Any:
    """``doc`` merged over ``template``, as Determined merges templates (neither is changed).

    Both sides are shimmed first (see :func:`with_defaults`), and the result names every
    field of its schema (None where neither side sets it), like Determined's merged struct.
    Values from ``doc`` win; mappings merge recursively; lists concatenate, template
    first, except ``bind_mounts`` and ``resources.devices``, where a template entry whose
    ``container_path`` ``doc`` already uses is dropped, and ``log_policies``, where a
    template policy whose name ``doc`` uses is dropped. Unions (``searcher`` by name,
    ``checkpoint_storage`` by type) take only the common fields from a template of another
    variant; single hyperparameters and lengths are never merged field by field.
    """
    uid = _schema_of(kind)
    merged = merger_for(kind)(shim(doc, kind), shim(template, kind))
    return fill_defaults(merged, uid, defaults=False)


def _schema_of(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown config kind {kind!r} (one of {', '.join(KINDS)})")
    return KINDS[kind]


def warnings_for(doc: Mapping[str, Any]) -> list[str]:
    """Fields that are accepted but not acted on by this version, as warning lines."""
    return [f"{ROOT}.{path}: accepted but not acted on by this version of hpcdet"
            for path in NOT_YET_ACTED_ON if _has_path(doc, path)]


def _has_path(doc: Mapping[str, Any], dotted: str) -> bool:
    node: Any = doc
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or node.get(part) is None:
            return False
        node = node[part]
    return True


def length_value(length: Any) -> tuple[str, int]:
    """A length as ``(unit, n)``: an int means batches; ``{epochs: 2}`` is ``("epochs", 2)``."""
    if isinstance(length, int) and not isinstance(length, bool):
        return "batches", length
    if isinstance(length, Mapping) and len(length) == 1:
        ((unit, n),) = length.items()
        if unit in LENGTH_UNITS and isinstance(n, int) and not isinstance(n, bool):
            return str(unit), n
    raise ValueError(f"not a length: {length!r}")


def sample_hparams(hps: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    """One sample of a hyperparameter space (const values as given; ranges drawn from rng)."""
    return {name: _sample_one(spec, rng) for name, spec in hps.items()}


def _sample_one(spec: Any, rng: random.Random) -> Any:
    if not isinstance(spec, Mapping):
        return spec
    kind = spec.get("type")
    if kind is None:
        return sample_hparams(spec, rng)
    if kind == "const":
        return spec["val"]
    if kind == "int":
        return rng.randint(spec["minval"], spec["maxval"])
    if kind == "double":
        return rng.uniform(spec["minval"], spec["maxval"])
    if kind == "log":
        return float(spec["base"]) ** rng.uniform(spec["minval"], spec["maxval"])
    return rng.choice(list(spec["vals"]))


def environment_variables(env: Mapping[str, Any] | None) -> dict[str, str]:
    """``environment.environment_variables`` as a dict (list of ``K=V`` or a per-slot map)."""
    raw = (env or {}).get("environment_variables") or []
    if isinstance(raw, Mapping):  # {cpu: [...], cuda: [...]}: take the union, cpu first
        raw = [item for key in ("cpu", "gpu", "cuda", "rocm") for item in raw.get(key) or []]
    return dict(_split_assignment(item) for item in _as_strings(raw))


def _as_strings(items: Iterable[Any]) -> list[str]:
    return [str(item) for item in items]


def _split_assignment(item: str) -> tuple[str, str]:
    name, _, value = item.partition("=")
    return name, value


__all__ = ["KINDS", "NOT_YET_ACTED_ON", "SUPPORTED_SEARCHERS", "SUPPORTED_STORAGE",
           "UNSUPPORTED_SEARCHERS", "UNSUPPORTED_STORAGE", "constants", "environment_variables",
           "length_value", "merge", "sample_hparams", "single_trial_config", "validate",
           "warnings_for", "with_defaults", "without_nulls"]
