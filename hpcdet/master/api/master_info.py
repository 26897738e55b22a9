"""``GET /api/v1/master``."""

from __future__ import annotations

from typing import Any

from hpcdet import __version__
from hpcdet.master.api import bp
from hpcdet.master.api.common import settings


@bp.get("/master")
def master_info() -> Any:
    """Version, cluster and database of this master."""
    s = settings()
    return {"version": __version__, "cluster_name": s.resource_manager.cluster_name,
            "database": s.database_kind, "resource_manager": s.resource_manager.type,
            "url": s.master_url, "auth_mode": s.auth_mode}
