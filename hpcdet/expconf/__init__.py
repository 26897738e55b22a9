"""Experiment configuration: validation with path-named errors, defaults, and warnings.

Errors are rendered ``<config>.path.to[2].field: message``, sorted, all at once::

    >>> validate({"resources": {"slots_per_trial": "two"}}, phase="sanity")
    ["<config>.resources.slots_per_trial: must be of type integer, got 'two'", ...]
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable, Mapping
from typing import Any

from hpcdet.expconf._schema import EXPERIMENT, NOT_YET_ACTED_ON
from hpcdet.expconf._validate import schema_errors

SUPPORTED_SEARCHERS = ("single",)
ROOT = "<config>"


def validate(doc: Any, kind: str = "experiment", phase: str = "sanity") -> list[str]:
    """Return every problem with ``doc`` as sorted ``<config>.path: message`` lines.

    ``phase="sanity"`` checks what the user wrote; ``phase="complete"`` additionally
    requires what the master must know to run it (after defaults are merged).
    """
    if kind != "experiment":
        raise ValueError(f"unknown config kind {kind!r}")
    errors = schema_errors(doc, EXPERIMENT, ROOT)
    if not errors and isinstance(doc, Mapping):
        errors += _semantic_errors(doc)
        if phase == "complete":
            errors += _completeness_errors(doc)
    return sorted(set(errors))


def _semantic_errors(doc: Mapping[str, Any]) -> list[str]:
    errors: list[str] = []
    name = (doc.get("searcher") or {}).get("name")
    if name is not None and name not in SUPPORTED_SEARCHERS:
        errors.append(f"{ROOT}.searcher.name: searcher {name!r} is not supported yet "
                      f"(supported: {', '.join(SUPPORTED_SEARCHERS)})")
    if ("workspace" in doc) != ("project" in doc):
        errors.append(f"{ROOT}: workspace and project must be set together, or neither")
    errors += _hyperparameter_errors(doc.get("hyperparameters") or {}, f"{ROOT}.hyperparameters")
    return errors


def _completeness_errors(doc: Mapping[str, Any]) -> list[str]:
    required = ("name", "entrypoint", "searcher", "checkpoint_storage")
    errors = [f"{ROOT}.{key}: is required" for key in required if not doc.get(key)]
    searcher = doc.get("searcher") or {}
    errors += [f"{ROOT}.searcher.{key}: is required" for key in ("metric", "max_length")
               if key not in searcher]
    return errors


_HP_TYPES = {"const": ("val",), "int": ("minval", "maxval"), "double": ("minval", "maxval"),
             "log": ("minval", "maxval", "base"), "categorical": ("vals",)}


def _hyperparameter_errors(hps: Mapping[str, Any], where: str) -> list[str]:
    errors: list[str] = []
    for name, spec in hps.items():
        path = f"{where}.{name}"
        if isinstance(spec, Mapping) and "type" in spec:
            errors += _one_hparam_errors(spec, path)
        elif isinstance(spec, Mapping):
            errors += _hyperparameter_errors(spec, path)  # a nested group
    return errors


def _one_hparam_errors(spec: Mapping[str, Any], path: str) -> list[str]:
    kind = spec["type"]
    if kind not in _HP_TYPES:
        return [f"{path}.type: must be one of {', '.join(_HP_TYPES)}, got {kind!r}"]
    errors = [f"{path}.{key}: is required for type {kind}" for key in _HP_TYPES[kind]
              if key not in spec]
    if not errors and kind in ("int", "double", "log") and not spec["minval"] < spec["maxval"]:
        errors.append(f"{path}: minval must be less than maxval")
    if kind == "categorical" and not errors and not spec["vals"]:
        errors.append(f"{path}.vals: must not be empty")
    return errors


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


def with_defaults(doc: Mapping[str, Any], *, checkpoint_storage: Mapping[str, Any],
                  seed: int | None = None) -> dict[str, Any]:
    """A copy of ``doc`` with the master's defaults filled in where the user left gaps."""
    out = copy.deepcopy(dict(doc))
    out.setdefault("name", "Experiment")
    out.setdefault("description", "")
    out.setdefault("labels", [])
    out.setdefault("hyperparameters", {})
    out.setdefault("max_restarts", 5)
    out.setdefault("checkpoint_storage", dict(checkpoint_storage))
    searcher = out.setdefault("searcher", {"name": "single"})
    searcher.setdefault("smaller_is_better", True)
    resources = out.setdefault("resources", {})
    resources.setdefault("slots_per_trial", 1)
    repro = out.setdefault("reproducibility", {})
    if repro.get("experiment_seed") is None:
        repro["experiment_seed"] = seed if seed is not None else random.randrange(2**31)
    return out


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
        raw = [item for key in ("cpu", "cuda", "rocm") for item in raw.get(key) or []]
    return dict(_split_assignment(item) for item in _as_strings(raw))


def _as_strings(items: Iterable[Any]) -> list[str]:
    return [str(item) for item in items]


def _split_assignment(item: str) -> tuple[str, str]:
    name, _, value = item.partition("=")
    return name, value


__all__ = ["environment_variables", "sample_hparams", "validate", "warnings_for",
           "with_defaults"]
