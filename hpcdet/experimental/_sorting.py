"""Ordering checkpoints as Determined's ``list_checkpoints``/``top_checkpoint`` do."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hpcdet.experimental._enums import CheckpointSortBy, OrderBy
from hpcdet.experimental.errors import NotFoundException


def _metric_value(row: dict[str, Any], name: str | None) -> float | None:
    """The checkpoint's value of ``name`` (None: the searcher metric), if a number."""
    if name is None:
        value = row.get("searcher_metric_value")
    else:
        value = (row.get("validation_metrics") or {}).get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return float(value)


def sort_checkpoints(rows: list[dict[str, Any]], sort_by: CheckpointSortBy | str | None,
                     order_by: OrderBy | None,
                     smaller_is_better: bool = True) -> list[dict[str, Any]]:
    """``rows`` sorted by a field (CheckpointSortBy) or a validation metric's name (str);
    rows without a value come last either way.

    As Determined's ``list_checkpoints``: without ``sort_by``, by the searcher metric; and
    by the searcher metric without ``order_by``, best first (``smaller_is_better`` is the
    searcher's). Anything else without ``order_by`` is ascending."""
    if sort_by is None:
        sort_by = CheckpointSortBy.SEARCHER_METRIC
    if order_by is None:
        descending = sort_by is CheckpointSortBy.SEARCHER_METRIC and not smaller_is_better
    else:
        descending = OrderBy(order_by) is OrderBy.DESCENDING
    key_of = _key(sort_by)
    present = [r for r in rows if key_of(r) is not None]
    missing = [r for r in rows if key_of(r) is None]
    return sorted(present, key=key_of, reverse=descending) + missing


def _key(sort_by: CheckpointSortBy | str) -> Callable[[dict[str, Any]], Any]:
    """The sort key of a field, the searcher metric or a validation metric's name."""
    if sort_by is CheckpointSortBy.SEARCHER_METRIC:
        return lambda row: _metric_value(row, None)
    if isinstance(sort_by, CheckpointSortBy):
        return _field_key(sort_by.value)
    return lambda row: _metric_value(row, str(sort_by))


def _field_key(field: str) -> Callable[[dict[str, Any]], Any]:
    return lambda row: row.get(field)


def best_first(rows: list[dict[str, Any]], sort_by: str | None,
               smaller_is_better: bool | None) -> list[dict[str, Any]]:
    """The ACTIVE rows with a value of ``sort_by`` (None: the searcher metric), best first;
    NotFoundException when there is none."""
    active = [r for r in rows if r.get("state", "ACTIVE") == "ACTIVE"]
    valued = [r for r in active if _metric_value(r, sort_by) is not None]
    if not valued:
        what = f"metric {sort_by!r}" if sort_by else "the searcher metric"
        raise NotFoundException(f"no checkpoint has a validation of {what}", status=404,
                                code="not_found")
    if smaller_is_better is None:
        smaller_is_better = bool(valued[0].get("smaller_is_better", True))
    return sorted(valued, key=lambda r: (_metric_value(r, sort_by) or 0.0)
                  * (1 if smaller_is_better else -1))
