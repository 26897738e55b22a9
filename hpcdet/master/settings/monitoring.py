"""``metrics:``: who may scrape the master's Prometheus endpoint, ``GET /metrics``.

``allow`` lists who may read it: ``admins`` (the cluster admins of ``auth.admins``, proven
as for any admin route; on an open master everyone counts as one) and ``token`` (a
Prometheus server presenting ``Authorization: Bearer <the content of token_file>``). The
default is ``[admins]``: the metrics name pools and show how busy the cluster is and who
keeps it busy, which is not for every user of a shared login node. ``token_file`` is
required with ``token``; it must be an absolute path, and it is refused at scrape time
unless it is a regular file of the master's user with no group or other permissions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hpcdet.master.settings.read import Getter, unknown_keys

KEYS = {"enabled", "allow", "token_file"}
ALLOW = ("admins", "token")


@dataclass(frozen=True)
class MetricsSettings:
    """How ``GET /metrics`` is served (docs/admin/metrics.md)."""

    enabled: bool = True
    allow: tuple[str, ...] = ("admins",)
    token_file: str | None = None


def build_metrics(doc: Mapping[str, Any], where: str, errors: list[str]) -> MetricsSettings:
    """The ``metrics`` section of master.yaml (absent: enabled, admins only)."""
    unknown_keys(doc, KEYS, where, errors)
    get = Getter(doc, where, errors)
    allow = get.names("allow") or MetricsSettings.allow
    for name in allow:
        if name not in ALLOW:
            errors.append(f"{where}.allow: each must be one of {', '.join(ALLOW)}, "
                          f"got {name!r}")
    token_file = get.opt_text("token_file")
    if "token" in allow and token_file is None:
        errors.append(f"{where}.token_file: required with allow: token (a file holding the "
                      "scrape token, mode 0600)")
    elif token_file is not None and not token_file.startswith("/"):
        errors.append(f"{where}.token_file: must be an absolute path, got {token_file!r}")
    return MetricsSettings(enabled=get.flag("enabled", True), allow=tuple(dict.fromkeys(allow)),
                           token_file=token_file)
