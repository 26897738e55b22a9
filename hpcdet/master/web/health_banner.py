"""The master's health on every page: a banner when it is degraded (the scheduler is
unreachable, the database slow, the reconciler not cycling), read from the ``health``
record the reconciler stores (:mod:`hpcdet.master.scheduling.health`); no scheduler command."""

from __future__ import annotations

from typing import Any

from hpcdet.master.api.master_info import app_health
from hpcdet.master.web.blueprint import bp


@bp.app_context_processor
def master_health() -> dict[str, Any]:
    """``master_health`` for base.html: the judged record, or None when unreadable."""
    try:
        return {"master_health": app_health()}
    except Exception:  # noqa: BLE001 - an error page must render even when the database fails
        return {"master_health": None}
