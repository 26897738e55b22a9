"""Rows that several answers share: an object's state history and a trial's jobs.

Their own module, so that the experiment, trial and task routes share them without
importing each other.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import select

from hpcdet.master.api.common import db
from hpcdet.master.models import Job, StateChange
from hpcdet.master.reports import serialize


def history(kind: str, entity_id: int) -> list[dict[str, Any]]:
    """The state changes of one experiment, trial or task, oldest first."""
    rows = db().scalars(select(StateChange).where(StateChange.entity_kind == kind,
                                                  StateChange.entity_id == entity_id)
                        .order_by(StateChange.id)).all()
    return [serialize.state_change(c) for c in rows]


def jobs_by_trial(trial_ids: list[int]) -> dict[int, list[Job]]:
    """Each trial's jobs, oldest first."""
    out: dict[int, list[Job]] = defaultdict(list)
    if trial_ids:
        for j in db().scalars(select(Job).where(Job.trial_id.in_(trial_ids)).order_by(Job.id)):
            out[j.trial_id].append(j)
    return out
