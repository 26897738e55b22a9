"""Who uses a pool's slots, and which jobs run on which node: for ``/cluster``,
``/cluster/nodes``, the queue page of one pool and ``GET /api/v1/resource-pools``.

All from the master's snapshots (``pools`` with its ``nodes``, and ``queue``), never from
the scheduler. Partitions often share nodes (the dev cluster's ``batch``, ``debug`` and
``urgent`` are the same three nodes): the scheduler then counts a CPU held by a ``batch``
job as used in every partition of its node. So a pool says how many of its used slots its
own jobs hold, and which pools share its nodes, instead of a bare "4/4 used" that its
queue page (no jobs) seems to contradict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hpcdet.dispatcher.queue import QueueEntry
from hpcdet.master.queue.pools import Pool


@dataclass(frozen=True)
class PoolUsage:
    """A pool's used slots split by whose jobs hold them."""

    own: int  # held by jobs running in this pool's partition
    shared_with: tuple[str, ...]  # other pools with nodes in common

    def others(self, pool: Pool) -> int:
        """Used slots held by jobs of other pools on shared nodes (never negative)."""
        return max(0, pool.slots_used - self.own)


def pool_usage(pools: Mapping[str, Pool], nodes: Sequence[Mapping[str, Any]],
               rows: Sequence[Mapping[str, Any]]) -> dict[str, PoolUsage]:
    """``{pool name: PoolUsage}`` from the snapshots' nodes and the queue's rows."""
    members = _pool_nodes(pools, nodes)
    usage = {}
    for name, pool in pools.items():
        own = sum(_slots(row, pool) for row in rows
                  if row.get("state") != "QUEUED" and _in_partition(row, pool.partition))
        shared = tuple(other for other in sorted(pools) if other != name
                       and members.get(name, set()) & members.get(other, set()))
        usage[name] = PoolUsage(own, shared)
    return usage


def _pool_nodes(pools: Mapping[str, Pool],
                nodes: Sequence[Mapping[str, Any]]) -> dict[str, set[str]]:
    by_partition: dict[str, set[str]] = {}
    for node in nodes:
        for partition in node.get("partitions") or ():
            by_partition.setdefault(str(partition).lower(), set()).add(str(node["name"]))
    return {name: by_partition.get((pool.partition or "").lower(), set())
            for name, pool in pools.items()}


def _in_partition(row: Mapping[str, Any], partition: str | None) -> bool:
    parts = {part.lower() for part in str(row.get("partition") or "").split(",")}
    return partition is not None and partition.lower() in parts


def _slots(row: Mapping[str, Any], pool: Pool) -> int:
    """What a running job holds in ``pool``'s slot kind (GPUs or CPUs)."""
    if pool.uses_gpus:
        return int(row.get("slots_acquired") or 0) if row.get("slot_kind") == "gpu" else 0
    return int(row.get("cpus") or row.get("slots_acquired") or 0)


def node_rows(nodes: Sequence[Mapping[str, Any]],
              rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every node with the running jobs the queue places on it (in queue order)."""
    on_node: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        for name in row.get("nodes") or ():
            on_node.setdefault(str(name), []).append(row)
    return [{**node, "jobs": on_node.get(str(node["name"]), [])} for node in nodes]


def entry_rows(entries: Sequence[QueueEntry]) -> list[dict[str, Any]]:
    """The few facts of the queue's entries :func:`pool_usage` reads (no database needed)."""
    return [{"state": "QUEUED" if entry.pending else "SCHEDULED", "partition": entry.partition,
             "slots_acquired": 0 if entry.pending else (entry.gpus or entry.cpus),
             "slot_kind": "gpu" if entry.gpus else "cpu", "cpus": entry.cpus}
            for entry in entries]


def usage_json(usage: PoolUsage | None) -> dict[str, Any]:
    """What the pools API adds to a pool: its own jobs' slots and the pools sharing nodes."""
    if usage is None:
        return {"slots_used_by_own_jobs": None, "shares_nodes_with": []}
    return {"slots_used_by_own_jobs": usage.own, "shares_nodes_with": list(usage.shared_with)}
