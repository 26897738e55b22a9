"""The master's health on every page: a banner when it is degraded (the scheduler is
unreachable, the database slow, the reconciler not cycling), read from the ``health``
record the reconciler stores (:mod:`hpcdet.master.scheduling.health`); no scheduler command."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from markupsafe import Markup, escape

from hpcdet.master.api.master_info import app_health
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.formatting import time_tag

# How the health record writes a moment in a problem (scheduling/health.py's _utc_text);
# static/health.js finds the same pattern.
UTC_TEXT = re.compile(r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) UTC")


@bp.app_context_processor
def master_health() -> dict[str, Any]:
    """``master_health`` for base.html: the judged record, or None when unreadable."""
    try:
        return {"master_health": app_health(), "problem_html": problem_html}
    except Exception:  # noqa: BLE001 - an error page must render even when the database fails
        return {"master_health": None, "problem_html": problem_html}


def problem_html(problem: str) -> Markup:
    """A problem line with each UTC moment as a ``<time>`` (hpcdet.js shows it in the
    reader's local time); everything else escaped."""
    parts: list[Markup] = []
    last = 0
    for found in UTC_TEXT.finditer(problem):
        moment = dt.datetime.fromisoformat(found.group(1)).replace(tzinfo=dt.timezone.utc)
        parts += [escape(problem[last:found.start()]), time_tag(moment.isoformat())]
        last = found.end()
    parts.append(escape(problem[last:]))
    return Markup("").join(parts)
