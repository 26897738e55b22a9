"""Trial log routes: read (and follow) the lines the master collected from a trial's jobs."""

from __future__ import annotations

from typing import Any

from flask import request
from sqlalchemy import select

from hpcdet.master import serialize
from hpcdet.master.api import bp
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.common import db, get_or_404, int_arg
from hpcdet.master.models import Trial, TrialLog


@bp.get("/trials/<int:trial_id>/logs")
def read_logs(trial_id: int) -> Any:
    """Log lines after ``after`` (a log id), or the last ``tail`` lines."""
    current_user()
    trial = get_or_404(Trial, trial_id, "trial")
    query = select(TrialLog).where(TrialLog.trial_id == trial_id)
    if request.args.get("rank"):
        query = query.where(TrialLog.rank == int_arg("rank", 0))
    tail, after = int_arg("tail", 0, hi=100_000), int_arg("after", 0, hi=2**62)
    if tail:
        rows = list(reversed(db().scalars(query.order_by(TrialLog.id.desc()).limit(tail)).all()))
    else:
        query = query.where(TrialLog.id > after)
        rows = list(db().scalars(query.order_by(TrialLog.id).limit(int_arg("limit", 5000,
                                                                           hi=100_000))))
    last = rows[-1].id if rows else after
    return {"logs": [serialize.log_line(r) for r in rows], "last_id": last,
            "trial_state": trial.state}
