"""``core_context.searcher``: Determined 0.38's deprecated SearcherContext.

In Determined 0.38 ``searcher.operations()`` no longer asks the master anything: it warns
(``FutureWarning``) and yields **one** operation whose ``length`` is the experiment
config's ``searcher.max_length`` (its number, whatever the unit). The chief's operation must
be completed with ``op.report_completed(metric)``; the other ranks get theirs from the chief
(``SearcherMode.WorkersAskChief``, the default). ``op.report_progress(length)`` reports
``length / op.length`` as the trial's progress. hpcdet does the same; outside a job the
operation's length is 1, and its reports are printed.

Example (still works, but set the training length in your code instead)::

    for op in core_context.searcher.operations():
        while batches < op.length:
            train_batch(); batches += 1
        op.report_completed(validate())
"""

from __future__ import annotations

import enum
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from hpcdet.core._distributed import DistributedContext

_DEPRECATED = ("SearcherContext.operations() was deprecated in Determined 0.38.0 and will be "
               "removed in a future version.  Instead, you should set your training length "
               "directly in your training code.")
_MISSING = ("SearcherContext was not created because your experiment config does not have the "
            "searcher.max_length set.  Both the searcher.max_length and the SearcherContext are "
            "deprecated.  Instead, you should specify your training length directly in your "
            "training code and avoid all calls to core_context.searcher.")
ProgressPoster = Callable[[float], None]


class Unit(enum.Enum):
    """The unit of ``searcher.max_length``."""

    EPOCHS = "EPOCHS"
    RECORDS = "RECORDS"
    BATCHES = "BATCHES"


class SearcherMode(enum.Enum):
    """Who calls ``operations()``: every rank in step (default), or the chief only."""

    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHEIF_ONLY"  # Determined's spelling of the value


class SearcherOperation:
    """One train-validate-report cycle: train until ``length``, then ``report_completed``."""

    def __init__(self, length: int, *, is_chief: bool,
                 progress: ProgressPoster | None = None) -> None:
        self._length = length
        self._is_chief = is_chief
        self._progress = progress
        self._completed = False

    @property
    def length(self) -> int:
        """The total training (in the config's unit) to reach before validating."""
        return self._length

    def report_progress(self, length: float) -> None:
        """Report training done so far, in the unit of :attr:`length` (chief only)."""
        if not self._is_chief:
            raise RuntimeError("you must only call op.report_progress() from the chief worker")
        if self._completed and length != self._length:
            raise RuntimeError("you must not call op.report_progress() after "
                               "op.report_completed()")
        fraction = min(1.0, max(0.0, length / self._length)) if self._length else 1.0
        if self._progress is not None:
            self._progress(fraction)
        else:
            print(f"hpcdet core (dummy): progress report: {length}/{self._length}",
                  file=sys.stderr, flush=True)

    def report_completed(self, searcher_metric: Any) -> None:
        """End the cycle with the searcher metric's value (chief only, once)."""
        if not self._is_chief:
            raise RuntimeError("you must only call op.report_completed() from the chief worker")
        if self._completed:
            raise RuntimeError("you may only call op.report_completed() once")
        self._completed = True


class SearcherContext:
    """Yields the one operation of Determined 0.38 (see the module's docstring)."""

    def __init__(self, dist: DistributedContext, max_length: int | None,
                 units: Unit | None = None, progress: ProgressPoster | None = None) -> None:
        self._dist = dist
        self._length = max_length
        self._units = units
        self._progress = progress

    def operations(self, searcher_mode: SearcherMode = SearcherMode.WorkersAskChief,
                   auto_ack: bool = True) -> Iterator[SearcherOperation]:
        """One operation of length ``searcher.max_length``; warns (FutureWarning)."""
        warnings.warn(_DEPRECATED, FutureWarning, stacklevel=2)
        if self._length is None:
            raise ValueError(_MISSING)
        yield from self._operations(SearcherMode(searcher_mode), self._length)

    def _operations(self, mode: SearcherMode, length: int) -> Iterator[SearcherOperation]:
        if self._dist.rank != 0:
            yield from self._worker_operations(mode)
            return
        op = SearcherOperation(length, is_chief=True, progress=self._progress)
        if mode is SearcherMode.WorkersAskChief:
            self._dist.broadcast(op.length)
        yield op
        if not op._completed:
            raise RuntimeError("you must call op.report_completed() on each operation")
        if mode is SearcherMode.WorkersAskChief:
            self._dist.broadcast(None)

    def _worker_operations(self, mode: SearcherMode) -> Iterator[SearcherOperation]:
        if mode is not SearcherMode.WorkersAskChief:
            raise RuntimeError("you cannot call searcher.operations(searcher_mode=ChiefOnly) "
                               "from a non-chief worker.")
        while (length := self._dist.broadcast(None)) is not None:
            yield SearcherOperation(length, is_chief=False)

    def acknowledge_out_of_ops(self) -> None:
        """Ignored, as in Determined 0.38."""
        if self._length is None:
            raise ValueError(_MISSING)

    def get_configured_units(self) -> Unit | None:
        """The unit ``searcher.max_length`` names; None for a bare number."""
        if self._length is None:
            raise ValueError(_MISSING)
        return self._units


def searcher_context(dist: DistributedContext, experiment_config: Mapping[str, Any],
                     progress: ProgressPoster | None) -> SearcherContext:
    """The searcher context of a job, from the config's ``searcher.max_length``."""
    searcher = experiment_config.get("searcher")
    searcher = searcher if isinstance(searcher, Mapping) else {}
    length, units = parse_max_length(searcher.get("max_length"))
    if "unit" in searcher:
        units = _UNITS.get(str(searcher["unit"]))
    return SearcherContext(dist, length, units, progress)


def dummy_searcher_context(dist: DistributedContext) -> SearcherContext:
    """Outside a job: one operation of length 1, in epochs (Determined's dummy)."""
    return SearcherContext(dist, 1, Unit.EPOCHS)


_UNITS = {"records": Unit.RECORDS, "epochs": Unit.EPOCHS, "batches": Unit.BATCHES}


def parse_max_length(value: Any) -> tuple[int | None, Unit | None]:
    """``max_length: 50`` -> (50, None); ``{"epochs": 3}`` -> (3, EPOCHS); absent -> None."""
    if isinstance(value, bool):
        return None, None
    if isinstance(value, int):
        return value, None
    if isinstance(value, Mapping) and len(value) == 1:
        (unit, length), = value.items()
        if isinstance(length, int) and not isinstance(length, bool):
            return length, _UNITS.get(str(unit))
    return None, None
