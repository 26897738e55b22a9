"""A trial's slots as nodes and ranks per node: the layout its job asks the scheduler for,
and by which its log lines are attributed to nodes.

The layout is chosen once, when the job's spec is built, and stored with the job
(:func:`record_layout`): the config read again later (another pool, another default) could
give another one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpcdet.dispatcher import JobSpec
from hpcdet.errors import ConfigError
from hpcdet.master.models import Job
from hpcdet.master.queue.pools import Pool, cpu_only
from hpcdet.master.settings.experiment_config import batch_section


def slot_layout(config: Mapping[str, Any], pool: Pool | None = None,
                scheduler: str = "slurm") -> tuple[int, int]:
    """(nodes, ranks per node) from ``resources.slots_per_trial`` and ``slots_per_node``
    (``slurm.slots_per_node`` or ``pbs.slots_per_node``).

    Without ``slots_per_node``, a GPU pool puts as many slots on a node as its nodes have
    GPUs (all on one node if that is unknown), and a CPU pool puts them all on one node.
    The slots must then split evenly over the nodes. One rank per slot; 0 slots (a
    CPU-only trial, :func:`~hpcdet.master.queue.pools.cpu_only`) is one rank on one node.
    """
    if cpu_only(config):
        return 1, 1
    slots = int(config.get("resources", {}).get("slots_per_trial", 1))
    name, section = batch_section(config, scheduler)
    explicit = section.get("slots_per_node")
    if explicit:
        per_node = int(explicit)
        if slots % per_node:
            raise ConfigError([f"<config>.resources.slots_per_trial: {slots} is not a multiple "
                               f"of {name}.slots_per_node ({per_node})"])
        return slots // per_node, per_node
    per_node = slots
    if pool is not None and pool.uses_gpus and pool.gpus_per_node > 0:
        per_node = min(slots, pool.gpus_per_node)
    if slots % per_node:
        raise ConfigError([_uneven_slots(slots, per_node, pool, name)])
    return slots // per_node, per_node


def _uneven_slots(slots: int, per_node: int, pool: Pool | None, section: str) -> str:
    fits = max(n for n in range(1, per_node + 1) if slots % n == 0)
    where = f" in resource pool {pool.name}" if pool is not None else ""
    return (f"<config>.resources.slots_per_trial: {slots} GPUs do not split evenly over nodes "
            f"with {per_node} GPUs{where}; set {section}.slots_per_node (e.g. {fits}) or ask "
            f"for a multiple of {per_node}")


def record_layout(job: Job, spec: JobSpec) -> None:
    """Store on ``job`` the layout its ``spec`` asks the scheduler for."""
    job.node_count, job.slots_per_node = spec.nodes, spec.ranks_per_node
