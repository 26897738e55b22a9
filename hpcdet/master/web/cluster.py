"""``/cluster``: the resource pools as the master last read them from Slurm.

Rendered from the ``pools`` snapshot (a request never runs a Slurm command); the page then
polls ``/api/v1/resource-pools``.
"""

from __future__ import annotations

from flask import render_template

from hpcdet.master.api.common import db
from hpcdet.master.queue.pools import pools_from_snapshot
from hpcdet.master.queue.snapshots import POOLS, load_snapshot
from hpcdet.master.web import bp
from hpcdet.master.web.formatting import poll_seconds, taken_text


@bp.get("/cluster")
def cluster() -> str:
    """Every pool: nodes up/total, slots used/total, GPU types, jobs pending, defaults."""
    found = load_snapshot(db(), POOLS)
    pools = [] if found is None else sorted(pools_from_snapshot(found[0]).values(),
                                            key=lambda pool: pool.name)
    return render_template("cluster.html", page="cluster", pools=pools,
                           taken=taken_text(None if found is None else found[1]),
                           poll_seconds=poll_seconds())
