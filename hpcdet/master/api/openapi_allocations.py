"""Allocation mode's part of the OpenAPI description (routes in
:mod:`hpcdet.master.api.allocations`); merged into :mod:`hpcdet.master.api.openapi_schemas`."""

from __future__ import annotations

from typing import Any

from hpcdet.master.api.openapi_schemas import (
    BOOL,
    INT,
    NUM,
    OPT_INT,
    OPT_STR,
    STR,
    TIME,
    Schema,
    array,
    nullable,
    obj,
    ref,
)

_STEP = {"trial_id": INT, "run_id": INT}
ALLOCATION_COMPONENTS: dict[str, Schema] = {
    "Allocation": obj({"id": INT, "job_id": OPT_STR, "slots": INT, "phase": STR,
                       "nodes": OPT_STR, "end_cause": OPT_STR, "steps": INT,
                       "running_steps": INT, "submitted_at": STR, "started_at": TIME,
                       "ended_at": TIME}),
}
ALLOCATION_OPERATIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/v1/allocations/<int:allocation_id>/exchange"): {
        "summary": "The allocation agent's news (steps started, exited) and what it should do "
                   "next (steps to launch or end, whether to exit)", "auth": "allocation",
        "body": obj({}, {"events": array(obj(
            {**_STEP, "event": {"type": "string", "enum": ["started", "exited"]}},
            {"exit_code": OPT_INT, "step": nullable(STR)}))}),
        "answers": {200: obj({"launch": array(obj({**_STEP, "script": STR, "job_dir": STR})),
                              "cancel": array(obj(_STEP)), "exit": BOOL, "interval": NUM}),
                    400: "An event is malformed"}},
    ("GET", "/api/v1/experiments/<int:exp_id>/allocations"): {
        "summary": "The experiment's allocations (allocation mode), newest first",
        "answers": {200: obj({"allocations": array(ref("Allocation"))}),
                    404: "No such experiment, or the caller may not see it"}},
}
