"""Where the syncer reads metrics: the master's REST API, as the task's owner.

:class:`MetricsSource` is what :class:`~hpcdet.tensorboard.sync.Syncer` needs;
:class:`MasterMetrics` answers it with ``GET /experiments/<id>/trials`` and
``GET /trials/<id>/metrics?group=G&since_steps=N`` (only the steps after ``N``).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hpcdet.client import MasterClient, experiment_trials, master_url_from_env
from hpcdet.services.service_file import owner_token

# The groups TensorBoard shows, as Determined's TensorBoard names them (``training/loss``).
GROUPS = ("training", "validation")


@dataclass(frozen=True)
class Report:
    """One report of a trial: its step, its numeric metrics and when it was reported
    (seconds since the epoch; None: unknown)."""

    steps_completed: int
    metrics: dict[str, float]
    wall_time: float | None = None


class MetricsSource(Protocol):
    """The trials to show and their reports."""

    def trial_ids(self, experiment_ids: Sequence[int]) -> list[int]:
        """The trials of ``experiment_ids`` as they are now (ASHA adds trials as it runs)."""

    def reports(self, trial_id: int, group: str, since_steps: int | None) -> list[Report]:
        """``trial_id``'s reports in ``group`` after step ``since_steps`` (all: None), in
        step order."""


class MasterMetrics:
    """:class:`MetricsSource` over the master's API (``DET_MASTER``, and the task's owner
    as the master gave it to the job: ``DET_USER``, or on a munge master the token in the
    job directory's ``user_token``; ``DET_USER_TOKEN`` set by hand wins)."""

    def __init__(self, client: MasterClient) -> None:
        self._client = client

    @classmethod
    def from_env(cls) -> MasterMetrics:
        """The client the task's environment describes."""
        task_dir = os.environ.get("DET_TASK_DIR")
        token = os.environ.get("DET_USER_TOKEN") or owner_token(
            Path(task_dir) if task_dir else None)
        return cls(MasterClient(master_url_from_env(), user=os.environ.get("DET_USER"),
                                token=token))

    def trial_ids(self, experiment_ids: Sequence[int]) -> list[int]:
        return [int(trial["id"]) for exp_id in experiment_ids
                for trial in experiment_trials(self._client, exp_id)]

    def reports(self, trial_id: int, group: str, since_steps: int | None) -> list[Report]:
        params: dict[str, Any] = {"group": group}
        if since_steps is not None:
            params["since_steps"] = since_steps
        answer = self._client.get(f"/trials/{trial_id}/metrics", params=params)
        return [Report(int(entry["steps_completed"]), numeric(entry.get("metrics") or {}),
                       epoch_seconds(entry.get("reported_at")))
                for entry in answer.get("metrics") or []]


def epoch_seconds(iso: Any) -> float | None:
    """An ISO 8601 time (UTC when it names no zone) in seconds since the epoch."""
    if not isinstance(iso, str):
        return None
    try:
        when = dt.datetime.fromisoformat(iso)
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)).timestamp()


def numeric(metrics: dict[str, Any]) -> dict[str, float]:
    """The metrics TensorBoard can draw as scalars (numbers; booleans and text are not)."""
    return {name: float(value) for name, value in metrics.items()
            if isinstance(value, int | float) and not isinstance(value, bool)}
