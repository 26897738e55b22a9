"""The distributed context: who this rank is, and object collectives over all ranks."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from hpcdet.core._collectives import (
    Collectives,
    LocalCollectives,
    StoreCollectives,
    TorchCollectives,
    default_group_matches,
)
from hpcdet.job.process_group import is_initialized, timeout_from_environ

__all__ = ["Collectives", "DistributedContext", "DummyDistributedContext", "LocalCollectives",
           "StoreCollectives", "TorchCollectives"]

# Determined's default ports (INTER_TRAIN_PROCESS_COMM_PORT_1/2): used when the job gives
# no MASTER_PORT to derive a port of its own from.
DETERMINED_PUB_PORT = 12360
DETERMINED_PULL_PORT = 12376
LOCAL_ADDR = "127.0.0.1"
_RANK_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
              "GROUP_WORLD_SIZE")


class DistributedContext:
    """This rank's place in the trial, and collectives over all its ranks.

    ``rank``/``size`` count processes over the whole trial, ``local_*`` the processes on
    this node, and ``cross_*`` the nodes. Every collective must be called by every rank,
    in the same order, or the ranks deadlock. The ``*_local`` collectives exchange among
    the ranks of one node, but in hpcdet every rank of the trial must call them too.

    Built by hand (Determined's signature), the collectives run over the default
    ``torch.distributed`` process group when one exists with this rank and size, else over
    a key-value store the chief serves at ``chief_ip`` (required when the ranks span
    several nodes, as in Determined) and port ``pub_port + port_offset``. ``pub_port``
    defaults to ``$MASTER_PORT + 2`` in a job (a port of the job's own: the harness's
    group uses ``$MASTER_PORT``, a script's own group ``+ 1``), else to Determined's 12360.
    ``pull_port`` and ``force_tcp`` are accepted for Determined's sake and not needed.

    Example::

        dist = core_context.distributed
        shard = dataset[dist.rank :: dist.size]
        totals = dist.allgather(len(shard))   # the same list on every rank
        if dist.is_chief:
            print(sum(totals))
    """

    def __init__(
        self,
        *,
        rank: int,
        size: int,
        local_rank: int,
        local_size: int,
        cross_rank: int,
        cross_size: int,
        chief_ip: str | None = None,
        pub_port: int | None = None,
        pull_port: int = DETERMINED_PULL_PORT,
        port_offset: int = 0,
        force_tcp: bool = False,
        collectives: Collectives | None = None,
    ) -> None:
        _check_layout(rank, size, local_rank, local_size, cross_rank, cross_size)
        self.rank = rank
        self.size = size
        self.local_rank = local_rank
        self.local_size = local_size
        self.cross_rank = cross_rank
        self.cross_size = cross_size
        # One node: the chief is reachable on loopback whatever was passed (as Determined).
        self._chief_ip = chief_ip if local_size != size else LOCAL_ADDR
        self._port = (default_pub_port() if pub_port is None else pub_port) + port_offset
        self._pull_port = pull_port
        self._collectives: Collectives = collectives or self._make_collectives()

    def _make_collectives(self) -> Collectives:
        if self.size < 2:
            return LocalCollectives()
        if default_group_matches(self.rank, self.size):
            return TorchCollectives()
        if self._chief_ip is None:
            raise ValueError(
                f"this is a distributed job (local_size {self.local_size} != size {self.size}) "
                "but no chief_ip was given: pass chief_ip= (the address of rank 0's node, e.g. "
                "hpcdet.get_cluster_info().container_addrs[0]) or set DET_CHIEF_IP")
        return StoreCollectives(rank=self.rank, size=self.size, host=self._chief_ip,
                                port=self._port, timeout_s=timeout_from_environ())

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(rank={self.rank}, size={self.size}, "
            f"local_rank={self.local_rank}, local_size={self.local_size}, "
            f"cross_rank={self.cross_rank}, cross_size={self.cross_size})"
        )

    @property
    def is_chief(self) -> bool:
        """True on rank 0, the only rank that talks to the master."""
        return self.rank == 0

    @property
    def is_local_chief(self) -> bool:
        """True on the first rank of each node."""
        return self.local_rank == 0

    def get_rank(self) -> int:
        """This process's rank in the trial (unique over all its processes)."""
        return self.rank

    def get_local_rank(self) -> int:
        """This process's rank among the trial's processes on this node."""
        return self.local_rank

    def get_size(self) -> int:
        """The number of processes (slots) of the trial."""
        return self.size

    def get_local_size(self) -> int:
        """The number of the trial's processes on this node."""
        return self.local_size

    def get_cross_rank(self) -> int:
        """The index of this node among the trial's nodes."""
        return self.cross_rank

    def get_cross_size(self) -> int:
        """The number of nodes of the trial."""
        return self.cross_size

    def get_num_agents(self) -> int:
        """The number of nodes of the trial (Determined's "agents")."""
        return self.cross_size

    @classmethod
    def from_torch_distributed(cls, chief_ip: str | None = None, *,
                               environ: Mapping[str, str] | None = None) -> DistributedContext:
        """The layout of torch's ``env://`` variables (``RANK``, ``WORLD_SIZE``,
        ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``GROUP_WORLD_SIZE``, as the
        harness and ``torchrun`` export them).

        With an initialised default process group, rank and size come from it and the
        collectives use it. ``chief_ip`` defaults to ``$DET_CHIEF_IP``, then ``$MASTER_ADDR``.
        """
        env = os.environ if environ is None else environ
        grouped = _default_group_layout()
        rank, size = grouped if grouped else (_env_int(env, "RANK"), _env_int(env, "WORLD_SIZE"))
        local_size = int(env.get("LOCAL_WORLD_SIZE") or (1 if grouped else
                                                          _env_int(env, "LOCAL_WORLD_SIZE")))
        return cls(
            rank=rank,
            size=size,
            local_rank=int(env.get("LOCAL_RANK") or 0),
            local_size=local_size,
            cross_rank=int(env.get("GROUP_RANK") or 0),
            cross_size=int(env.get("GROUP_WORLD_SIZE") or max(1, size // local_size)),
            chief_ip=chief_ip or env.get("DET_CHIEF_IP") or env.get("MASTER_ADDR"),
            collectives=TorchCollectives() if grouped and size > 1 else None,
        )

    @classmethod
    def from_horovod(cls, hvd: Any, chief_ip: str | None = None) -> DistributedContext:
        """The layout of an initialised ``horovod`` module (``hvd.init()`` called)."""
        if hvd is None:
            raise RuntimeError("DistributedContext.from_horovod needs the horovod module "
                               "(import horovod.torch as hvd; hvd.init())")
        return cls(rank=hvd.rank(), size=hvd.size(), local_rank=hvd.local_rank(),
                   local_size=hvd.local_size(), cross_rank=hvd.cross_rank(),
                   cross_size=hvd.cross_size(),
                   chief_ip=chief_ip or os.environ.get("DET_CHIEF_IP"))

    @classmethod
    def from_deepspeed(cls, chief_ip: str | None = None) -> DistributedContext:
        """The layout of DeepSpeed's variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
        ``LOCAL_SIZE``, ``CROSS_RANK``, ``CROSS_SIZE``); needs deepspeed installed."""
        try:
            import deepspeed  # noqa: F401
        except ImportError:
            raise RuntimeError("DistributedContext.from_deepspeed needs deepspeed, which is "
                               "not installed; use from_torch_distributed()") from None
        env = os.environ
        return cls(rank=_env_int(env, "RANK"), size=_env_int(env, "WORLD_SIZE"),
                   local_rank=_env_int(env, "LOCAL_RANK"), local_size=_env_int(env, "LOCAL_SIZE"),
                   cross_rank=_env_int(env, "CROSS_RANK"), cross_size=_env_int(env, "CROSS_SIZE"),
                   chief_ip=chief_ip or env.get("DET_CHIEF_IP"))

    def allgather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order, on every rank."""
        return self._collectives.allgather(obj)

    def broadcast(self, obj: Any) -> Any:
        """The chief's ``obj`` on every rank (what other ranks pass is ignored)."""
        return self._collectives.broadcast(obj, 0)

    def gather(self, obj: Any) -> list[Any] | None:
        """Every rank's ``obj`` in rank order on the chief; None on the other ranks."""
        return self._collectives.gather(obj, 0)

    def barrier(self) -> None:
        """Wait until every rank has called ``barrier``."""
        self._collectives.barrier()

    def allgather_local(self, obj: Any) -> list[Any]:
        """The ``obj`` of every rank on this node, in local-rank order."""
        mine = self.allgather((self.cross_rank, self.local_rank, obj))
        return [value for node, _, value in sorted(mine, key=lambda t: (t[0], t[1]))
                if node == self.cross_rank]

    def gather_local(self, obj: Any) -> list[Any] | None:
        """The node's objects on its local chief; None on the node's other ranks."""
        local = self.allgather_local(obj)
        return local if self.is_local_chief else None

    def broadcast_local(self, obj: Any = None) -> Any:
        """The local chief's ``obj`` on every rank of its node."""
        return self.allgather_local(obj)[0]

    def close(self) -> None:
        """Nothing to release (Determined's contexts close their sockets here)."""


class DummyDistributedContext(DistributedContext):
    """A world of one process, for running outside a hpcdet job."""

    def __init__(self) -> None:
        super().__init__(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1)


def default_pub_port(environ: Mapping[str, str] | None = None) -> int:
    """The chief's store port: ``$MASTER_PORT + 2`` in a job, else Determined's 12360."""
    env = os.environ if environ is None else environ
    master_port = env.get("MASTER_PORT")
    return int(master_port) + 2 if master_port and master_port.isdigit() else DETERMINED_PUB_PORT


def _default_group_layout() -> tuple[int, int] | None:
    if not is_initialized():  # without importing torch: a group exists only once it is
        return None
    import torch.distributed as dist

    return dist.get_rank(), dist.get_world_size()


def _env_int(env: Mapping[str, str], name: str) -> int:
    value = env.get(name)
    if value is None:
        raise ValueError(f"${name} is not set: the launcher did not describe this rank "
                         f"(needs {', '.join(_RANK_VARS)})")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"${name}={value!r} is not an integer") from None


def _check_layout(rank: int, size: int, local_rank: int, local_size: int, cross_rank: int,
                  cross_size: int) -> None:
    problems = []
    if not 0 <= rank < size:
        problems.append(f"rank {rank} is not in 0..size-1 (size {size})")
    if not 0 <= local_rank < local_size:
        problems.append(f"local_rank {local_rank} is not in 0..local_size-1 "
                        f"(local_size {local_size})")
    if not 0 <= cross_rank < cross_size:
        problems.append(f"cross_rank {cross_rank} is not in 0..cross_size-1 "
                        f"(cross_size {cross_size})")
    if problems:
        raise ValueError("DistributedContext: " + "; ".join(problems))
