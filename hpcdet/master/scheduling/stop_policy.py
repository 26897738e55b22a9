"""When a trial asked to stop loses its job (or its allocation step) without waiting.

One rule for a trial's job and for its step in an allocation: killed trials and trials out
of restarts stop at once; a trial stopped gracefully (by its searcher, a cancel, a pause) is
asked through ``should_preempt()`` and is cut off only once its experiment's
``preemption_timeout`` has passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpcdet.master.models import Trial, as_utc, utcnow
from hpcdet.states import STOPPING_STATES, State

# Seconds a trial asked to stop may take to checkpoint and exit before its job is cancelled.
DEFAULT_PREEMPTION_TIMEOUT = 3600.0
# Trials whose code has been asked to stop (the preemption route says yes to them).
STOP_ASKED = tuple(s.value for s in (*STOPPING_STATES, State.PAUSED))
# Trials whose jobs are cancelled at once, without waiting for the code to stop.
STOP_NOW = frozenset({State.STOPPING_KILLED.value, State.STOPPING_ERROR.value})


def preemption_timeout(config: Mapping[str, Any]) -> float:
    """The experiment's ``preemption_timeout`` in seconds (the default where unset)."""
    return float(config.get("preemption_timeout") or DEFAULT_PREEMPTION_TIMEOUT)


def must_stop_now(trial: Trial, timeout: float) -> bool:
    """Killed or out of restarts, never asked (nothing to wait for), or asked longer than
    ``timeout`` seconds ago."""
    if trial.state in STOP_NOW or trial.stop_requested_at is None:
        return True
    return (utcnow() - as_utc(trial.stop_requested_at)).total_seconds() > timeout
