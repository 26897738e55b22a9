"""A trial's (or an experiment's) checkpoints as the pages list them: size, where the files
are, the searcher metric's value, and which one is the best and which the latest.

"Best": the ACTIVE checkpoint whose validation of the searcher metric is best (none without
a validated one). "Latest": the ACTIVE checkpoint with the most steps (ties: the newest
report), the one a paused or continued trial resumes from. Deleted checkpoints are listed
but never marked: their files are gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hpcdet.master.models import Checkpoint
from hpcdet.master.reports import serialize
from hpcdet.master.reports.checkpoint_gc import ACTIVE
from hpcdet.master.reports.searcher_metric import SearcherMetric


def size_bytes(checkpoint: Checkpoint) -> int | None:
    """The sum of the file sizes the harness reported (``resources``: path -> bytes)."""
    sizes = [value for value in (checkpoint.resources or {}).values()
             if isinstance(value, int) and not isinstance(value, bool)]
    return sum(sizes) if sizes else None


def best_uuid(rows: Iterable[Checkpoint], metric: SearcherMetric) -> str | None:
    """The ACTIVE checkpoint with the best searcher-metric validation, or None."""
    scored = [(metric.key(value), c.uuid) for c in rows if c.state == ACTIVE
              and (value := metric.value_in(c.validation_metrics)) is not None]
    return min(scored)[1] if scored else None


def latest_uuid(rows: Iterable[Checkpoint]) -> str | None:
    """The ACTIVE checkpoint with the most steps (the newest report among equals)."""
    active = [c for c in rows if c.state == ACTIVE]
    if not active:
        return None
    return max(active, key=lambda c: (c.steps_completed, c.reported_at)).uuid


def marked(rows: Sequence[Checkpoint], config: dict[str, Any], storage_dir: str | None,
           latest_by_trial: dict[int, str | None] | None = None) -> list[dict[str, Any]]:
    """Each checkpoint as :func:`serialize.checkpoint` plus ``size_bytes``,
    ``storage_path``, ``searcher_metric`` (its name), ``searcher_metric_value``, ``best``
    and ``latest``.

    ``latest_by_trial``: each trial's latest uuid when ``rows`` is only a page of them.
    """
    metric = SearcherMetric.of(config)
    best = best_uuid(rows, metric)
    latest = latest_by_trial if latest_by_trial is not None else {
        trial_id: latest_uuid(c for c in rows if c.trial_id == trial_id)
        for trial_id in {c.trial_id for c in rows}}
    answer = []
    for c in rows:
        body = serialize.checkpoint(c)
        body.update(size_bytes=size_bytes(c),
                    storage_path=f"{storage_dir}/{c.uuid}" if storage_dir else None,
                    searcher_metric=metric.name,
                    searcher_metric_value=metric.value_in(c.validation_metrics),
                    best=c.uuid == best, latest=c.uuid == latest.get(c.trial_id))
        answer.append(body)
    return answer
