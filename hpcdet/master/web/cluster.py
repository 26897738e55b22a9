"""``/cluster``: the resource pools as the master last read them from the scheduler, and
``/cluster/nodes``: each node, what it holds and which jobs run on it.

Rendered from the ``pools`` and ``queue`` snapshots (a request never runs a scheduler
command); ``/cluster`` then polls ``/api/v1/resource-pools``, ``/cluster/nodes`` refetches
itself (static/poll.js, ``data-render="page"``) and swaps in the new rows. A pool's used
slots are split into its own jobs' and those of pools sharing its nodes (see
:mod:`hpcdet.master.queue.usage`).
"""

from __future__ import annotations

from typing import Any

from flask import render_template

from hpcdet.master.api.common import db, settings
from hpcdet.master.queue.job_queue import job_list
from hpcdet.master.queue.pools import pools_from_snapshot
from hpcdet.master.queue.snapshots import POOLS, load_snapshot
from hpcdet.master.queue.usage import node_rows, pool_usage
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.formatting import poll_seconds, taken_text
from hpcdet.master.web.identity import page_user
from hpcdet.master.web.node_words import node_state_words
from hpcdet.master.web.queue import job_link, job_type_word


@bp.get("/cluster")
def cluster() -> str:
    """Every pool: nodes up/total, slots used/total (and by whom), GPU types, jobs pending,
    defaults."""
    found = load_snapshot(db(), POOLS)
    pools = {} if found is None else pools_from_snapshot(found[0])
    usage = pool_usage(pools, _nodes(found), _queue_rows())
    return render_template("cluster.html", page="cluster",
                           pools=sorted(pools.values(), key=lambda pool: pool.name),
                           usage=usage, taken=taken_text(None if found is None else found[1]),
                           poll_seconds=poll_seconds())


@bp.get("/cluster/nodes")
def cluster_nodes() -> str:
    """Every node: state, CPUs and GPUs (total and allocated), partitions, and the jobs the
    last queue read placed on it, linked to their trial or task."""
    found = load_snapshot(db(), POOLS)
    rows = _queue_rows()
    nodes = [{**node, "jobs": [_job_link(job) for job in node["jobs"]],
              "state_words": node_state_words(str(node.get("state") or ""))}
             for node in node_rows(_nodes(found), rows)]
    return render_template("nodes.html", page="cluster", nodes=nodes,
                           taken=taken_text(None if found is None else found[1]),
                           poll_seconds=poll_seconds())


def _nodes(found: tuple[dict[str, Any], Any] | None) -> list[dict[str, Any]]:
    return [] if found is None else list(found[0].get("nodes") or ())


def _queue_rows() -> list[dict[str, Any]]:
    """The queue's rows as the page's user may see them (others' hpcdet jobs redacted)."""
    rows: list[dict[str, Any]] = job_list(db(), settings(), None, page_user())["jobs"]
    return rows


def _job_link(job: dict[str, Any]) -> dict[str, Any]:
    """A job on a node: its id, words for its type, its page (if hpcdet's) and owner."""
    return {"job_id": job["job_id"], "type": job_type_word(job.get("type")),
            "name": job.get("name") or "", "user": job.get("user") or "", "href": job_link(job),
            "slots": f"{job['slots_acquired']} {job['slot_kind']}"}

