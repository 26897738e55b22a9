"""Job queue routes: list Slurm's queue (from the stored snapshot) and update queued jobs.

``GET /jobs`` never runs a Slurm command; the updates do (one ``squeue`` before, one
``scontrol update`` per changed job, one ``squeue`` after), as user actions.
"""

from __future__ import annotations

from typing import Any

from flask import current_app, request

from hpcdet.dispatcher import Backend
from hpcdet.dispatcher.queue import personal_words
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, json_body, settings, with_reason_words
from hpcdet.master.api.refusals import http_status
from hpcdet.master.errors import Invalid
from hpcdet.master.queue.array_rows import group_arrays
from hpcdet.master.queue.job_filters import JobFilter
from hpcdet.master.queue.job_queue import job_list
from hpcdet.master.queue.job_updates import (
    UpdateRequest,
    parse_update,
    update_job_placement,
    update_jobs,
)

MAX_BATCH = 1000


@bp.get("/jobs")
def list_jobs() -> Any:
    """Slurm's pending and running jobs in priority order (``?resource_pool=P``: one pool;
    ``?user=U``: one user's; ``?q=TEXT``: rows holding TEXT; positions stay the queue's;
    ``?arrays=grouped``: one row per job array, with its tasks counted by state)."""
    actor = current_user()
    listing = job_list(db(), settings(), request.args.get("resource_pool") or None, actor)
    wanted = JobFilter.of(request.args.get("user"), request.args.get("q"),
                          settings().resource_manager.type)
    if not wanted.empty:
        listing["jobs"] = wanted.apply(listing["jobs"])
    if request.args.get("arrays") == "grouped":
        listing["jobs"] = group_arrays(listing["jobs"])
    listing["jobs"] = [owner_reason_words(row, actor) for row in listing["jobs"]]
    return listing


def owner_reason_words(row: dict[str, Any], viewer: str | None) -> dict[str, Any]:
    """``row`` with its reason in words as ``viewer`` reads them: "your QOS ..." on their
    own job, "bob's QOS ..." on bob's (:func:`~hpcdet.dispatcher.queue.personal_words`)."""
    row = with_reason_words(row, "reason", "reason_words")
    row["reason_words"] = personal_words(row["reason_words"], row.get("user"), viewer)
    return row


@bp.post("/jobs/<job_id>/update")
def update_one_job(job_id: str) -> Any:
    """Body ``{priority?, ahead_of?, behind_of?, resource_pool?}`` (see job_updates)."""
    actor = current_user()
    parsed = parse_update(job_id, json_body(), f"job {job_id}")
    result = update_job_placement(db(), _backend(), settings(), parsed.job_id,
                                  priority=parsed.priority, ahead_of=parsed.ahead_of,
                                  behind_of=parsed.behind_of,
                                  resource_pool=parsed.resource_pool, actor=actor)
    db().commit()
    return {"result": result}


@bp.post("/jobs/update-batch")
def update_job_batch() -> Any:
    """Body ``{updates: [{job_id, priority?, ...}, ...]}``: all checked first, then applied in
    order; one result per update."""
    actor = current_user()
    items = json_body().get("updates")
    if not isinstance(items, list) or not items or len(items) > MAX_BATCH:
        raise Invalid("bad_request", f"updates: must be a list of 1 to {MAX_BATCH} "
                      "updates like {\"job_id\": \"123\", \"priority\": 5}")
    requests = [_batch_item(item, f"updates[{index}]") for index, item in enumerate(items)]
    wheres = [f"updates[{index}] (job {r.job_id})" for index, r in enumerate(requests)]
    results = update_jobs(db(), _backend(), settings(), requests, actor=actor, wheres=wheres)
    db().commit()
    return {"results": [_answered(result) for result in results]}


def _batch_item(item: Any, where: str) -> UpdateRequest:
    if not isinstance(item, dict) or "job_id" not in item:
        raise Invalid("bad_request", f"{where}: must be an object with a job_id")
    body = {key: value for key, value in item.items() if key != "job_id"}
    return parse_update(item["job_id"], body, where)


def _answered(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` for the client: a refused update's refusal as its HTTP ``status``."""
    refusal = result.pop("refusal", None)
    if refusal is not None:
        result["status"] = http_status(refusal)
    return result


def _backend() -> Backend:
    backend: Backend = current_app.config["HPCDET_BACKEND"]
    return backend
