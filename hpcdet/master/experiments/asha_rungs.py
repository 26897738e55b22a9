"""Which ASHA rung each trial of an ``adaptive_asha`` experiment has reached.

Read from the searcher's saved state (``experiments.searcher_state``, written by
:meth:`hpcdet.searcher.asha.AdaptiveAshaSearch.to_state`)::

    {"method": {"owner": {request_id: bracket index},
                "brackets": [{"rungs": [{"units_needed": n, "metrics": [[value, request_id]]}],
                              "trial_rungs": {request_id: rung index}, ...}]}, ...}

A bracket keeps, per trial, the index of the rung the trial is in: every trial starts in rung
0, and moves up when its result ranks in the rung's top; a promoted trial stays in the new
rung while it trains towards that rung's ``units_needed``. Searcher trial ids are the
``request_id`` of the database trials. Pure functions: no database, no Flask.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RungReached:
    """The rung a trial is in, within its bracket."""

    rung: int  # 0-based: rung 0 is where every trial starts
    num_rungs: int
    bracket: int  # 0-based index of the trial's bracket
    units_needed: int  # searcher.max_time units this rung asks for
    recorded: bool  # the trial has a result in this rung (False: still training towards it)

    def text(self) -> str:
        """For people, counted from 1: ``"2 of 3"``, or ``"2 of 3 (no result yet)"``."""
        counted = f"{self.rung + 1} of {self.num_rungs}"
        return counted if self.recorded else f"{counted} (no result yet)"

    def to_json(self) -> dict[str, Any]:
        """The JSON shape of ``GET /experiments/<id>/rungs`` (without the trial id)."""
        return {"rung": self.rung, "num_rungs": self.num_rungs, "bracket": self.bracket,
                "units_needed": self.units_needed, "recorded": self.recorded,
                "text": self.text()}


def rungs_by_request(searcher_state: Mapping[str, Any] | None) -> dict[str, RungReached]:
    """Each searcher trial id's rung; empty for a searcher that is not ASHA or not started."""
    method = (searcher_state or {}).get("method")
    if not isinstance(method, Mapping):
        return {}
    brackets = method.get("brackets")
    owners = method.get("owner")
    if not isinstance(brackets, list) or not isinstance(owners, Mapping):
        return {}
    found = {str(request_id): _in_bracket(brackets, index, str(request_id))
             for request_id, index in owners.items()}
    return {request_id: rung for request_id, rung in found.items() if rung is not None}


def rungs_by_trial(searcher_state: Mapping[str, Any] | None,
                   request_ids: Mapping[int, str | None]) -> dict[int, RungReached]:
    """The rung of each database trial, given ``{trial id: request_id}``.

    Trials the searcher does not know (no request id, or a state without them) are left out.
    """
    by_request = rungs_by_request(searcher_state)
    return {trial_id: by_request[str(request_id)] for trial_id, request_id in request_ids.items()
            if request_id is not None and str(request_id) in by_request}


def _in_bracket(brackets: list[Any], index: Any, request_id: str) -> RungReached | None:
    """The trial's rung in bracket ``index``; None when the state does not say."""
    if not isinstance(index, int) or not 0 <= index < len(brackets):
        return None
    rungs = brackets[index].get("rungs") or []
    position = (brackets[index].get("trial_rungs") or {}).get(request_id)
    if not isinstance(position, int) or not 0 <= position < len(rungs):
        return None
    rung = rungs[position]
    recorded = any(str(trial) == request_id for _value, trial in rung.get("metrics") or [])
    return RungReached(position, len(rungs), index, int(rung["units_needed"]), recorded)
