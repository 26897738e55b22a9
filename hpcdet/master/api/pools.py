"""``GET /api/v1/resource-pools``: the pools as the master last read them from Slurm.

Served from the ``pools`` snapshot the reconciler refreshes every
``resource_manager.pool_refresh_seconds``; a request never runs a Slurm command. Before
the first refresh the list is empty and ``taken_at`` is null.
"""

from __future__ import annotations

from typing import Any

from hpcdet.master.api import bp
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.common import db, settings
from hpcdet.master.experiments.serialize import _time as iso_time
from hpcdet.master.queue.pools import pools_from_snapshot
from hpcdet.master.queue.snapshots import POOLS, load_snapshot


@bp.get("/resource-pools")
def list_resource_pools() -> Any:
    """Every pool (partitions and custom pools), sorted by name, and when Slurm was read."""
    current_user()
    found = load_snapshot(db(), POOLS)
    refresh = settings().resource_manager.pool_refresh_seconds
    if found is None:
        return {"resource_pools": [], "taken_at": None, "refresh_seconds": refresh}
    data, taken_at = found
    pools = sorted(pools_from_snapshot(data).values(), key=lambda pool: pool.name)
    return {"resource_pools": [pool.to_json() for pool in pools],
            "taken_at": iso_time(taken_at), "refresh_seconds": refresh}
