"""``det resource-pool`` (alias ``rp``): the pools trials and tasks can run in.

Every Slurm partition is a pool, plus the custom pools of the master's configuration. The
master reads them from Slurm on a timer, so what is shown may be a few seconds old.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.actions import show_command
from hpcdet.cli.output import render_table

HEADERS = ("Pool", "Partition", "Slot type", "Nodes up/total", "Slots used/total",
           "GPU types", "Jobs pending", "Default", "Description")


@click.group("resource-pool", cls=AliasedGroup, aliases={"ls": "list"})
def resource_pool() -> None:
    """Show the resource pools (Slurm partitions and custom pools)."""


def _pools_text(answer: Mapping[str, Any]) -> str:
    """The pools' table, or why there are none yet (the master has not read them)."""
    pools = answer.get("resource_pools") or []
    if not pools and answer.get("taken_at") is None:
        seconds = answer.get("refresh_seconds")
        every = f" every {seconds:g} s" if isinstance(seconds, int | float) else ""
        return f"No resource pools yet: the master reads them from Slurm{every}."
    return pools_table(pools)


resource_pool.add_command(show_command(
    "list", "List the pools: nodes, slots (GPUs or CPUs), pending jobs and the default marks.",
    lambda: "/resource-pools", _pools_text))


def pools_table(pools: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det resource-pool list`` shows."""
    rows = [[p.get("name"), p.get("partition"), p.get("slot_type"),
             _fraction(p, "nodes_up", "nodes_total"), _fraction(p, "slots_used", "slots_total"),
             ", ".join(p.get("gpu_types") or ()), p.get("jobs_pending"), default_marks(p),
             p.get("description")] for p in pools]
    return render_table(HEADERS, rows)


def default_marks(pool: Mapping[str, Any]) -> str:
    """``compute``, ``aux``, both or nothing: what the pool is the default for."""
    marks = [mark for mark, key in (("compute", "default_compute"), ("aux", "default_aux"))
             if pool.get(key)]
    return ", ".join(marks)


def _fraction(pool: Mapping[str, Any], part: str, whole: str) -> str:
    return f"{pool.get(part, 0)}/{pool.get(whole, 0)}"
