"""Training units for :meth:`hpcdet.pytorch.Trainer.fit`: ``Batch(n)`` and ``Epoch(n)``.

As in Determined, an int value is a period (``Batch(100)``: after every 100th batch) and
a container a schedule (``Epoch([1, 5])``: after epochs 1 and 5). An ``Epoch`` boundary
falls on the last batch of an epoch; values below 1 mean "every step".
"""

from __future__ import annotations

import sys
from collections.abc import Container, Mapping
from typing import Any

UNITS = ("batches", "records", "epochs")


class TrainUnit:
    """A length, period or schedule in batches or epochs; use :class:`Batch` or :class:`Epoch`.

    Example::

        trainer.fit(max_length=Epoch(3), validation_period=Batch(500),
                    checkpoint_period=Epoch([1, 3]))
    """

    def __init__(self, value: int | Container[int]) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}(value={self.value!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.value == self.value

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self.value)))

    def should_stop(self, step_num: int) -> bool:
        """Whether step ``step_num`` (batches or epochs done, from 1) is a boundary."""
        if isinstance(self.value, int):
            if self.value < 1:
                return True
            return step_num != 0 and step_num % self.value == 0
        return step_num in self.value

    def due(self, batches: int, batches_per_epoch: int) -> bool:
        """Whether the batch that made ``batches`` done ends a period (or is scheduled)."""
        if isinstance(self, Epoch):
            return batches % batches_per_epoch == 0 and self.should_stop(
                batches // batches_per_epoch
            )
        return self.should_stop(batches)

    def in_batches(self, batches_per_epoch: int) -> int:
        """An int length in batches (``Epoch(n)``: ``n`` epochs of ``batches_per_epoch``)."""
        if not isinstance(self.value, int) or isinstance(self.value, bool):
            raise TypeError(f"{self!r} is a schedule, not a length: give an int value")
        return self.value * batches_per_epoch if isinstance(self, Epoch) else self.value

    @staticmethod
    def from_config(raw: Any, where: str, global_batch_size: int | None = None) -> TrainUnit:
        """``{batches|records|epochs: n}`` of an experiment config as a unit (records in
        whole batches, at least 1); ``n`` < 1 means never. ValueError names ``where``."""
        unit, value = _parse_length(raw, where)
        if value < 1:
            value = sys.maxsize
        if unit == "epochs":
            return Epoch(value)
        if unit == "records":
            if not global_batch_size:
                raise ValueError(
                    f"{where} is in records, which needs the global_batch_size hyperparameter"
                )
            return Batch(max(value // global_batch_size, 1))
        return Batch(value)


class Batch(TrainUnit):
    """Batches: ``Batch(100)`` is every 100 batches; ``Batch([5, 30])`` after batches 5 and 30."""


class Epoch(TrainUnit):
    """Epochs: ``Epoch(2)`` is every 2 epochs; ``Epoch([1, 5])`` after epochs 1 and 5."""


def never() -> Batch:
    """A period that never comes (``fit``'s default validation and checkpoint periods)."""
    return Batch(sys.maxsize)


def _parse_length(raw: Any, where: str) -> tuple[str, int]:
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise ValueError(f"{where} must be one of {{batches|records|epochs: N}}, not {raw!r}")
    ((unit, value),) = raw.items()
    if unit not in UNITS:
        raise ValueError(f"{where}: unit must be batches, records or epochs, not {unit!r}")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where}.{unit} must be an int >= 0, not {value!r}")
    return str(unit), value


def searcher_length(searcher: Mapping[str, Any], global_batch_size: int | None) -> TrainUnit:
    """The trial's length from the experiment config's searcher: ``max_length``, or
    ``max_time`` counted in ``time_metric`` (batches, records or epochs)."""
    if searcher.get("max_length") is not None:
        return TrainUnit.from_config(
            searcher["max_length"], "searcher.max_length", global_batch_size
        )
    if searcher.get("max_time") is not None:
        unit = searcher.get("time_metric") or "batches"
        if unit not in UNITS:
            raise ValueError(
                f"searcher.time_metric must be batches, records or epochs for a PyTorchTrial, "
                f"not {unit!r}"
            )
        return TrainUnit.from_config({unit: searcher["max_time"]}, "searcher.max_time",
                                     global_batch_size)
    raise ValueError(
        "`fit(max_length=X)` must be set with your desired training length (or the "
        "experiment config's searcher.max_length, or searcher.max_time with time_metric)"
    )
