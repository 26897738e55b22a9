"""What of a config each reader is shown: secrets never leave the master, and what only
its owner should read is masked for everybody else.

Everybody (the owner too) gets the storage secrets masked (:func:`hpcdet.storage.masked_config`:
``secret_key``, ``connection_string``, ``credential``, an azure SAS query). A reader who is not
the owner (a workspace member, a cluster admin) also gets the value of every
``environment.environment_variables`` entry masked (people put ``HF_TOKEN`` and API keys
there: the reader sees that a variable is set, not its value) and the S3 ``access_key``
(issue 28, "also seen").

A fork of a shown config by someone else cannot copy those values into a job of theirs
(:func:`masked_variables` finds them; the fork is refused naming them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpcdet.master.security.authz import ANONYMOUS as ANONYMOUS_OWNER
from hpcdet.master.settings.core import MasterSettings
from hpcdet.storage import MASK, masked_config

OWNER_ONLY_STORAGE_FIELDS = ("access_key",)


def owner_view(settings: MasterSettings, reader: str, owner: str) -> bool:
    """Whether ``reader`` reads ``owner``'s config as its owner: they are the owner, the
    object is ``anonymous``'s (everybody's), or the master cannot tell people apart."""
    return not settings.identifies_users or reader == owner or owner == ANONYMOUS_OWNER


def shown_config(config: Mapping[str, Any], *, to_owner: bool) -> dict[str, Any]:
    """``config`` as a reader sees it (``to_owner``: the reader is its owner)."""
    out = masked_config(config, also=() if to_owner else OWNER_ONLY_STORAGE_FIELDS)
    if to_owner:
        return out
    environment = out.get("environment")
    if isinstance(environment, dict) and environment.get("environment_variables"):
        environment["environment_variables"] = _masked_variables(
            environment["environment_variables"])
    return out


def _masked_variables(raw: Any) -> Any:
    """``K=V`` items (a list, or a per-device map of lists) with each value masked."""
    if isinstance(raw, Mapping):
        return {key: _masked_variables(items) for key, items in raw.items()}
    if isinstance(raw, list):
        return [_masked_item(item) for item in raw]
    return MASK  # not a shape the schema allows: show nothing of it


def _masked_item(item: Any) -> str:
    name, equals, _ = str(item).partition("=")
    return f"{name}={MASK}" if equals else name  # a bare name has no value to hide


def masked_variables(config: Mapping[str, Any]) -> list[str]:
    """The names of ``environment_variables`` entries whose value is :data:`MASK`."""
    raw = (config.get("environment") or {}).get("environment_variables") \
        if isinstance(config.get("environment"), Mapping) else None
    items: list[Any] = []
    if isinstance(raw, Mapping):
        items = [item for values in raw.values() if isinstance(values, list) for item in values]
    elif isinstance(raw, list):
        items = raw
    return sorted({str(item).partition("=")[0] for item in items
                   if str(item).partition("=")[2] == MASK})
