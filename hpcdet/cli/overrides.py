"""``--config KEY=VALUE`` overrides of an experiment's (or a command's) config.

``det experiment create``, ``continue``/``fork``, ``det cmd`` and ``--local`` apply them;
their own module, so that the other ``det experiment`` commands do not import it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from hpcdet.cli.main import CliError


@dataclasses.dataclass(frozen=True)
class Override:
    """One ``--config KEY=VALUE``: the dotted key split into its parts, the parsed value."""

    arg: str
    path: tuple[str, ...]
    value: Any


def parse_override(arg: str) -> Override:
    """Split ``KEY=VALUE`` and parse VALUE as YAML (``4`` is an int, ``[a, b]`` a list)."""
    import yaml

    key, sep, raw = arg.partition("=")
    path = tuple(part.strip() for part in key.split("."))
    if not sep:
        raise CliError(f"--config {arg!r}: expected KEY=VALUE with a dotted KEY such as "
                       "resources.slots_per_trial=4")
    if not all(path):
        raise CliError(f"--config {arg!r}: the key {key!r} is empty or has an empty part")
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise CliError(f"--config {arg!r}: the value is not valid YAML: {problem}") from None
    return Override(arg, path, value)


def apply_overrides(doc: Mapping[str, Any], overrides: Sequence[Override]) -> dict[str, Any]:
    """A copy of ``doc`` with each override set in order; missing mappings are created
    (an empty ``key:`` counts as missing), anything else in the way is an error."""
    import copy

    out = copy.deepcopy(dict(doc))
    for override in overrides:
        node = out
        for depth, part in enumerate(override.path[:-1]):
            if node.get(part) is None:
                node[part] = {}
            if not isinstance(node[part], dict):
                where = ".".join(override.path[:depth + 1])
                raise CliError(f"--config {override.arg!r}: {where} is a "
                               f"{type(node[part]).__name__}, not a mapping")
            node = node[part]
        node[override.path[-1]] = override.value
    return out


def override_text(doc: Mapping[str, Any], overrides: Sequence[Override]) -> str:
    """The overridden document as YAML text, keys in the order written."""
    import yaml

    return str(yaml.safe_dump(apply_overrides(doc, overrides), sort_keys=False))
