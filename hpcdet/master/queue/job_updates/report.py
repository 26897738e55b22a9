"""After ``det job update``: Slurm's queue read once more, stored, and each job's position
and asked-for order reported from it."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session

from hpcdet.dispatcher import Backend
from hpcdet.dispatcher.queue import QueueEntry
from hpcdet.errors import SchedulerError
from hpcdet.master.queue.job_queue import read_fresh_queue, store_queue

log = logging.getLogger(__name__)

def report_after(session: Session, backend: Backend, results: list[dict[str, Any]]) -> None:
    """Read the queue once more: store it, and report positions and orders from it."""
    try:
        final = read_fresh_queue(backend)
    except SchedulerError as exc:  # the updates stand; only the report is missing
        log.warning("could not read Slurm's queue after updating jobs: %s", exc)
        for result in results:
            result["messages"].append(f"could not read Slurm's queue afterwards: {exc}")
        return
    store_queue(session, final)
    _report_positions(results, final)


def _report_positions(results: list[dict[str, Any]], final: Sequence[QueueEntry]) -> None:
    """Each job's position in the queue read after the updates, and whether an asked-for
    order holds there."""
    positions = {entry.job_id: index for index, entry in enumerate(final, start=1)}
    for result in results:
        result["position"] = positions.get(result["job_id"])
        if result.get("relative_to") and result["ok"]:
            _check_order_holds(result, positions)


def _check_order_holds(result: dict[str, Any], positions: Mapping[str, int]) -> None:
    mine, theirs = positions.get(result["job_id"]), positions.get(result["relative_to"])
    holds = mine is not None and theirs is not None and (mine < theirs) == result["ahead"]
    result["order_holds"] = holds
    side = "ahead of" if result["ahead"] else "behind"
    if holds:
        result["messages"].append(f"job {result['job_id']} is now at position {mine}, {side} "
                                  f"job {result['relative_to']} (position {theirs})")
    else:
        result["messages"].append(f"Slurm's queue does not show job {result['job_id']} "
                                  f"{side} job {result['relative_to']} (positions {mine} and "
                                  f"{theirs}): one of them may have started or changed")
