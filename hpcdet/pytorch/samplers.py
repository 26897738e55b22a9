"""Determined's ``determined.pytorch.samplers``: building blocks for a sampler chain.

Chain them in this order, as Determined advises: shuffle (reproducibly), then skip
what a resumed trial already trained on, then repeat, then shard across ranks::

    sampler = ReproducibleShuffleSampler(SequentialSampler(dataset), seed)
    batches = BatchSampler(sampler, batch_size, drop_last=False)
    batches = SkipBatchSampler(batches, batches_trained)
    batches = DistributedBatchSampler(RepeatBatchSampler(batches), size, rank)

The names, arguments and lengths are Determined's; ``hpcdet.pytorch.DataLoader`` does
not need them (it shards and resumes by itself), they are for scripts that build their
own loaders.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from typing import Any

import numpy as np
import torch.utils.data

__all__ = [
    "DistributedBatchSampler",
    "DistributedSampler",
    "RepeatBatchSampler",
    "RepeatSampler",
    "ReproducibleShuffleBatchSampler",
    "ReproducibleShuffleSampler",
    "SkipBatchSampler",
    "SkipSampler",
]


def _len(sampler: Any) -> int:
    if not isinstance(sampler, Sized):
        raise TypeError(f"{type(sampler).__name__} has no length")
    return len(sampler)


def _check_shard(num_workers: int, rank: int) -> None:
    if rank < 0:
        raise ValueError("rank must be non-negative.")
    if num_workers < 1:
        raise ValueError("num_workers must be greater than zero.")
    if rank >= num_workers:
        raise ValueError("rank must be less than num_workers.")


def _every_nth(items: Iterable[Any], num_workers: int, rank: int) -> Iterator[Any]:
    """Items ``rank``, ``rank + num_workers``, ... of ``items``."""
    for i, item in enumerate(items):
        if i % num_workers == rank:
            yield item


def _skip(items: Iterable[Any], skip: int) -> Iterator[Any]:
    """``items`` without the first ``skip``."""
    iterator = iter(items)
    for _ in range(skip):
        if next(iterator, _END) is _END:
            return
    yield from iterator


_END = object()


class RepeatSampler(torch.utils.data.Sampler[Any]):
    """Yields the indices of ``sampler`` over and over, forever; its length is one pass."""

    def __init__(self, sampler: torch.utils.data.Sampler[Any]) -> None:
        self._sampler = sampler

    def __len__(self) -> int:
        return _len(self._sampler)

    def __iter__(self) -> Iterator[Any]:
        while True:
            yield from self._sampler


class RepeatBatchSampler(torch.utils.data.BatchSampler):
    """Yields the batches of ``batch_sampler`` over and over, forever; length: one pass."""

    def __init__(self, batch_sampler: torch.utils.data.BatchSampler) -> None:
        self.batch_sampler = batch_sampler

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def __iter__(self) -> Iterator[list[int]]:
        while True:
            yield from self.batch_sampler


class DistributedSampler(torch.utils.data.Sampler[Any]):
    """This rank's share of another sampler: its items ``rank``, ``rank + num_workers``, ...

    Unlike ``torch.utils.data.DistributedSampler`` it neither shuffles nor pads: it is a
    link in a chain, and its input may change length.
    """

    def __init__(self, sampler: torch.utils.data.Sampler[Any], num_workers: int,
                 rank: int) -> None:
        self._sampler = sampler
        self._num_workers = num_workers
        self._rank = rank

    def __len__(self) -> int:
        total = _len(self._sampler)
        return total // self._num_workers + int(total % self._num_workers > self._rank)

    def __iter__(self) -> Iterator[Any]:
        return _every_nth(self._sampler, self._num_workers, self._rank)


class DistributedBatchSampler(torch.utils.data.BatchSampler):
    """This rank's share of another batch sampler's batches (every ``num_workers``-th).

    Over a finite batch sampler whose length ``num_workers`` does not divide, ranks get
    different numbers of batches (Determined's caveat): repeat before sharding to train.
    """

    def __init__(self, batch_sampler: torch.utils.data.BatchSampler, num_workers: int,
                 rank: int) -> None:
        _check_shard(num_workers, rank)
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.rank = rank

    def __len__(self) -> int:
        total = len(self.batch_sampler)
        return total // self.num_workers + int(total % self.num_workers > self.rank)

    def __iter__(self) -> Iterator[list[int]]:
        return _every_nth(self.batch_sampler, self.num_workers, self.rank)


class SkipSampler(torch.utils.data.BatchSampler):
    """Skips the first ``skip`` items of ``sampler``. Skip before repeating (or every pass
    skips); prefer :class:`SkipBatchSampler`, as Determined counts batches, not records.
    Its length is the underlying sampler's, whatever the skip (Determined's choice)."""

    def __init__(self, sampler: Any, skip: int) -> None:
        self._sampler = sampler
        self._skip = skip

    def __len__(self) -> int:
        return _len(self._sampler)

    def __iter__(self) -> Iterator[Any]:
        return _skip(self._sampler, self._skip)


class SkipBatchSampler(torch.utils.data.BatchSampler):
    """Skips the first ``skip`` batches of ``batch_sampler`` (a resumed trial's trained
    batches). Skip before repeating; the length is the underlying one (Determined's)."""

    def __init__(self, batch_sampler: torch.utils.data.BatchSampler, skip: int) -> None:
        self.batch_sampler = batch_sampler
        self.skip = skip
        self.length = len(batch_sampler)

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def __iter__(self) -> Iterator[list[int]]:
        return _skip(self.batch_sampler, self.skip)


class ReproducibleShuffleSampler(torch.utils.data.Sampler[Any]):
    """Shuffles ``sampler``'s items with a NumPy generator seeded once with ``seed``: the
    same seed gives the same sequence of epochs. Shuffle before skipping and repeating."""

    def __init__(self, sampler: torch.utils.data.Sampler[Any], seed: int) -> None:
        self._sampler = sampler
        self._rng = np.random.RandomState(seed)

    def __iter__(self) -> Iterator[Any]:
        indices = list(self._sampler)
        self._rng.shuffle(indices)
        return iter(indices)

    def __len__(self) -> int:
        return _len(self._sampler)


class ReproducibleShuffleBatchSampler(torch.utils.data.Sampler[Any]):
    """Shuffles the order of ``batch_sampler``'s batches reproducibly (``seed``); prefer
    :class:`ReproducibleShuffleSampler`, which varies what each batch holds."""

    def __init__(self, batch_sampler: torch.utils.data.BatchSampler, seed: int) -> None:
        self._batch_sampler = batch_sampler
        self._rng = np.random.RandomState(seed)

    def __iter__(self) -> Iterator[Any]:
        batches = list(self._batch_sampler)
        self._rng.shuffle(batches)
        return iter(batches)

    def __len__(self) -> int:
        return len(self._batch_sampler)
