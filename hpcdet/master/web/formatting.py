"""Small helpers the page modules share: text for times, numbers and progress, written
exactly as ``static/hpcdet.js`` writes them (so a server-rendered cell and the same cell
re-rendered by a script read the same), and the live-refresh interval."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

from hpcdet.master.api.common import settings
from hpcdet.master.models import as_utc

# Polling faster than this only loads the master; the snapshots change less often anyway.
MIN_POLL_SECONDS = 2


def taken_text(taken_at: dt.datetime | None) -> str:
    """When a snapshot was taken, for people; before the first refresh, says so."""
    if taken_at is None:
        return "not read from Slurm yet"
    return as_utc(taken_at).strftime("%Y-%m-%d %H:%M:%S UTC")


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
