"""Reducing metrics across batches and ranks: the ``Reducer`` enum and ``MetricReducer``."""

from __future__ import annotations

import abc
import enum
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch


class Reducer(enum.Enum):
    """How a validation metric is combined over all batches of all ranks.

    ``AVG`` (the default) is the mean over every batch of every rank; ``SUM``, ``MAX`` and
    ``MIN`` are what they say. Return one from ``evaluation_reducer()`` for all metrics,
    or a ``{metric name: Reducer}`` dict (metrics left out use ``AVG``).
    """

    AVG = 1
    SUM = 2
    MAX = 3
    MIN = 4


class MetricReducer(abc.ABC):
    """A custom reduction, registered with ``context.wrap_reducer(reducer, name)``.

    Feed it from ``evaluate_batch`` (e.g. ``self.reducer.update(preds, labels)``); after
    validation the trainer calls :meth:`per_slot_reduce` on every rank, gathers the
    results, and :meth:`cross_slot_reduce` turns the list (in rank order) into the
    metric's value, or into a dict of metrics when it was wrapped without a name.
    :meth:`reset` runs before each validation.
    """

    @abc.abstractmethod
    def reset(self) -> None:
        """Forget what was fed since the last validation."""

    @abc.abstractmethod
    def per_slot_reduce(self) -> Any:
        """This rank's partial result (picklable)."""

    @abc.abstractmethod
    def cross_slot_reduce(self, per_slot_metrics: list[Any]) -> Any:
        """The final value from every rank's :meth:`per_slot_reduce`, in rank order."""


def as_float(name: str, value: Any) -> float:
    """A batch metric as a float; tensors must hold a single number."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(
                f"metric {name!r} must be a single number, not shape {tuple(value.shape)}"
            )
        return float(value.item())
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"metric {name!r} must be a number or a 1-element tensor, not {value!r}")
    return float(value)


class BatchMetricsSummary:
    """Per-metric sum, count, max and min over the batches one rank evaluated."""

    def __init__(self) -> None:
        self.stats: dict[str, list[float]] = {}

    def add(self, metrics: Mapping[str, Any]) -> None:
        for name, value in metrics.items():
            number = as_float(name, value)
            stat = self.stats.setdefault(name, [0.0, 0.0, -math.inf, math.inf])
            stat[0] += number
            stat[1] += 1
            stat[2] = max(stat[2], number)
            stat[3] = min(stat[3], number)


def reducer_for(reducers: Reducer | Mapping[str, Reducer], name: str) -> Reducer:
    if isinstance(reducers, Reducer):
        return reducers
    return reducers.get(name, Reducer.AVG)


def check_reducers(reducers: Any) -> Reducer | Mapping[str, Reducer]:
    """``evaluation_reducer()``'s answer, checked."""
    if isinstance(reducers, Reducer):
        return reducers
    if isinstance(reducers, Mapping) and all(isinstance(r, Reducer) for r in reducers.values()):
        return reducers
    raise TypeError(
        "evaluation_reducer() must return a Reducer or a dict of {metric name: Reducer}, "
        f"not {reducers!r}"
    )


def combine_summaries(
    per_rank: Sequence[dict[str, list[float]]], reducers: Reducer | Mapping[str, Reducer]
) -> dict[str, float]:
    """The final metrics from every rank's :class:`BatchMetricsSummary` stats."""
    names = sorted({name for stats in per_rank for name in stats})
    result: dict[str, float] = {}
    for name in names:
        stats = [rank[name] for rank in per_rank if name in rank]
        result[name] = _reduce(reducer_for(reducers, name), stats)
    return result


def _reduce(reducer: Reducer, stats: list[list[float]]) -> float:
    if reducer is Reducer.SUM:
        return sum(s[0] for s in stats)
    if reducer is Reducer.MAX:
        return max(s[2] for s in stats)
    if reducer is Reducer.MIN:
        return min(s[3] for s in stats)
    return sum(s[0] for s in stats) / sum(s[1] for s in stats)
