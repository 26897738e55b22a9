"""Merging a config with a template (or with cluster defaults), as Determined does.

Values from the config win; ``None`` counts as absent. Mappings merge key by key;
lists concatenate, template entries first, so that later (config) entries win where a
consumer reads them in order (``environment_variables``, ``sbatch_args``). Exceptions:

* ``bind_mounts`` and ``resources.devices``: the config's entries, then the template's
  entries whose ``container_path`` the config does not already use (Determined's order).
* ``entrypoint``, lengths and every single hyperparameter are atomic: the config's value
  wins whole. Nested hyperparameter groups (mappings without ``type``) merge recursively;
  a hyperparameter the config sets to null is the constant null.
* Unions (``searcher`` by ``name``, ``checkpoint_storage`` by ``type``): when both sides
  name different variants, only the fields common to every variant come from the template.
* ``environment.image``/``environment_variables`` may be a single value or a per-device
  map ``{cpu, cuda, rocm}``; a single value merged with a map is spread over the devices.
* ``log_policies``: every policy of the config, then the template's policies whose name
  the config does not use (unnamed legacy policies: whose action and pattern it does not).

The public :func:`hpcdet.expconf.merge` applies Determined's shims to both sides first.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

DEVICE_KEYS = ("cpu", "cuda", "rocm")

# Fields shared by every variant of a union: the only ones a template of another variant
# contributes (Determined's UnionMerge merges the non-member fields unconditionally).
SEARCHER_COMMON = frozenset({"metric", "smaller_is_better", "source_trial_id",
                             "source_checkpoint_uuid"})
STORAGE_COMMON = frozenset({"save_experiment_best", "save_trial_best", "save_trial_latest"})

Merger = Callable[[Any, Any], Any]


def merge_value(config: Any, template: Any) -> Any:
    """The generic rule: mappings merge, lists concatenate, otherwise the config wins."""
    if config is None:
        return copy.deepcopy(template)
    if template is None:
        return copy.deepcopy(config)
    if isinstance(config, Mapping) and isinstance(template, Mapping):
        return merge_mappings(config, template, {})
    if isinstance(config, list) and isinstance(template, list):
        return copy.deepcopy(template) + copy.deepcopy(config)
    return copy.deepcopy(config)


def merge_mappings(config: Mapping[str, Any], template: Mapping[str, Any],
                   special: Mapping[str, Merger]) -> dict[str, Any]:
    """Key-by-key merge; ``special`` names the merger for particular keys."""
    out: dict[str, Any] = {}
    for key in [*config, *(k for k in template if k not in config)]:
        merger = special.get(key, merge_value)
        out[key] = merger(config.get(key), template.get(key))
    return out


def _nullable(merger: Merger) -> Merger:
    """Wrap a merger for non-null values so that ``None`` on either side means absent."""
    def wrapped(config: Any, template: Any) -> Any:
        if config is None or template is None:
            return merge_value(config, template)
        return merger(config, template)
    return wrapped


def _atomic(config: Any, template: Any) -> Any:
    return copy.deepcopy(template if config is None else config)


@_nullable
def merge_by_container_path(config: Any, template: Any) -> Any:
    """``bind_mounts``/``devices``: config entries, then template entries on unused paths."""
    if not isinstance(config, list) or not isinstance(template, list):
        return merge_value(config, template)
    used = {_container_path(entry) for entry in config}
    extra = [entry for entry in template if _container_path(entry) not in used]
    return copy.deepcopy(config) + copy.deepcopy(extra)


def _container_path(entry: Any) -> Any:
    if isinstance(entry, Mapping):
        return entry.get("container_path")
    if isinstance(entry, str):  # the "host:container[:mode]" device shorthand
        parts = entry.split(":")
        return parts[1] if len(parts) > 1 else parts[0]
    return None


@_nullable
def merge_labels(config: Any, template: Any) -> Any:
    """Labels are a set: concatenate, template first, without repeats."""
    merged = merge_value(config, template)
    if not isinstance(merged, list):
        return merged
    return list(dict.fromkeys(merged)) if all(isinstance(x, str) for x in merged) else merged


@_nullable
def merge_hyperparameters(config: Any, template: Any) -> Any:
    """Hyperparameter maps: keys merge; a key in both merges only if both are nested groups.

    Here a null value is a constant (Determined's implicit ``const``), not "unset": a key
    the config names, even as null, keeps the config's value.
    """
    if not isinstance(config, Mapping) or not isinstance(template, Mapping):
        return copy.deepcopy(config)
    out = copy.deepcopy(dict(config))
    for key, value in template.items():
        out[key] = merge_one_hyperparameter(config[key], value) if key in config \
            else copy.deepcopy(value)
    return out


def merge_one_hyperparameter(config: Any, template: Any) -> Any:
    """One hyperparameter: the config's, unless both sides are nested groups."""
    if _is_group(config) and _is_group(template):
        return merge_hyperparameters(config, template)
    return copy.deepcopy(config)


def _is_group(value: Any) -> bool:
    return isinstance(value, Mapping) and "type" not in value


def _union_merger(tag: str, common: frozenset[str],
                  special: Mapping[str, Merger]) -> Merger:
    @_nullable
    def merge_union(config: Any, template: Any) -> Any:
        if not isinstance(config, Mapping) or not isinstance(template, Mapping):
            return copy.deepcopy(config)
        config_tag, template_tag = config.get(tag), template.get(tag)
        if config_tag is not None and template_tag is not None and config_tag != template_tag:
            template = {k: v for k, v in template.items() if k in common}
        return merge_mappings(config, template, special)
    return merge_union


@_nullable
def merge_per_device(config: Any, template: Any) -> Any:
    """``image``/``environment_variables``: a single value spreads over a per-device map."""
    if isinstance(config, Mapping) != isinstance(template, Mapping):
        config, template = _per_device(config), _per_device(template)
    return merge_value(config, template)


def _per_device(value: Any) -> Any:
    if isinstance(value, Mapping):
        return value
    return {device: copy.deepcopy(value) for device in DEVICE_KEYS}


@_nullable
def merge_log_policies(config: Any, template: Any) -> Any:
    """Determined's union of policies: the config's, then the template's new ones."""
    if not isinstance(config, list) or not isinstance(template, list):
        return merge_value(config, template)
    out = copy.deepcopy(config)
    seen = {_policy_key(policy) for policy in config}
    for policy in template:
        key = _policy_key(policy)
        if key not in seen:
            out.append(copy.deepcopy(policy))
            seen.add(key)
    return out


def _policy_key(policy: Any) -> tuple[str, str]:
    """A named policy is known by its name; a legacy (unnamed) one by action and pattern."""
    if not isinstance(policy, Mapping):
        return ("value", repr(policy))
    if policy.get("name") is not None:
        return ("name", str(policy["name"]))
    return ("legacy", f"{policy.get('action')}:{policy.get('pattern')}")


def _mapping_merger(special: Mapping[str, Merger]) -> Merger:
    @_nullable
    def merge_section(config: Any, template: Any) -> Any:
        if isinstance(config, Mapping) and isinstance(template, Mapping):
            return merge_mappings(config, template, special)
        return merge_value(config, template)
    return merge_section


merge_searcher = _union_merger("name", SEARCHER_COMMON,
                               {"bracket_rungs": _atomic, "max_length": _atomic})
merge_checkpoint_storage = _union_merger("type", STORAGE_COMMON, {})
merge_resources = _mapping_merger({"devices": merge_by_container_path})
merge_environment = _mapping_merger({"image": merge_per_device,
                                     "environment_variables": merge_per_device})

EXPERIMENT_MERGERS: dict[str, Merger] = {
    "entrypoint": _atomic,
    "min_validation_period": _atomic,  # lengths: {batches: 1} and {epochs: 2} never mix
    "min_checkpoint_period": _atomic,
    "labels": merge_labels,
    "hyperparameters": merge_hyperparameters,
    "searcher": merge_searcher,
    "checkpoint_storage": merge_checkpoint_storage,
    "resources": merge_resources,
    "environment": merge_environment,
    "bind_mounts": merge_by_container_path,
    "log_policies": merge_log_policies,
}
merge_experiment = _mapping_merger(EXPERIMENT_MERGERS)

# The merger of each config kind that is not merged by the generic rule (merge_value).
MERGERS: dict[str, Merger] = {
    "experiment": merge_experiment,
    "searcher": merge_searcher,
    "hyperparameters": merge_hyperparameters,
    "hyperparameter": merge_one_hyperparameter,
    "resources": merge_resources,
    "checkpoint_storage": merge_checkpoint_storage,
    "bind_mounts": merge_by_container_path,
    "devices": merge_by_container_path,
    "environment": merge_environment,
    "environment_image": merge_per_device,
    "environment_variables": merge_per_device,
    "log_policies": merge_log_policies,
    "length": _atomic,
    "searcher_length": _atomic,
    "check_positive_length": _atomic,
    **{f"searcher_{name}": merge_searcher for name in (
        "single", "random", "grid", "adaptive_asha", "async_halving", "custom", "adaptive",
        "adaptive_simple", "sync_halving")},
    **{name: merge_checkpoint_storage for name in ("shared_fs", "directory", "s3", "gcs",
                                                   "azure")},
    **{f"hyperparameter_{kind}": _atomic for kind in ("int", "double", "log", "const",
                                                      "categorical")},
}


def merger_for(kind: str) -> Merger:
    """The merger of config kind ``kind``."""
    return MERGERS.get(kind, merge_value)
