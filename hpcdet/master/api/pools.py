"""``GET /api/v1/resource-pools``: the pools as the master last read them from Slurm.

Served from the ``pools`` snapshot the reconciler refreshes every
``resource_manager.pool_refresh_seconds``; a request never runs a Slurm command. Before
the first refresh the list is empty and ``taken_at`` is null. Each pool also says how many
of its used slots its own jobs hold (partitions may share nodes) and which pools share them.
"""

from __future__ import annotations

from typing import Any

from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, settings
from hpcdet.master.model_base import iso_time
from hpcdet.master.queue.job_queue import entries_of
from hpcdet.master.queue.pools import pools_from_snapshot
from hpcdet.master.queue.snapshots import POOLS, QUEUE, load_snapshot
from hpcdet.master.queue.usage import entry_rows, pool_usage, usage_json


@bp.get("/resource-pools")
def list_resource_pools() -> Any:
    """Every pool (partitions and custom pools), sorted by name, and when Slurm was read."""
    current_user()
    found = load_snapshot(db(), POOLS)
    refresh = settings().resource_manager.pool_refresh_seconds
    if found is None:
        return {"resource_pools": [], "taken_at": None, "refresh_seconds": refresh}
    data, taken_at = found
    by_name = pools_from_snapshot(data)
    queue = load_snapshot(db(), QUEUE)
    usage = pool_usage(by_name, data.get("nodes") or [],
                       entry_rows(entries_of(queue[0]) if queue else []))
    pools = sorted(by_name.values(), key=lambda pool: pool.name)
    return {"resource_pools": [{**pool.to_json(), **usage_json(usage.get(pool.name))}
                               for pool in pools],
            "taken_at": iso_time(taken_at), "refresh_seconds": refresh}
