"""Trial log routes: read (and follow) the lines the master collected from a trial's jobs."""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask import request
from sqlalchemy import Select, func, select

from hpcdet.master.api.access import trial_for
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, int_arg
from hpcdet.master.errors import Invalid
from hpcdet.master.models import TrialLog
from hpcdet.master.reports import serialize

STREAMS = ("stdout", "stderr", "master")
MAX_LINES = 100_000
NODE_MAX = 128  # TrialLog.node's length
QUERY_MAX = 200  # search text (the pages cut theirs to this)


@bp.get("/trials/<int:trial_id>/logs")
def read_logs(trial_id: int) -> Any:
    """Log lines after ``after`` (a log id), the first ``head`` or the last ``tail`` lines.

    ``rank``, ``node``, ``stream``, ``q`` (a case-insensitive substring of the line) and
    ``timestamp_before``/``timestamp_after`` (ISO 8601 times, exclusive; without an offset:
    UTC) narrow every form; with ``q``, ``matched`` counts every line that passes the
    filters.
    """
    trial = trial_for(trial_id)
    query = _filtered(select(TrialLog).where(TrialLog.trial_id == trial_id))
    head, tail = int_arg("head", 0, hi=MAX_LINES), int_arg("tail", 0, hi=MAX_LINES)
    after = int_arg("after", 0, hi=2**62)
    if head and tail:
        raise Invalid("bad_request", "query parameters head and tail: give one of them")
    if tail:
        rows = last_rows(query, tail)
    else:
        limit = head or int_arg("limit", 5000, hi=MAX_LINES)
        rows = list(db().scalars(query.where(TrialLog.id > after).order_by(TrialLog.id)
                                 .limit(limit)))
    last = rows[-1].id if rows else after
    answer = {"logs": [serialize.log_line(r) for r in rows], "last_id": last,
              "trial_state": trial.state}
    if request.args.get("q"):
        counted = _filtered(select(func.count()).select_from(TrialLog)
                            .where(TrialLog.trial_id == trial_id))
        answer["matched"] = int(db().scalar(counted) or 0)
    return answer


def last_rows(query: Select[Any], count: int) -> list[TrialLog]:
    """The last ``count`` log lines ``query`` selects, oldest first."""
    return list(reversed(db().scalars(query.order_by(TrialLog.id.desc()).limit(count)).all()))


def _filtered(query: Select[Any]) -> Select[Any]:
    """``query`` narrowed by the ``rank``, ``node`` and ``stream`` parameters given."""
    if request.args.get("rank"):
        query = query.where(TrialLog.rank == int_arg("rank", 0))
    node = request.args.get("node")
    if node:
        if len(node) > NODE_MAX or not node.isprintable():
            raise Invalid("bad_request", f"query parameter node: at most {NODE_MAX} "
                          "printable characters")
        query = query.where(TrialLog.node == node)
    stream = request.args.get("stream")
    if stream:
        if stream not in STREAMS:
            raise Invalid("bad_request", "query parameter stream: must be one of "
                          + ", ".join(STREAMS))
        query = query.where(TrialLog.stream == stream)
    before, after = _time_arg("timestamp_before"), _time_arg("timestamp_after")
    if before is not None:
        query = query.where(TrialLog.at < before)
    if after is not None:
        query = query.where(TrialLog.at > after)
    text = request.args.get("q")
    if text:
        if len(text) > QUERY_MAX:
            raise Invalid("bad_request", f"query parameter q: at most {QUERY_MAX} "
                          "characters")
        query = query.where(TrialLog.line.icontains(text, autoescape=True))
    return query


def _time_arg(name: str) -> dt.datetime | None:
    """Query parameter ``name`` as an aware time (UTC when it has no offset), or None."""
    raw = request.args.get(name)
    if not raw:
        return None
    try:
        value = dt.datetime.fromisoformat(raw)
    except ValueError:
        raise Invalid("bad_request", f"query parameter {name}: not an ISO 8601 time "
                      "(e.g. 2024-05-01T12:00:00Z)") from None
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.timezone.utc)
    return value.astimezone(dt.timezone.utc)  # SQLite compares the stored UTC text
