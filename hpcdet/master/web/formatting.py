"""Small helpers the page modules share: text for times, numbers and progress, written
exactly as ``static/hpcdet.js`` writes them (so a server-rendered cell and the same cell
re-rendered by a script read the same), and the live-refresh interval."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

from markupsafe import Markup, escape

from hpcdet.master.api.common import settings
from hpcdet.master.models import as_utc

# Polling faster than this only loads the master; the snapshots change less often anyway.
MIN_POLL_SECONDS = 2


def taken_text(taken_at: dt.datetime | None) -> str:
    """When a snapshot was taken, as a ``<time>`` (:func:`time_tag`); before the first
    refresh, says so."""
    if taken_at is None:
        return "not read from Slurm yet"
    return time_tag(as_utc(taken_at).isoformat())


def poll_seconds() -> int:
    """How often a page refetches its data: as often as the master rereads Slurm."""
    refresh = settings().resource_manager.pool_refresh_seconds
    return max(MIN_POLL_SECONDS, round(refresh))


def time_text(iso: str | None) -> str:
    """An API time as ``hpcdet.fmtTime`` writes it: ``2026-01-02 03:04:05`` (UTC)."""
    if not iso:
        return ""
    moment = dt.datetime.fromisoformat(iso).astimezone(dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def number_text(value: Any) -> str:
    """A value as ``hpcdet.fmtNumber`` writes it: numbers to 4 significant digits."""
    if value is None or value == "":
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int) or value.is_integer():
        return str(int(value))
    magnitude = abs(value)
    if magnitude < 1e-3 or magnitude >= 1e6:  # JavaScript writes e-4, not e-04
        return re.sub(r"e([+-])0*(\d)", r"e\1\2", f"{value:.3e}")
    return repr(float(f"{value:.4g}")).removesuffix(".0")


def percent(progress: float | None) -> int:
    """Progress 0..1 as a whole percent, rounded half up like JavaScript's Math.round."""
    return min(100, max(0, math.floor((progress or 0.0) * 100 + 0.5)))


# --- States and times in words (owner: the "pages" area; every page uses these) ----------

# The words a user of Determined reads for hpcdet's states (experiments, trials, tasks) and
# the queue's job states; the exact state stays on hover. The queue's SCHEDULED (a job that
# holds its resources) is what the trial page calls RUNNING: one word for both.
STATE_WORDS = {
    "ACTIVE": "Active", "QUEUED": "Queued", "RUNNING": "Running", "SCHEDULED": "Running",
    "PAUSED": "Paused", "STOPPING_COMPLETED": "Stopping", "STOPPING_CANCELED": "Canceling",
    "STOPPING_KILLED": "Killing", "STOPPING_ERROR": "Stopping (error)",
    "COMPLETED": "Completed", "CANCELED": "Canceled", "ERROR": "Errored",
    "DELETED": "Deleted", "PARTIALLY_DELETED": "Partially deleted",
}
EMPTY = "\u2014"  # what an empty cell shows: an em dash


def state_word(state: str) -> str:
    """A state in words (``STOPPING_COMPLETED`` is "Stopping"); hpcdet.js's ``stateWord``
    says the same. An unknown state reads as itself in sentence case."""
    if not state:
        return EMPTY
    return STATE_WORDS.get(state) or state.replace("_", " ").capitalize()


def state_badge(state: str | None) -> Markup:
    """A state's badge: its word, coloured by the exact state, which shows on hover."""
    if not state:
        return Markup(EMPTY)
    return Markup('<span class="state state-{0}" title="{0}">{1}</span>').format(
        state, state_word(state))


def time_tag(iso: str | None, empty: str = EMPTY) -> Markup:
    """A time as ``<time>``: UTC text (``2026-01-02 03:04:05 UTC``) that hpcdet.js rewrites
    in the reader's local time; the ISO UTC moment stays on hover. ``empty`` for none."""
    if not iso:
        return escape(empty)
    moment = dt.datetime.fromisoformat(iso).astimezone(dt.timezone.utc)
    utc = moment.isoformat().replace("+00:00", "Z")
    return Markup('<time datetime="{0}" title="{0}">{1} UTC</time>').format(
        utc, moment.strftime("%Y-%m-%d %H:%M:%S"))


def or_dash(value: Any) -> Any:
    """``value``, or an em dash for None and empty text (every empty cell shows one)."""
    return EMPTY if value is None or value == "" else value
