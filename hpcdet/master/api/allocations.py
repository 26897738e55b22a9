"""What an allocation's agent (:mod:`hpcdet.launch.allocation_agent`) tells and asks.

``POST /allocations/<id>/exchange`` with the allocation's own bearer token (written into
its job directory at submission, like a trial's) carries the agent's news, and answers
with what it should do next::

    {"events": [{"trial_id": 7, "run_id": 2, "event": "started", "step": "123.4"},
                {"trial_id": 5, "run_id": 1, "event": "exited", "exit_code": 0}]}
    -> {"launch": [{"trial_id", "run_id", "script", "job_dir"}],
        "cancel": [{"trial_id", "run_id"}], "exit": false, "interval": 1.0}

Events are idempotent (keyed by trial and run): an agent resends them until a request
succeeds, so a master restart loses nothing. ``GET /experiments/<id>/allocations`` lists
an experiment's allocations for people.
"""

from __future__ import annotations

from typing import Any

from flask import current_app
from sqlalchemy import select

from hpcdet.master.allocation_models import Allocation, AllocationStep
from hpcdet.master.api.access import experiment_for
from hpcdet.master.api.auth import bearer_token
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, json_body, settings
from hpcdet.master.errors import Invalid, Unauthenticated
from hpcdet.master.models import utcnow
from hpcdet.master.scheduling import allocation_steps
from hpcdet.master.security import tokens

# How often an agent with running steps exchanges (seconds); the agent may ask sooner.
EXCHANGE_INTERVAL = 1.0
_MAX_EVENTS = 1000


@bp.post("/allocations/<int:allocation_id>/exchange")
def allocation_exchange(allocation_id: int) -> Any:
    """Apply the agent's events, then say what to launch, cancel, or whether to exit."""
    # An unknown id answers as a wrong token does: nothing says which allocations exist.
    allocation = db().get(Allocation, allocation_id)
    token = bearer_token()
    if allocation is None or not token or not tokens.token_matches(token, allocation.token):
        raise Unauthenticated("unauthorized",
                              f"a valid token for allocation {allocation_id} is required")
    session = db()
    for event in _events(json_body()):
        trial_id, run_id = event["trial_id"], event["run_id"]
        if event["event"] == "started":
            allocation_steps.record_started(session, allocation, trial_id, run_id,
                                            _step_name(event.get("step")))
        else:
            allocation_steps.record_exited(session, allocation, trial_id, run_id,
                                           event.get("exit_code"))
    allocation.last_seen_at = utcnow()
    if allocation.phase == "PENDING":  # the agent runs before squeue says so
        allocation.phase, allocation.started_at = "RUNNING", utcnow()
    allocation_steps.place_queued(settings(), current_app.config["HPCDET_BACKEND"], session,
                                  allocation)
    answer = allocation_steps.instructions(session, allocation)
    session.commit()
    return {**answer, "interval": EXCHANGE_INTERVAL}


@bp.get("/experiments/<int:exp_id>/allocations")
def experiment_allocations(exp_id: int) -> Any:
    """The experiment's allocations, newest first, with their steps' counts."""
    experiment_for(exp_id)  # 404, or 403 for someone who may not read it
    rows = db().scalars(select(Allocation).where(Allocation.experiment_id == exp_id)
                        .order_by(Allocation.id.desc())).all()
    return {"allocations": [_allocation_json(row) for row in rows]}


def _allocation_json(row: Allocation) -> dict[str, Any]:
    steps = db().scalars(select(AllocationStep.phase).where(
        AllocationStep.allocation_id == row.id)).all()
    return {"id": row.id, "job_id": row.job_id, "slots": row.slots, "phase": row.phase,
            "nodes": row.nodes, "end_cause": row.end_cause, "steps": len(steps),
            "running_steps": sum(1 for p in steps if p == allocation_steps.RUNNING),
            "submitted_at": row.submitted_at.isoformat(),
            "started_at": row.started_at.isoformat() if row.started_at else None,
            "ended_at": row.ended_at.isoformat() if row.ended_at else None}


def _events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The body's events, each checked: 400 naming the first bad one."""
    events = body.get("events", [])
    if not isinstance(events, list) or len(events) > _MAX_EVENTS:
        raise Invalid("bad_request", f"events: must be a list of at most {_MAX_EVENTS}")
    for i, event in enumerate(events):
        if not (isinstance(event, dict) and event.get("event") in ("started", "exited")
                and _is_int(event.get("trial_id")) and _is_int(event.get("run_id"))
                and (event.get("exit_code") is None or _is_int(event.get("exit_code")))):
            raise Invalid("bad_request", f"events[{i}]: needs event started|exited, "
                          "integer trial_id and run_id, and an integer or null exit_code")
    return events


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -2**31 < value < 2**31


def _step_name(value: Any) -> str | None:
    return value[:64] if isinstance(value, str) and value.isprintable() else None
