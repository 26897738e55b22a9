"""Ask MPI itself (mpi4py) for what the launcher's variables leave open.

Used only when needed, so mpi4py is imported here and nowhere at module level: an image
without it still runs Slurm and single-node MPI jobs. Importing ``mpi4py.MPI`` initialises
MPI; it is left initialised (mpi4py finalises it at exit) so that a training script may
use mpi4py too. Every rank must get here: the calls below are collective.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

from hpcdet.job.rank_env.placement import (
    LOCAL_ADDR,
    Placement,
    first_free_port,
    port_candidates,
)


def mpi4py_available() -> bool:
    """Whether mpi4py can be imported (without initialising MPI)."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def finalize() -> None:
    """``MPI_Finalize`` if this process initialised MPI through mpi4py and has not finalised.

    mpi4py finalises at interpreter teardown, which a harness ending with ``os._exit``
    skips; Open MPI's ``mpiexec`` then reports the rank as "exiting improperly" and fails
    the job (measured on the dev cluster: exit 1 after a run whose replicas all finished).
    """
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        mpi.Finalize()


def complete_from_mpi(placement: Placement) -> Placement:
    """``placement`` with rank, size, node layout and rendezvous taken from MPI_COMM_WORLD.

    Rank 0 chooses the rendezvous (loopback when all ranks share its node, else its host
    name, and the first free port drawn from the job's key or its own pid) and broadcasts it.
    """
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    if rank != placement.rank:
        raise ValueError(f"the launcher says rank {placement.rank}, MPI says rank {rank}")
    local_rank, local_size, cross_rank, cross_size = _node_layout(MPI, world)
    rendezvous = _rank0_rendezvous(MPI, placement, cross_size) if rank == 0 else None
    addr, port = world.bcast(rendezvous, root=0)
    return dataclasses.replace(
        placement, size=size, local_rank=local_rank, local_size=local_size,
        cross_rank=cross_rank, cross_size=cross_size, master_addr=addr, master_port=port,
    )


def _node_layout(mpi: Any, world: Any) -> tuple[int, int, int, int]:
    """Local rank and size on this node, and the node's index among the job's nodes.

    Nodes are numbered in the order of their lowest rank, the order ``GROUP_RANK`` uses.
    """
    node = world.Split_type(mpi.COMM_TYPE_SHARED, key=world.Get_rank())
    try:
        local_rank, local_size = node.Get_rank(), node.Get_size()
        lowest = node.bcast(world.Get_rank(), root=0)
    finally:
        node.Free()
    leaders = sorted(set(world.allgather(lowest)))
    return local_rank, local_size, leaders.index(lowest), len(leaders)


def _rank0_rendezvous(mpi: Any, placement: Placement, nodes: int) -> tuple[str, int]:
    addr = LOCAL_ADDR if nodes == 1 else str(mpi.Get_processor_name())
    port = placement.master_port or first_free_port(
        port_candidates(placement.port_key or str(os.getpid()))
    )
    return addr, port
