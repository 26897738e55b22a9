"""Where a job goes in Slurm's queue: partition, QOS, nice, account and wckey.

Determined's ``resources.priority`` (1-99, smaller is more important, default 42) picks a
*band* of the pool, which names a QOS and optionally a partition; inside a band hpcdet adds
``--nice`` so that Slurm's own order follows the priority, and the experiment's
``resources.weight`` breaks ties (a heavier weight gets a smaller nice). ``fair_share``
maps each workspace (or user) onto a Slurm account whose fairshare is its weight. Slurm
itself then enforces all of it. See docs/admin/slurm.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hpcdet.errors import ConfigError
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.pools import PriorityBand

DEFAULT_PRIORITY = 42
# Determined's default workspace, for experiments that name none.
DEFAULT_WORKSPACE = "uncategorized"
_ACCOUNT_UNSAFE = re.compile(r"[^a-z0-9_.-]+")


class PoolLike(Protocol):
    """What placement needs to know of a pool (hpcdet.master.queue.pools.Pool has it)."""

    @property
    def name(self) -> str: ...

    @property
    def partition(self) -> str | None: ...

    @property
    def priority_bands(self) -> tuple[PriorityBand, ...] | None: ...


@dataclass(frozen=True)
class Placement:
    """The queue-related options of one job."""

    partition: str | None
    qos: str | None
    nice: int
    account: str | None
    wckey: str | None


@dataclass(frozen=True)
class JobOwner:
    """Who a job belongs to, as placement sees it."""

    user: str
    workspace: str | None = None
    project: str | None = None
    labels: Sequence[str] = ()


def place(settings: MasterSettings, pool: PoolLike, owner: JobOwner, *,
          priority: int | None = None, weight: float = 1.0) -> Placement:
    """The partition, QOS, nice, account and wckey of a job in ``pool``."""
    priority = DEFAULT_PRIORITY if priority is None else priority
    band = band_for(settings, pool, priority)
    return Placement(
        partition=(band.partition if band else None) or pool.partition,
        qos=band.qos if band else None,
        nice=nice_for(settings, band, priority, weight),
        account=account_for(settings, owner),
        wckey=wckey_for(settings, owner),
    )


def bands_of(settings: MasterSettings, pool: PoolLike) -> tuple[PriorityBand, ...]:
    """The pool's own bands, else the global ones (possibly none)."""
    if pool.priority_bands is not None:
        return pool.priority_bands
    return settings.resource_manager.priority.bands


def band_for(settings: MasterSettings, pool: PoolLike, priority: int) -> PriorityBand | None:
    """The band holding ``priority``; None when the site configured no bands."""
    if not 1 <= priority <= 99:
        raise ConfigError([f"<config>.resources.priority: must be from 1 to 99, got {priority}"])
    bands = bands_of(settings, pool)
    return next((band for band in bands if band.holds(priority)), None)


def nice_for(settings: MasterSettings, band: PriorityBand | None, priority: int,
             weight: float) -> int:
    """``nice_step`` per priority point above the band's lowest, plus a weight tie-breaker.

    The tie-breaker, ``round((nice_step - 1) / (1 + weight))``, is below one step, so a
    better priority always wins; nice is never negative (only Slurm operators may lower it).
    """
    step = settings.resource_manager.priority.nice_step
    low = band.low if band else 1
    return step * (priority - low) + round((step - 1) / (1 + max(weight, 0.0)))


def account_for(settings: MasterSettings, owner: JobOwner) -> str | None:
    """The fair-share account of ``owner``'s jobs; None without ``fair_share``."""
    fair_share = settings.resource_manager.fair_share
    if fair_share is None:
        return None
    if fair_share.account_source == "user":
        return account_name(fair_share.account_prefix, owner.user)
    return account_name(fair_share.account_prefix, owner.workspace or DEFAULT_WORKSPACE)


def account_name(prefix: str, name: str) -> str:
    """``prefix`` + ``name`` as a Slurm account name: lower-case, unsafe runs become ``_``."""
    cleaned = _ACCOUNT_UNSAFE.sub("_", name.lower()).strip("_") or "_"
    return f"{prefix}{cleaned}"


def wckey_for(settings: MasterSettings, owner: JobOwner) -> str | None:
    """``--wckey`` from ``job_project_source``: the project, the workspace or labels."""
    source = settings.resource_manager.job_project_source
    if source == "project":
        return owner.project
    if source == "workspace":
        return owner.workspace
    prefix = source.partition(":")[2]
    chosen = [label.removeprefix(prefix) for label in owner.labels if label.startswith(prefix)]
    return ",".join(chosen) or None


def place_config(settings: MasterSettings, pool: PoolLike, config: Mapping[str, Any],
                 owner: str) -> Placement:
    """Where an experiment's jobs go in the scheduler's queue, from its config."""
    resources = config.get("resources") or {}
    job_owner = JobOwner(owner, workspace=config.get("workspace"), project=config.get("project"),
                         labels=tuple(config.get("labels") or ()))
    return place(settings, pool, job_owner, priority=resources.get("priority"),
                 weight=float(resources.get("weight") or 1.0))
