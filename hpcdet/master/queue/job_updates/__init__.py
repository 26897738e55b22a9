"""``det job update``: re-map a queued job's priority or pool, or move it in Slurm's order.

Priority and resource pool are *experiment* settings in hpcdet (``resources.priority``,
``resources.resource_pool``), as in Determined, where a job is an experiment. So updating
either for a trial's job changes the experiment's config (later jobs of its trials get the
new value) and re-maps every queued job of the experiment through
:func:`hpcdet.master.queue.placement.place` (``scontrol update`` of partition, QOS and nice). A
command task is one job: only that job changes.

``ahead_of``/``behind_of`` is per job: the job's nice is set so that Slurm's priority puts
it :data:`ORDER_MARGIN` above (below) the other job's (priority = factors - nice, and
Slurm recomputes it at once when nice changes). A later priority update re-maps the nice.

Every update reads Slurm's queue afresh first (one ``squeue``), checks every request
(unknown ids are NotFound, jobs that are not hpcdet's Forbidden, running jobs a
Conflict), applies them in
order, then reads the queue once more to report positions, check that a requested order
holds and refresh the stored ``queue`` snapshot.

The update runs in four steps, one module each: :mod:`.parsing` (the request's shape),
:mod:`.checks` (against the queue), :mod:`.applying` (the scheduler's commands and the
result) and :mod:`.report` (positions afterwards).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from hpcdet.dispatcher import Backend
from hpcdet.master.queue.job_updates.applying import apply_request
from hpcdet.master.queue.job_updates.checks import (
    UpdateAction,
    check_request,
    job_nice_for_position,
    read_queue_state,
)
from hpcdet.master.queue.job_updates.parsing import UPDATE_KEYS, UpdateRequest, parse_update
from hpcdet.master.queue.job_updates.report import report_after
from hpcdet.master.settings.core import MasterSettings

__all__ = ["UPDATE_KEYS", "UpdateRequest", "job_nice_for_position", "parse_update",
           "update_job_placement", "update_jobs"]


def update_job_placement(session: Session, backend: Backend, settings: MasterSettings,
                         job_id: str, *, priority: int | None = None, ahead_of: str | None = None,
                         behind_of: str | None = None, resource_pool: str | None = None,
                         actor: str) -> dict[str, Any]:
    """Update one job; a refusal (ours or Slurm's) is raised (:mod:`hpcdet.master.errors`)."""
    body = {key: value for key, value in (("priority", priority), ("ahead_of", ahead_of),
                                          ("behind_of", behind_of),
                                          ("resource_pool", resource_pool)) if value is not None}
    request = parse_update(job_id, body, f"job {job_id}")
    result = update_jobs(session, backend, settings, [request], actor=actor)[0]
    if not result["ok"]:
        raise result["refusal"]
    return result


def update_jobs(session: Session, backend: Backend, settings: MasterSettings,
                requests: Sequence[UpdateRequest], *, actor: str,
                wheres: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Check every request against a fresh queue, then apply them in order; one result each.

    A request that fails our checks raises before anything is applied; Slurm refusing one
    is reported in its result (``ok`` false, ``error``, ``error_code``, and the refusal
    itself as ``refusal``, which the API answers as its HTTP ``status``) and the others
    still run.
    """
    action = UpdateAction(session, backend, settings, actor,
                          read_queue_state(session, settings, backend))
    places = list(wheres or [f"job {r.job_id}" for r in requests])
    for request, where in zip(requests, places, strict=True):
        check_request(action, request, where)
    results = [apply_request(action, request, where)
               for request, where in zip(requests, places, strict=True)]
    report_after(session, backend, results)
    return results

