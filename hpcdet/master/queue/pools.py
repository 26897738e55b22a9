"""Resource pools: every Slurm partition is one, and master.yaml may carve more out of them.

A pool is what users name in ``resources.resource_pool`` and ``det resource-pool list``
shows. What a pool *is* comes from master.yaml (``partition_overrides`` for a partition's
pool, ``resource_pools`` for custom ones: description, slot type, ``sbatch_args``, GPU
type, priority bands); what it *holds* (nodes, slots, GPU types, pending jobs) comes from
Slurm, read on a timer by the reconciler and stored as the ``pools`` snapshot, so that no
API request ever runs a Slurm command.

Rules, as in Determined: ``task_container_defaults.slurm.sbatch_args`` lists append
(global, then the partition's override, then the custom pool's); scalars (``gpu_type``)
are overridden by the more specific level. A pool's slot type is its partition override's
``slot_type``, else the global ``slot_type``, else ``cuda`` when any of its nodes has a GPU
and ``cpu`` otherwise. Slots are GPUs for cuda/rocm pools and CPUs for cpu pools.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend
from hpcdet.dispatcher.batch_args import node_filter
from hpcdet.dispatcher.pools import NodeInfo, PartitionInfo
from hpcdet.errors import ConfigError
from hpcdet.master.db import session_scope
from hpcdet.master.queue.snapshots import POOLS, load_snapshot
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings
from hpcdet.master.settings.pools import CustomPool, PartitionOverride, PriorityBand

log = logging.getLogger(__name__)

GPU_SLOT_TYPES = ("cuda", "rocm")
CONFIG_POOL_KEY = "<config>.resources.resource_pool"


@dataclass(frozen=True)
class Pool:
    """One resource pool: its configuration and, when Slurm has been read, its contents.

    ``partition`` is None only for a pool built without a snapshot and without a name
    (Slurm's default partition then). Counts are 0 when unknown.
    """

    name: str
    partition: str | None
    description: str | None = None
    slot_type: str = "cpu"
    gpu_type: str | None = None
    sbatch_args: tuple[str, ...] = ()
    priority_bands: tuple[PriorityBand, ...] | None = None
    is_custom: bool = False
    nodes_up: int = 0
    nodes_total: int = 0
    slots_used: int = 0
    slots_total: int = 0
    gpus_per_node: int = 0
    gpu_types: tuple[str, ...] = ()
    cpus_per_node: int = 0
    jobs_pending: int = 0
    default_compute: bool = False
    default_aux: bool = False

    @property
    def uses_gpus(self) -> bool:
        """True for cuda and rocm pools, whose slots are GPUs."""
        return self.slot_type in GPU_SLOT_TYPES

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (tuples as lists, bands as dicts); :meth:`from_json` reverses it."""
        data = dataclasses.asdict(self)
        data["sbatch_args"] = list(self.sbatch_args)
        data["gpu_types"] = list(self.gpu_types)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Pool:
        """The pool :meth:`to_json` wrote; keys it does not know are ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        values["sbatch_args"] = tuple(values.get("sbatch_args") or ())
        values["gpu_types"] = tuple(values.get("gpu_types") or ())
        bands = values.get("priority_bands")
        values["priority_bands"] = (None if bands is None
                                    else tuple(PriorityBand(**band) for band in bands))
        return cls(**values)


# ---- reading the scheduler ------------------------------------------------------------


def read_pools(backend: Backend, settings: MasterSettings) -> dict[str, Any]:
    """The ``pools`` snapshot: every pool built from the scheduler's pools (Slurm partitions,
    PBS queues) and ``settings``; the backend reads them with a bounded number of commands."""
    partitions = backend.read_pools()
    return {"pools": [pool.to_json() for pool in build_pools(partitions, settings)],
            "nodes": nodes_of(partitions)}


def nodes_of(partitions: Sequence[PartitionInfo]) -> list[dict[str, Any]]:
    """Every node once (for the per-node page), with the partitions it is in, by name."""
    nodes: dict[str, dict[str, Any]] = {}
    for partition in partitions:
        for node in partition.nodes:
            entry = nodes.setdefault(node.name, {**dataclasses.asdict(node), "partitions": [],
                                                 "up": node.up})
            entry["gpu_types"] = list(node.gpu_types)
            entry["partitions"].append(partition.name)
    return [nodes[name] for name in sorted(nodes)]


def pools_from_snapshot(data: Mapping[str, Any]) -> dict[str, Pool]:
    """``{name: Pool}`` from what :func:`read_pools` stored."""
    pools = (Pool.from_json(item) for item in data.get("pools") or ())
    return {pool.name: pool for pool in pools}


def build_pools(partitions: Sequence[PartitionInfo], settings: MasterSettings) -> list[Pool]:
    """One pool per partition plus the custom pools, sorted by name, defaults marked."""
    rm = settings.resource_manager
    pools = {p.name: _partition_pool(rm, p) for p in partitions}
    for custom in rm.resource_pools:
        pools[custom.pool_name] = _custom_pool(rm, custom, partitions)
    default = next((p.name for p in partitions if p.is_default), None)
    compute = _find_name(pools, rm.default_compute_resource_pool or default)
    aux = _find_name(pools, rm.default_aux_resource_pool or default)
    return [dataclasses.replace(pool, default_compute=name == compute, default_aux=name == aux)
            for name, pool in sorted(pools.items())]


def _partition_pool(rm: ResourceManagerSettings, partition: PartitionInfo) -> Pool:
    override = rm.partition_overrides.get(partition.name.lower())
    pool = _configured_pool(rm, partition.name, partition.name, override, None)
    nodes = pool_nodes(partition.nodes, pool.sbatch_args, rm.type)
    return _with_contents(pool, nodes, partition.jobs_pending,
                          explicit_slot_type=_explicit_slot_type(rm, override))


def _custom_pool(rm: ResourceManagerSettings, custom: CustomPool,
                 partitions: Sequence[PartitionInfo]) -> Pool:
    found = _find_partition(partitions, custom.partition)
    name = found.name if found else custom.partition
    override = rm.partition_overrides.get(name.lower())
    pool = _configured_pool(rm, custom.pool_name, name, override, custom)
    if found is None:
        log.warning("resource pool %s: Slurm has no partition %s", custom.pool_name, name)
        return pool
    nodes = pool_nodes(found.nodes, pool.sbatch_args, rm.type)
    return _with_contents(pool, nodes, found.jobs_pending,
                          explicit_slot_type=_explicit_slot_type(rm, override))


def _configured_pool(rm: ResourceManagerSettings, name: str, partition: str | None,
                     override: PartitionOverride | None, custom: CustomPool | None) -> Pool:
    """What master.yaml says of a pool, before the scheduler is asked what it holds."""
    slurm = rm.slurm_defaults
    for level in (override, custom):
        slurm = slurm.then(level.slurm) if level is not None else slurm
    bands = next((x.priority_bands for x in (custom, override)
                  if x is not None and x.priority_bands is not None), None)
    description = custom.description if custom else (override.description if override else None)
    slot_type = _explicit_slot_type(rm, override) or "cpu"
    return Pool(name=name, partition=partition, description=description, slot_type=slot_type,
                gpu_type=slurm.gpu_type, sbatch_args=slurm.batch_args(rm.type),
                priority_bands=bands, is_custom=custom is not None)


def _with_contents(pool: Pool, nodes: Sequence[NodeInfo], jobs_pending: int, *,
                   explicit_slot_type: str | None) -> Pool:
    """``pool`` with Slurm's view of ``nodes``; the slot type follows the GPUs if not set."""
    has_gpus = any(node.gpus for node in nodes)
    slot_type = explicit_slot_type or ("cuda" if has_gpus else "cpu")
    gpus = slot_type in GPU_SLOT_TYPES
    return dataclasses.replace(
        pool, slot_type=slot_type, nodes_up=sum(node.up for node in nodes),
        nodes_total=len(nodes), jobs_pending=jobs_pending,
        slots_used=sum(n.gpus_used if gpus else n.cpus_allocated for n in nodes),
        slots_total=sum(n.gpus if gpus else n.cpus for n in nodes),
        gpus_per_node=max((n.gpus for n in nodes), default=0),
        cpus_per_node=max((n.cpus for n in nodes), default=0),
        gpu_types=tuple(dict.fromkeys(t for n in nodes for t in n.gpu_types)),
    )


def pool_nodes(nodes: Sequence[NodeInfo], sbatch_args: Sequence[str],
               scheduler: str = "slurm") -> list[NodeInfo]:
    """The nodes a pool's ``--exclude``/``-x`` and ``--nodelist``/``-w`` leave.

    (Carve a pool with ``--exclude``: Slurm gives a job *every* node of ``--nodelist``.)
    Other constraints (``--constraint``, features) are not evaluated: the pool then shows
    all the nodes of its partition.
    """
    keep, drop = node_filter(scheduler, sbatch_args)
    return [n for n in nodes if (keep is None or n.name in keep) and n.name not in drop]


# ---- choosing a pool ----------------------------------------------------------------------


def resolve_pool(settings: MasterSettings, pools: Mapping[str, Pool], name: str | None, *,
                 aux: bool = False, where: str = "resource pool") -> Pool:
    """The pool called ``name`` (exact, else case-insensitive), or the default one.

    Without ``name``: master.yaml's ``default_aux_resource_pool`` (``aux``) or
    ``default_compute_resource_pool``, else the pool of Slurm's default partition.
    Raises :class:`ConfigError` naming the unknown pool and the known ones.
    """
    wanted = name or _default_name(settings, aux)
    if wanted is None:
        marked = [p for p in pools.values() if (p.default_aux if aux else p.default_compute)]
        if marked:
            return marked[0]
        raise ConfigError([f"{where}: none given, and neither master.yaml nor Slurm names a "
                           "default"], title="no resource pool")
    found = _find_name(pools, wanted)
    if found is None:
        known = ", ".join(sorted(pools)) or "none yet"
        raise ConfigError([f"{where}: unknown resource pool {wanted!r} (known: {known})"],
                          title="unknown resource pool")
    return pools[found]


def settings_pool(settings: MasterSettings, name: str | None = None, *,
                  aux: bool = False) -> Pool:
    """The pool as master.yaml alone describes it, before Slurm has been read.

    Its slot type is the partition override's or the global ``slot_type``, else ``cpu``;
    its counts are unknown (0), so GPU slots all go on one node unless
    ``slurm.slots_per_node`` is set.
    """
    rm = settings.resource_manager
    wanted = name or _default_name(settings, aux)
    custom = next((c for c in rm.resource_pools
                   if wanted is not None and c.pool_name.lower() == wanted.lower()), None)
    partition = custom.partition if custom is not None else wanted
    override = rm.partition_overrides.get(partition.lower()) if partition else None
    return _configured_pool(rm, custom.pool_name if custom else (wanted or ""), partition,
                            override, custom)


def cpu_only(config: Mapping[str, Any]) -> bool:
    """``resources.slots_per_trial: 0``: as in Determined, a CPU-only trial (one rank, no
    GPU), which runs in the default aux pool unless ``resources.resource_pool`` names one."""
    slots = (config.get("resources") or {}).get("slots_per_trial")
    return slots is not None and int(slots) == 0


def pool_for_config(sessions: Session | sessionmaker[Session], settings: MasterSettings,
                    config: Mapping[str, Any]) -> Pool:
    """The pool an experiment's trials run in, from the ``pools`` snapshot.

    ``sessions`` is an open session or a session factory (one read-only transaction is
    then opened). Without a snapshot yet, the pool comes from master.yaml alone
    (:func:`settings_pool`). An unknown pool raises :class:`ConfigError`. Without
    ``resources.resource_pool``, a CPU-only trial (:func:`cpu_only`) gets the default aux
    pool and any other the default compute pool, as in Determined.
    """
    name = (config.get("resources") or {}).get("resource_pool")
    aux = cpu_only(config)
    data = _pools_snapshot(sessions)
    if data is None:
        return settings_pool(settings, name, aux=aux)
    return resolve_pool(settings, pools_from_snapshot(data), name, aux=aux,
                        where=CONFIG_POOL_KEY)


def _pools_snapshot(sessions: Session | sessionmaker[Session]) -> Mapping[str, Any] | None:
    if isinstance(sessions, Session):
        found = load_snapshot(sessions, POOLS)
    else:
        with session_scope(sessions) as session:
            found = load_snapshot(session, POOLS)
    return found[0] if found is not None else None


def _default_name(settings: MasterSettings, aux: bool) -> str | None:
    rm = settings.resource_manager
    return rm.default_aux_resource_pool if aux else rm.default_compute_resource_pool


def _find_name(names: Iterable[str], wanted: str | None) -> str | None:
    """``wanted`` if it is one of ``names``, else the one equal ignoring case."""
    if wanted is None:
        return None
    names = list(names)
    if wanted in names:
        return wanted
    return next((n for n in names if n.lower() == wanted.lower()), None)


def _find_partition(partitions: Sequence[PartitionInfo], name: str) -> PartitionInfo | None:
    found = _find_name([p.name for p in partitions], name)
    return next((p for p in partitions if p.name == found), None)


def _explicit_slot_type(rm: ResourceManagerSettings,
                        override: PartitionOverride | None) -> str | None:
    """The partition override's ``slot_type``, else the global one; None: follow the GPUs."""
    return (override.slot_type if override is not None else None) or rm.slot_type
