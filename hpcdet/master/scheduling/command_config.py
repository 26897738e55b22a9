"""A command's configuration (``det cmd run``): Determined's command config, checked.

Determined's keys that mean something on a batch scheduler are read: ``description``,
``entrypoint``, ``environment.environment_variables``, ``resources.slots``,
``resources.resource_pool``, ``resources.priority``, ``resources.weight``, ``bind_mounts``,
``work_dir``, ``slurm``/``pbs`` (``sbatch_args``/``pbsbatch_args``, ``slots_per_node``,
``gpu_type``). Keys Determined has that do not apply here (Kubernetes pod specs, Docker
capabilities, ``idle_timeout`` of a command) are accepted with a warning; an unknown key is
an error. Every problem is reported at once, each naming its key as ``<config>.a.b``.
See docs/commands.md.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hpcdet.dispatcher import registry
from hpcdet.dispatcher.safety import UNSAFE_CHARACTERS
from hpcdet.errors import ConfigError

ROOT = "<config>"
# Determined's default: a command asks for one slot.
DEFAULT_SLOTS = 1
MAX_ENTRYPOINT_WORDS = 1024
_KEYS = frozenset({"description", "entrypoint", "environment", "resources", "bind_mounts",
                   "work_dir", "slurm", "pbs"})
# Determined's command keys that have no effect on a batch scheduler (warned about).
_IGNORED = frozenset({"idle_timeout", "notebook_idle_type", "tensorboard_args", "debug",
                      "workspace", "project", "name"})
_ENV_KEYS = frozenset({"environment_variables", "image", "force_pull_image"})
_ENV_IGNORED = frozenset({"registry_auth", "pod_spec", "add_capabilities",
                          "drop_capabilities", "proxy_ports"})
_RESOURCE_KEYS = frozenset({"slots", "resource_pool", "priority", "weight"})
_RESOURCE_IGNORED = frozenset({"devices", "shm_size", "max_slots", "is_single_node"})
_BATCH_KEYS = {"slurm": frozenset({"sbatch_args", "slots_per_node", "gpu_type"}),
               "pbs": frozenset({"pbsbatch_args", "slots_per_node"})}


@dataclass
class CheckedConfig:
    """The config as given (with ``resources.slots`` filled) and what was ignored."""

    config: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


class _Checker:
    def __init__(self) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def error(self, path: str, problem: str) -> None:
        self.errors.append(f"{ROOT}.{path}: {problem}")

    def keys(self, doc: Mapping[str, Any], path: str, known: frozenset[str],
             ignored: frozenset[str] = frozenset()) -> None:
        prefix = f"{path}." if path else ""
        for key in doc:
            if key in ignored:
                self.warnings.append(f"{ROOT}.{prefix}{key}: has no effect on a batch "
                                     "scheduler; ignored")
            elif key not in known:
                listed = ", ".join(sorted(known))
                self.error(f"{prefix}{key}", f"unknown key (known here: {listed})")

    def mapping(self, doc: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
        value = doc.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.error(path, f"must be a mapping, not {_kind(value)}")
            return {}
        return value

    def text(self, value: Any, path: str, *, absolute: bool = False) -> None:
        if not isinstance(value, str) or not value:
            self.error(path, f"must be a non-empty string, not {_kind(value)}")
            return
        for char, description in UNSAFE_CHARACTERS.items():
            if char in value:
                self.error(path, f"contains {description} ({char!r})")
                return
        if absolute and not value.startswith("/"):
            self.error(path, f"must be an absolute path, not {value!r}")

    def integer(self, value: Any, path: str, low: int, high: int | None = None) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < low or (
                high is not None and value > high):
            limit = f"from {low} to {high}" if high is not None else f"of at least {low}"
            self.error(path, f"must be an integer {limit}, not {value!r}")

    def strings(self, value: Any, path: str) -> None:
        if not isinstance(value, list):
            self.error(path, f"must be a list of strings, not {_kind(value)}")
            return
        for index, item in enumerate(value):
            self.text(item, f"{path}[{index}]")


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__} ({value!r})"


def check_command_config(raw: Any, scheduler: str) -> CheckedConfig:
    """``raw`` checked against Determined's command config; ConfigError lists every
    problem. ``scheduler`` (``slurm``/``pbs``) is the master's: the other one's section is
    ignored with a warning, as Determined ignores it."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError([f"{ROOT}: must be a mapping, not {_kind(raw)}"],
                          title="invalid command configuration")
    check = _Checker()
    check.keys(raw, "", _KEYS, _IGNORED)
    if raw.get("description") is not None:
        check.text(raw["description"], "description")
    if raw.get("work_dir") is not None:
        check.text(raw["work_dir"], "work_dir", absolute=True)
    _check_environment(check, check.mapping(raw, "environment", "environment"))
    _check_resources(check, check.mapping(raw, "resources", "resources"))
    _check_bind_mounts(check, raw.get("bind_mounts"))
    _check_batch_sections(check, raw, scheduler)
    if check.errors:
        raise ConfigError(check.errors, title="invalid command configuration")
    config = dict(raw)
    resources = dict(config.get("resources") or {})
    resources.setdefault("slots", DEFAULT_SLOTS)
    config["resources"] = resources
    return CheckedConfig(config, check.warnings)


def _check_environment(check: _Checker, env: Mapping[str, Any]) -> None:
    check.keys(env, "environment", _ENV_KEYS, _ENV_IGNORED)
    if env.get("image"):
        check.error("environment.image", "commands run on the node itself, not in a "
                    "container: leave the image out (docs/commands.md)")
    variables = env.get("environment_variables")
    if isinstance(variables, Mapping):  # Determined's per-device form
        for device, items in variables.items():
            check.strings(items, f"environment.environment_variables.{device}")
    elif variables is not None:
        check.strings(variables, "environment.environment_variables")
        for index, item in enumerate(variables if isinstance(variables, list) else []):
            if isinstance(item, str) and "=" not in item:
                check.error(f"environment.environment_variables[{index}]",
                            f"must be NAME=VALUE, not {item!r}")


def _check_resources(check: _Checker, resources: Mapping[str, Any]) -> None:
    check.keys(resources, "resources", _RESOURCE_KEYS, _RESOURCE_IGNORED)
    if "slots" in resources:
        check.integer(resources["slots"], "resources.slots", 0)
    if resources.get("resource_pool") is not None:
        check.text(resources["resource_pool"], "resources.resource_pool")
    if resources.get("priority") is not None:
        check.integer(resources["priority"], "resources.priority", 1, 99)
    weight = resources.get("weight")
    if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float))
                               or weight <= 0):
        check.error("resources.weight", f"must be a number above 0, not {weight!r}")


def _check_bind_mounts(check: _Checker, mounts: Any) -> None:
    """Without a container a host path is where it is: a mount is accepted only when it
    names a path as itself (``container_path`` equal to ``host_path``)."""
    if mounts is None:
        return
    if not isinstance(mounts, list):
        check.error("bind_mounts", f"must be a list of mappings, not {_kind(mounts)}")
        return
    for index, mount in enumerate(mounts):
        path = f"bind_mounts[{index}]"
        if not isinstance(mount, Mapping):
            check.error(path, f"must be a mapping, not {_kind(mount)}")
            continue
        check.keys(mount, path, frozenset({"host_path", "container_path", "read_only",
                                           "propagation"}))
        host, inside = mount.get("host_path"), mount.get("container_path")
        check.text(host, f"{path}.host_path", absolute=True)
        check.text(inside, f"{path}.container_path", absolute=True)
        if isinstance(host, str) and isinstance(inside, str) and \
                posixpath.normpath(host) != posixpath.normpath(inside):
            check.error(f"{path}.container_path", f"{inside!r} differs from host_path "
                        f"{host!r}: commands run without a container, where a host path "
                        "can only be seen at its own path")


def _check_batch_sections(check: _Checker, raw: Mapping[str, Any], scheduler: str) -> None:
    for name, known in _BATCH_KEYS.items():
        section = check.mapping(raw, name, name)
        if name != scheduler:
            if section:
                check.warnings.append(f"{ROOT}.{name}: this master runs {scheduler}; "
                                      "ignored")
            continue
        check.keys(section, name, known)
        args_key = registry.scheduler(name).args_key
        if section.get(args_key) is not None:
            check.strings(section[args_key], f"{name}.{args_key}")
        if section.get("slots_per_node") is not None:
            check.integer(section["slots_per_node"], f"{name}.slots_per_node", 1)
        if section.get("gpu_type") is not None:
            check.text(section["gpu_type"], f"{name}.gpu_type")


def check_entrypoint(raw: Any) -> tuple[str, ...]:
    """The command's argv: a non-empty list of strings without NUL or line breaks in any
    but a single shell command (a one-word entrypoint runs with ``sh -c``)."""
    words = [raw] if isinstance(raw, str) else raw
    if not isinstance(words, list) or not words or not all(
            isinstance(word, str) for word in words):
        raise ConfigError([f"{ROOT}.entrypoint: must be a command (a string or a non-empty "
                           "list of strings)"], title="invalid command")
    if len(words) > MAX_ENTRYPOINT_WORDS:
        raise ConfigError([f"{ROOT}.entrypoint: at most {MAX_ENTRYPOINT_WORDS} words"],
                          title="invalid command")
    bad = "\x00" if len(words) == 1 else "\x00\n\r"
    errors = [f"{ROOT}.entrypoint[{index}]: contains {UNSAFE_CHARACTERS[char]} ({char!r})"
              for index, word in enumerate(words) for char in bad if char in word]
    if not words[0]:
        errors.append(f"{ROOT}.entrypoint[0]: the command must not be empty")
    if errors:
        raise ConfigError(errors, title="invalid command")
    return tuple(words)
