"""``security.storage_roots`` and ``security.max_body_mb``: limits on hostile input.

- ``storage_roots``: absolute directories under which an experiment's
  ``checkpoint_storage.host_path`` (joined with its ``storage_path``) must lie. Empty (the
  default) means the master's own: its state dir, its job storage root and the
  ``host_path`` of ``checkpoint_storage`` in ``master.yaml``.
- ``max_body_mb``: the request body limit of routes without a larger one of their own
  (:mod:`hpcdet.master.api.body_limits`); it may only raise the 1 MiB default.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hpcdet.master.settings.read import Getter

DEFAULT_BODY_MB = 1


@dataclass(frozen=True)
class HardeningSettings:
    """The hardening keys of ``security:``; the defaults are the master's own paths."""

    storage_roots: tuple[str, ...] = ()
    max_body_mb: int = DEFAULT_BODY_MB


def build_hardening(doc: Mapping[str, Any], where: str, errors: list[str]) -> HardeningSettings:
    """``security.storage_roots`` and ``security.max_body_mb`` from the ``security`` section."""
    get = Getter(doc, where, errors)
    roots = get.names("storage_roots")
    for index, root in enumerate(roots):
        if not posixpath.isabs(root):
            errors.append(f"{where}.storage_roots[{index}]: must be an absolute path, "
                          f"got {root!r}")
    return HardeningSettings(
        storage_roots=tuple(posixpath.normpath(root) for root in roots),
        max_body_mb=get.integer("max_body_mb", DEFAULT_BODY_MB, lo=DEFAULT_BODY_MB, hi=4096),
    )
