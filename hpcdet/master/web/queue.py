"""``/queue`` (``?pool=P``): Slurm's queue merged with hpcdet's jobs, in priority order.

Rendered from the ``queue`` snapshot (a request never runs a Slurm command); the page then
polls ``/api/v1/jobs``. Pending reasons are shown in words, with Slurm's code kept.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask import render_template, request

from hpcdet.dispatcher.reasons import REASONS, reason_words
from hpcdet.errors import ConfigError
from hpcdet.master.api.common import db, settings
from hpcdet.master.queue.job_queue import job_list
from hpcdet.master.queue.snapshots import QUEUE, load_snapshot
from hpcdet.master.web import bp
from hpcdet.master.web.formatting import poll_seconds, taken_text
from hpcdet.master.web.identity import page_user


@bp.get("/queue")
def queue() -> tuple[str, int]:
    """The merged queue (of one pool); an unknown pool is a 400 page naming the known ones."""
    pool = request.args.get("pool") or None
    try:
        listing = job_list(db(), settings(), pool, page_user())
    except ConfigError as exc:
        found = load_snapshot(db(), QUEUE)
        return _render(pool, [], None if found is None else found[1], errors=exc.errors), 400
    taken = listing["taken_at"]  # job_list read the snapshot already: not a second time
    return _render(pool, [_with_words(row) for row in listing["jobs"]],
                   dt.datetime.fromisoformat(taken) if taken else None), 200


def _render(pool: str | None, jobs: list[dict[str, Any]], taken_at: dt.datetime | None, *,
            errors: list[str] | None = None) -> str:
    return render_template("queue.html", page="queue", pool=pool, jobs=jobs,
                           errors=errors or [], reasons=REASONS, taken=taken_text(taken_at),
                           poll_seconds=poll_seconds())


def _with_words(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "reason_words": reason_words(row.get("reason"))}
