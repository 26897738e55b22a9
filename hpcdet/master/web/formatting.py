"""Small helpers the page modules share: times and the live-refresh interval."""

from __future__ import annotations

import datetime as dt

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
