"""How a DistributedContext exchanges Python objects between ranks.

Three ways, chosen by :class:`~hpcdet.core.DistributedContext`:

* :class:`LocalCollectives`: a world of one;
* :class:`TorchCollectives`: over the default ``torch.distributed`` process group, when
  one exists with this context's rank and size (the harness's group, or the script's own);
* :class:`StoreCollectives`: over a key-value store that the chief serves at
  ``chief_ip:port`` (:mod:`hpcdet.core._kvstore`, no torch needed), for processes in no
  process group: the ranks of a script that does not use torch, or the workers a
  Determined launcher script starts itself (``core_api/4_distributed.py``). Determined
  uses ZMQ sockets on the chief for the same purpose.

Objects are pickled, as in Determined: the ranks of one trial trust each other (they run
the same user's code). Every rank must call every collective, in the same order.
"""

from __future__ import annotations

import hashlib
import pickle
from typing import Any, Protocol

from hpcdet.core._kvstore import KeyValueClient, KeyValueServer, StoreGone
from hpcdet.job.process_group import is_initialized, wait_for_all_ranks
from hpcdet.job.trial_info import TrialInfoError, load_trial_info, read_token

LOOPBACK = "127.0.0.1"


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
    if not is_initialized():  # without importing torch: a group exists only once it is
        return False
    import torch.distributed as dist

    return bool(dist.get_rank() == rank and dist.get_world_size() == size)


class StoreCollectives:
    """Object collectives through a key-value store the chief serves over TCP.

    Round ``n`` of a collective writes ``c<n>/<rank>`` keys and reads the ones it needs;
    then every other rank acknowledges (``c<n>/ack/<rank>``) and the chief, once it has
    every acknowledgement, deletes the round's keys. So the store stays small however many
    rounds a run makes, and the chief, which serves the store, leaves its last collective
    only after every rank is done with it: it may then exit without cutting anyone off.

    The store is :mod:`hpcdet.core._kvstore` (the standard library: a trial that never
    imports torch does not load it for its collectives); its connections prove the
    trial's secret (:func:`trial_secret`).
    """

    def __init__(self, *, rank: int, size: int, host: str, port: int,
                 timeout_s: float, secret: bytes | None = None) -> None:
        self._rank, self._size = rank, size
        self._round = 0
        key = trial_secret() if secret is None else secret
        self._server = (KeyValueServer(port, secret=key, wait_timeout_s=timeout_s)
                        if rank == 0 else None)
        self._store = KeyValueClient(host if rank else LOOPBACK, port, secret=key,
                                     timeout_s=timeout_s)

    def close(self) -> None:
        """Close this rank's connection (and, on the chief, the store)."""
        self._store.close()
        if self._server is not None:
            self._server.close()

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
        self._store.set(key, pickle.dumps(obj))

    def _read(self, key: str, rank: int) -> Any:
        return pickle.loads(self._store.get(f"{key}/{rank}"))  # waits until it is set

    def _done(self, key: str) -> None:
        if self._rank != 0:
            try:
                self._store.set(f"{key}/ack/{self._rank}", b"")
            except StoreGone:
                # The chief had the acknowledgement (it waits for every one before it
                # can leave) and ended before its store's answer went out: this rank has
                # what it needed from the round. Were the chief dead instead, the next
                # collective says so.
                pass
            return
        acks = [f"{key}/ack/{rank}" for rank in range(1, self._size)]
        self._store.wait(acks)
        for name in [*acks, *(f"{key}/{rank}" for rank in range(self._size))]:
            self._store.delete_key(name)


def trial_secret() -> bytes:
    """The key the trial's ranks prove themselves to the chief's store with.

    A hash of the trial's token (``$DET_TRIAL_INFO``'s job directory), which only the
    trial's user can read; empty where there is none (an unmanaged run, or outside a job).
    """
    try:
        token = read_token(load_trial_info())
    except TrialInfoError:
        return b""
    return hashlib.sha256(b"hpcdet core store\0" + token.encode()).digest()
