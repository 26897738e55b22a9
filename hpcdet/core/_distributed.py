"""The distributed context: who this rank is, and object collectives over all ranks."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Protocol

from hpcdet.harness.distributed import wait_for_all_ranks


class Collectives(Protocol):
    """The four object collectives the Core API needs; every rank must call them in step."""

    def allgather(self, obj: Any) -> list[Any]: ...

    def broadcast(self, obj: Any, src: int) -> Any: ...

    def gather(self, obj: Any, dst: int) -> list[Any] | None: ...

    def barrier(self) -> None: ...


class LocalCollectives:
    """Collectives for a world of one: nothing to exchange."""

    def allgather(self, obj: Any) -> list[Any]:
        return [obj]

    def broadcast(self, obj: Any, src: int) -> Any:
        return obj

    def gather(self, obj: Any, dst: int) -> list[Any] | None:
        return [obj]

    def barrier(self) -> None:
        return None


class TorchCollectives:
    """Object collectives over the default ``torch.distributed`` process group.

    Objects are pickled; with NCCL they travel through the current CUDA device, which the
    harness sets to the rank's GPU before it joins the group.
    """

    def allgather(self, obj: Any) -> list[Any]:
        import torch.distributed as dist

        out: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(out, obj)
        return out

    def broadcast(self, obj: Any, src: int) -> Any:
        import torch.distributed as dist

        box = [obj]
        dist.broadcast_object_list(box, src=src)
        return box[0]

    def gather(self, obj: Any, dst: int) -> list[Any] | None:
        import torch.distributed as dist

        is_dst = dist.get_rank() == dst
        out: list[Any] | None = [None] * dist.get_world_size() if is_dst else None
        dist.gather_object(obj, out, dst=dst)
        return out

    def barrier(self) -> None:
        wait_for_all_ranks()


class DistributedContext:
    """This rank's place in the trial, and collectives over all its ranks.

    ``rank``/``size`` count processes over the whole trial, ``local_*`` the processes on
    this node, and ``cross_*`` the nodes. Every collective must be called by every rank,
    in the same order, or the ranks deadlock.

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
        collectives: Collectives | None = None,
    ) -> None:
        if size > 1 and collectives is None:
            raise ValueError("a DistributedContext with size > 1 needs collectives")
        self.rank = rank
        self.size = size
        self.local_rank = local_rank
        self.local_size = local_size
        self.cross_rank = cross_rank
        self.cross_size = cross_size
        self._collectives: Collectives = collectives or LocalCollectives()

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

    @classmethod
    def from_torch_distributed(cls, environ: Mapping[str, str] | None = None) -> DistributedContext:
        """Wrap the initialised default process group.

        Rank and size come from torch; the node layout from the ``env://`` variables the
        harness (or ``torchrun``) exported.
        """
        import torch.distributed as dist

        env = os.environ if environ is None else environ
        size = dist.get_world_size()
        local_size = int(env.get("LOCAL_WORLD_SIZE") or 1)
        return cls(
            rank=dist.get_rank(),
            size=size,
            local_rank=int(env.get("LOCAL_RANK") or 0),
            local_size=local_size,
            cross_rank=int(env.get("GROUP_RANK") or 0),
            cross_size=int(env.get("GROUP_WORLD_SIZE") or max(1, size // local_size)),
            collectives=TorchCollectives() if size > 1 else None,
        )

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


class DummyDistributedContext(DistributedContext):
    """A world of one process, for running outside a hpcdet job."""

    def __init__(self) -> None:
        super().__init__(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1)
