"""How a DistributedContext exchanges Python objects between ranks.

Three ways, chosen by :class:`~hpcdet.core.DistributedContext`:

* :class:`LocalCollectives`: a world of one;
* :class:`TorchCollectives`: over the default ``torch.distributed`` process group, when
  one exists with this context's rank and size (the harness's group, or the script's own);
* :class:`StoreCollectives`: over a ``torch.distributed.TCPStore`` that the chief serves
  at ``chief_ip:port``, for processes in no process group, e.g. the workers a Determined
  launcher script starts itself (``core_api/4_distributed.py``). Determined uses ZMQ
  sockets on the chief for the same purpose.

Objects are pickled, as in Determined: the ranks of one trial trust each other (they run
the same user's code). Every rank must call every collective, in the same order.
"""

from __future__ import annotations

import datetime
import pickle
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


def default_group_matches(rank: int, size: int) -> bool:
    """Whether a default process group exists with exactly this rank and size."""
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    if not (dist.is_available() and dist.is_initialized()):
        return False
    return bool(dist.get_rank() == rank and dist.get_world_size() == size)


class StoreCollectives:
    """Object collectives through a key-value store the chief serves over TCP.

    Round ``n`` of a collective writes ``c<n>/<rank>`` keys and reads the ones it needs;
    the last rank done with a round deletes its keys, so the store stays small however
    many rounds a long training run makes.
    """

    def __init__(self, *, rank: int, size: int, host: str, port: int,
                 timeout_s: float) -> None:
        try:
            import torch.distributed as dist
        except ImportError:
            raise RuntimeError("a DistributedContext over several processes needs torch "
                               "(its key-value store carries the collectives)") from None
        self._rank, self._size = rank, size
        self._round = 0
        self._store = dist.TCPStore(  # type: ignore[attr-defined]
            host, port, size, rank == 0, datetime.timedelta(seconds=timeout_s),
            wait_for_workers=True)

    def allgather(self, obj: Any) -> list[Any]:
        key = self._next_round()
        self._put(f"{key}/{self._rank}", obj)
        out = [self._read(key, rank) for rank in range(self._size)]
        self._done(key)
        return out

    def broadcast(self, obj: Any, src: int) -> Any:
        key = self._next_round()
        if self._rank == src:
            self._put(f"{key}/{src}", obj)
        out = self._read(key, src)
        self._done(key)
        return out

    def gather(self, obj: Any, dst: int) -> list[Any] | None:
        key = self._next_round()
        self._put(f"{key}/{self._rank}", obj)
        out = ([self._read(key, rank) for rank in range(self._size)]
               if self._rank == dst else None)
        self._done(key)
        return out

    def barrier(self) -> None:
        self.allgather(None)

    def _next_round(self) -> str:
        self._round += 1
        return f"c{self._round}"

    def _put(self, key: str, obj: Any) -> None:
        # The stubs say str; the store takes bytes as they are (pickles are not UTF-8).
        self._store.set(key, pickle.dumps(obj))  # type: ignore[arg-type]

    def _read(self, key: str, rank: int) -> Any:
        return pickle.loads(self._store.get(f"{key}/{rank}"))  # waits until it is set

    def _done(self, key: str) -> None:
        if self._store.add(f"{key}/done", 1) == self._size:
            for rank in range(self._size):
                self._store.delete_key(f"{key}/{rank}")
            self._store.delete_key(f"{key}/done")
