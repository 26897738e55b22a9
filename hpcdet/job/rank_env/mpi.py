"""A rank started by ``mpiexec``/``mpirun``: Open MPI's, MPICH/Hydra's or PMIx's variables.

Launchers export rank, size and this node's share, but not where rank 0 runs. That is
known without talking to the other ranks in two cases: every rank is on this node (the
loopback address), or ``$PBS_NODEFILE`` lists the job's slots, one line per slot, and
``mpiexec`` placed the ranks in that order (its default with a host file: each host's
slots are filled before the next host's, hosts in order of first appearance). The layout
read from the file is used only when it agrees with this rank's local rank and size.
Everything else is left open for :mod:`hpcdet.job.rank_env.mpi_world`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from hpcdet.job.rank_env.placement import (
    LOCAL_ADDR,
    Placement,
    first_var,
    int_var,
    optional_int_var,
)


@dataclass(frozen=True)
class _Family:
    """The variable names one kind of launcher uses (``None``: it exports no such value)."""

    name: str
    rank: str
    size: str | None
    local_rank: str | None
    local_size: str | None


# Families that export the whole layout come first; PMIx alone gives only the rank (Open MPI
# exports both its own names and PMIx's, and so may an MPICH built with PMIx).
_FAMILIES = (
    _Family("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
            "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    _Family("pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
    _Family("pmix", "PMIX_RANK", None, None, None),
)
_JOB_ID_VARS = ("PBS_JOBID", "SLURM_JOB_ID")
# Shared by every rank of one launch, so all draw the same port: the scheduler's job id,
# else the launch's own id (PMIx namespace, Open MPI's job id).
_PORT_KEY_VARS = (*_JOB_ID_VARS, "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid")
NODEFILE_VAR = "PBS_NODEFILE"


def mpi_placement(env: Mapping[str, str]) -> Placement | None:
    """This rank's place from an MPI launcher's variables; ``None`` when there are none."""
    family = next((f for f in _FAMILIES if env.get(f.rank)), None)
    if family is None:
        return None
    placement = Placement(
        launcher=family.name,
        rank=int_var(env, family.rank),
        size=_optional(env, family.size),
        local_rank=_optional(env, family.local_rank),
        local_size=_optional(env, family.local_size),
        job_id=first_var(env, *_JOB_ID_VARS),
        port_key=first_var(env, *_PORT_KEY_VARS),
    )
    return _with_node_layout(placement, env)


def assume_block_layout(placement: Placement, master_addr: str) -> Placement | None:
    """Node index and count as if every node ran as many ranks as this one (no mpi4py).

    Only for a rendezvous address the user set: ``None`` when size or local layout is unknown.
    """
    p = placement
    if p.size is None or p.local_rank is None or p.local_size is None:
        return None
    return dataclasses.replace(
        p,
        cross_rank=(p.rank - p.local_rank) // p.local_size,
        cross_size=-(-p.size // p.local_size),
        master_addr=master_addr,
        port_key=p.port_key or "0",
    )


def nodefile_hosts(env: Mapping[str, str]) -> list[str] | None:
    """The host of each slot, in order, from ``$PBS_NODEFILE``; ``None`` when unreadable."""
    path = env.get(NODEFILE_VAR)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as nodefile:
            return [line.strip() for line in nodefile if line.strip()]
    except OSError:
        return None


def _with_node_layout(p: Placement, env: Mapping[str, str]) -> Placement:
    """Add node index, node count and rendezvous host where the variables determine them."""
    if p.size is None or p.local_rank is None or p.local_size is None:
        return p
    if p.local_size == p.size:
        return dataclasses.replace(p, cross_rank=0, cross_size=1, master_addr=LOCAL_ADDR)
    hosts = nodefile_hosts(env)
    if hosts is None or len(hosts) != p.size:
        return p
    nodes = list(dict.fromkeys(hosts))  # hosts in order of first appearance
    counts = [hosts.count(node) for node in nodes]
    # Block placement: the node whose slot range holds this rank.
    start = 0
    for index, count in enumerate(counts):
        if start <= p.rank < start + count:
            if (p.rank - start, count) != (p.local_rank, p.local_size):
                return p  # mpiexec placed the ranks differently: ask MPI instead
            return dataclasses.replace(p, cross_rank=index, cross_size=len(nodes),
                                       master_addr=nodes[0], nodelist=",".join(nodes))
        start += count
    return p


def _optional(env: Mapping[str, str], name: str | None) -> int | None:
    return None if name is None else optional_int_var(env, name)
