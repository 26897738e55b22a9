"""Determined's shims: the rewrites its Go structs apply when they read a config.

Determined validates what the user wrote, then reads it into structs that normalise legacy
and short forms; ``with_defaults`` and ``merge`` work on (and return) the normalised form,
so these apply the same rewrites first:

* ``environment.image``: a string is that image for every device (``{cpu, cuda, rocm}``); in
  a map the legacy ``gpu`` key stands for ``cuda`` when ``cuda`` is not set.
* ``environment.environment_variables``: a list is that list for every device; in a map an
  absent device is ``[]`` and ``gpu`` stands for ``cuda`` when ``cuda`` is not set.
* ``resources.devices``: ``"host:container[:mode]"`` is ``{host_path, container_path, mode}``.
* hyperparameters: a value that is not a mapping is ``{type: const, val: value}``; a mapping
  without ``type`` is a nested group, shimmed member by member.
* log policies: the legacy ``action: {type: cancel_retries}`` is ``action: cancel_retries``.

Anything not of the expected shape is left as it is (validation reports it).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

DEVICE_TYPES = ("cpu", "cuda", "rocm")
_LEGACY_CUDA = "gpu"

Shim = Callable[[Any], Any]


def shim_image(image: Any) -> Any:
    """An image as a per-device map."""
    if isinstance(image, str):
        return {device: image for device in DEVICE_TYPES}
    if isinstance(image, Mapping):
        out = {device: image.get(device) for device in DEVICE_TYPES}
        if out["cuda"] is None:
            out["cuda"] = image.get(_LEGACY_CUDA)
        return out
    return copy.deepcopy(image)


def shim_environment_variables(variables: Any) -> Any:
    """Environment variables as a per-device map of lists."""
    if isinstance(variables, list):
        return {device: list(variables) for device in DEVICE_TYPES}
    if isinstance(variables, Mapping):
        out = {device: list(variables.get(device) or []) for device in DEVICE_TYPES}
        if variables.get("cuda") is None:
            out["cuda"] = list(variables.get(_LEGACY_CUDA) or [])
        return out
    return copy.deepcopy(variables)


def shim_device(device: Any) -> Any:
    """``"host:container[:mode]"`` as a device object (mode unset when not given)."""
    if not isinstance(device, str):
        return copy.deepcopy(device)
    parts = device.split(":")
    if len(parts) not in (2, 3):
        return device
    return {"host_path": parts[0], "container_path": parts[1],
            "mode": parts[2] if len(parts) == 3 else None}


def shim_devices(devices: Any) -> Any:
    """Each device of a list shimmed."""
    return [shim_device(d) for d in devices] if isinstance(devices, list) \
        else copy.deepcopy(devices)


def shim_hyperparameter(value: Any) -> Any:
    """One hyperparameter: an implicit constant made explicit; nested groups recursively."""
    if isinstance(value, Mapping):
        if "type" in value:
            return copy.deepcopy(dict(value))
        return shim_hyperparameters(value)
    return {"type": "const", "val": copy.deepcopy(value)}


def shim_hyperparameters(values: Any) -> Any:
    """Every hyperparameter of a mapping shimmed."""
    if not isinstance(values, Mapping):
        return copy.deepcopy(values)
    return {name: shim_hyperparameter(value) for name, value in values.items()}


def shim_log_action(action: Any) -> Any:
    """The legacy ``{type: X}`` action as ``X``."""
    if isinstance(action, Mapping) and list(action) == ["type"]:
        return action["type"]
    return copy.deepcopy(action)


def shim_log_policy(policy: Any) -> Any:
    """A policy with its action shimmed."""
    if not isinstance(policy, Mapping):
        return copy.deepcopy(policy)
    out = copy.deepcopy(dict(policy))
    if "action" in out:
        out["action"] = shim_log_action(out["action"])
    return out


def shim_log_policies(policies: Any) -> Any:
    """Each policy of a list shimmed."""
    return [shim_log_policy(p) for p in policies] if isinstance(policies, list) \
        else copy.deepcopy(policies)


def _fields(shims: Mapping[str, Shim]) -> Shim:
    """Shim the named fields of a mapping (when present and set)."""
    def shim_mapping(doc: Any) -> Any:
        if not isinstance(doc, Mapping):
            return copy.deepcopy(doc)
        out = copy.deepcopy(dict(doc))
        for key, shim in shims.items():
            if out.get(key) is not None:
                out[key] = shim(out[key])
        return out
    return shim_mapping


shim_environment = _fields({"image": shim_image,
                            "environment_variables": shim_environment_variables})
shim_resources = _fields({"devices": shim_devices})
shim_experiment = _fields({"environment": shim_environment, "resources": shim_resources,
                           "hyperparameters": shim_hyperparameters,
                           "log_policies": shim_log_policies})

# The shim of each config kind that has one; other kinds are read as written.
SHIMS: dict[str, Shim] = {
    "experiment": shim_experiment,
    "environment": shim_environment,
    "environment_image": shim_image,
    "environment_image_map": shim_image,
    "environment_variables": shim_environment_variables,
    "environment_variables_map": shim_environment_variables,
    "resources": shim_resources,
    "devices": shim_devices,
    "device": shim_device,
    "hyperparameters": shim_hyperparameters,
    "hyperparameter": shim_hyperparameter,
    "log_policies": shim_log_policies,
    "log_policy": shim_log_policy,
    "log_action": shim_log_action,
}


def shim(doc: Any, kind: str) -> Any:
    """A copy of ``doc`` (of config kind ``kind``) with Determined's shims applied."""
    apply = SHIMS.get(kind)
    return apply(doc) if apply is not None else copy.deepcopy(doc)
