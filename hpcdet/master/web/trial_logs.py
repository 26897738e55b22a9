"""A trial's logs on its page: the search filter, error levels, and the whole log as text.

Harness lines go to stderr because Python's logging writes there, so the stream says
nothing about trouble: a line is marked as an error or a warning by its own words (the
level names logging writes, a traceback, ``SomethingError:``), and the stream is only shown
in the line's prefix.

``/trials/<id>/logs.txt`` streams every line that passes the page's filter (``rank``,
``stream``, ``q``), oldest first, read from the database a batch at a time so a long log
is neither held in memory nor in one long query.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from flask import Response, render_template, request, stream_with_context
from sqlalchemy import Select, func, select

from hpcdet.master.api.common import db
from hpcdet.master.api.logs import STREAMS
from hpcdet.master.models import Experiment, Trial, TrialLog
from hpcdet.master.reports import serialize
from hpcdet.master.reports.failure import is_failure_line
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.identity import page_sees

MAX_RANK_DIGITS = 5  # a rank filter beyond this is no rank (and would overflow an INTEGER)

MAX_QUERY = 200  # longer search text is cut (a line is rarely searched by more)
BATCH = 5000
_ERROR = re.compile(r"\b(?:CRITICAL|FATAL|ERROR)\b|^Traceback \(most recent call last\)"
                    r"|^\w*(?:Error|Exception): ")
_WARNING = re.compile(r"\bWARN(?:ING)?\b")


def log_level(line: str) -> str:
    """``error``, ``warning`` or ``""``: what the line's own words say about it (the HPC
    failure lines of :mod:`hpcdet.master.reports.failure` are errors)."""
    if _ERROR.search(line) or is_failure_line(line):
        return "error"
    return "warning" if _WARNING.search(line) else ""


def search_text(raw: str | None) -> str:
    """The ``?q=`` search text, trimmed of outer spaces and cut to :data:`MAX_QUERY`."""
    return (raw or "").strip()[:MAX_QUERY]


def filtered(query: Select[Any], chosen: Mapping[str, Any]) -> Select[Any]:
    """``query`` of TrialLog rows narrowed by the page's rank, stream and search text
    (a case-insensitive substring; ``%`` and ``_`` in it are literal)."""
    if chosen.get("rank") is not None:
        query = query.where(TrialLog.rank == chosen["rank"])
    if chosen.get("stream"):
        query = query.where(TrialLog.stream == chosen["stream"])
    if chosen.get("q"):
        query = query.where(TrialLog.line.icontains(chosen["q"], autoescape=True))
    return query


def match_count(trial_id: int, chosen: Mapping[str, Any]) -> int:
    """How many of the trial's lines pass the filter (for the search's count)."""
    query = filtered(select(func.count()).select_from(TrialLog)
                     .where(TrialLog.trial_id == trial_id), chosen)
    return int(db().scalar(query) or 0)


def line_text(entry: Mapping[str, Any]) -> str:
    """``2026-01-02T03:04:05+00:00 [rank 0 node1 stdout] text``: one line of the download."""
    parts = [] if entry.get("rank") is None else [f"rank {entry['rank']}"]
    parts += [entry["node"]] if entry.get("node") else []
    prefix = "[" + " ".join([*parts, str(entry.get("stream"))]) + "]"
    return f"{entry.get('at') or ''} {prefix} {entry.get('line', '')}\n"


def log_filter() -> dict[str, Any]:
    """The trial page's log filter: ``?rank=``, ``?stream=`` and ``?q=`` (search text); a
    value that is neither a rank nor a stream means all."""
    rank = request.args.get("rank", "")
    stream = request.args.get("stream", "")
    digits = rank.isascii() and rank.isdigit() and len(rank) <= MAX_RANK_DIGITS
    return {"rank": int(rank) if digits else None,
            "stream": stream if stream in STREAMS else None,
            "q": search_text(request.args.get("q"))}


@bp.get("/trials/<int:trial_id>/logs.txt")
def trial_logs_text(trial_id: int) -> Any:
    """The trial's whole log (as filtered by ``rank``, ``stream``, ``q``) as plain text."""
    found = db().get(Trial, trial_id)
    exp = None if found is None else db().get(Experiment, found.experiment_id)
    if found is None or exp is None or not page_sees(exp.owner, exp.workspace_id):
        return render_template("trial.html", page="experiments", trial_id=trial_id,
                               error=f"trial {trial_id} not found"), 404
    chosen = log_filter()
    response = Response(stream_with_context(_lines(trial_id, chosen)),
                        mimetype="text/plain")
    response.headers["Content-Disposition"] = \
        f'attachment; filename="trial-{trial_id}-logs.txt"'
    return response


def _lines(trial_id: int, chosen: Mapping[str, Any]) -> Iterator[bytes]:
    after = 0
    base = filtered(select(TrialLog).where(TrialLog.trial_id == trial_id), chosen)
    while True:  # by id, a batch at a time: no cursor stays open between batches
        rows = list(db().scalars(base.where(TrialLog.id > after).order_by(TrialLog.id)
                                 .limit(BATCH)))
        if not rows:
            return
        after = rows[-1].id
        yield "".join(line_text(serialize.log_line(row)) for row in rows).encode()
        db().expunge_all()  # what was streamed need not stay in the session
