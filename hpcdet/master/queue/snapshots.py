"""What the master last read from the scheduler (pools, the queue), kept in the database.

The reconciler process refreshes each kind every ``pool_refresh_seconds``; API workers (other
processes under gunicorn) read the stored copy, so no API request runs a scheduler command.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy.orm import Session

from hpcdet.master.models import ClusterSnapshot, utcnow

POOLS = "pools"
QUEUE = "queue"


def store_snapshot(session: Session, kind: str, data: dict[str, Any]) -> None:
    """Replace the stored ``kind`` with ``data``, stamped now."""
    row = session.get(ClusterSnapshot, kind)
    if row is None:
        session.add(ClusterSnapshot(kind=kind, data=data, taken_at=utcnow()))
    else:
        row.data, row.taken_at = data, utcnow()


def load_snapshot(session: Session, kind: str) -> tuple[dict[str, Any], dt.datetime] | None:
    """The stored ``kind`` and when it was taken, or None before the first refresh."""
    row = session.get(ClusterSnapshot, kind)
    return None if row is None else (dict(row.data), row.taken_at)
