"""``Trial`` and its metrics (Determined's ``TrialMetrics`` and metric streams)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Iterator
from typing import Any

from hpcdet.experimental._checkpoint import Checkpoint
from hpcdet.experimental._enums import CheckpointSortBy, OrderBy, TrialState
from hpcdet.experimental._session import Session
from hpcdet.experimental._sorting import best_first, sort_checkpoints

GROUPS = ("training", "validation", "profiling")
_LOG_PAGE = 5000


@dataclasses.dataclass
class TrialMetrics:
    """One report of a trial's metrics: ``group``, the step, the values."""

    trial_id: int
    trial_run_id: int | None
    steps_completed: int
    end_time: str | None
    metrics: dict[str, Any]
    group: str


class Trial:
    """A trial, as ``client.get_trial(id)`` and ``Experiment.list_trials()`` return it."""

    def __init__(self, session: Session, trial_id: int,
                 data: dict[str, Any] | None = None) -> None:
        self._session = session
        self.id = trial_id
        self._data: dict[str, Any] = data or {}
        self._checkpoints: list[dict[str, Any]] | None = None
        if not self._data:
            self.reload()

    def reload(self) -> None:
        """Read the trial (and its checkpoints) again from the master."""
        answer = self._session.get(f"/trials/{self.id}")
        self._data = answer["trial"]
        self._checkpoints = answer.get("checkpoints") or []

    @property
    def experiment_id(self) -> int:
        """The experiment it belongs to."""
        return int(self._data["experiment_id"])

    @property
    def hparams(self) -> dict[str, Any]:
        """Its hyperparameters."""
        return dict(self._data.get("hparams") or {})

    @property
    def state(self) -> TrialState:
        """Its state, as of the last reload."""
        return TrialState(self._data["state"])

    @property
    def summary_metrics(self) -> dict[str, Any]:
        """Its best validation (hpcdet keeps no per-metric summaries)."""
        return {"best_validation": self._data.get("best_validation")}

    def _checkpoint_rows(self) -> list[dict[str, Any]]:
        if self._checkpoints is None:
            self.reload()
        # The trial route's rows lack the experiment's id: add it for Checkpoint.training.
        return [{"experiment_id": self._data.get("experiment_id"), **row}
                for row in self._checkpoints or []]

    def list_checkpoints(self, sort_by: CheckpointSortBy | str | None = None,
                         order_by: OrderBy | None = None,
                         max_results: int | None = None) -> list[Checkpoint]:
        """Its checkpoints (reloaded), sorted as asked; by default, as in Determined, by
        the searcher metric, best first (those without a validation of it last)."""
        self.reload()
        smaller_is_better = True
        if order_by is None and sort_by in (None, CheckpointSortBy.SEARCHER_METRIC):
            smaller_is_better = self._searcher_smaller_is_better()
        rows = sort_checkpoints(self._checkpoint_rows(), sort_by, order_by, smaller_is_better)
        return [Checkpoint(self._session, r["uuid"], r) for r in rows[:max_results]]

    def _searcher_smaller_is_better(self) -> bool:
        """Its experiment's ``searcher.smaller_is_better`` (the trial route omits it)."""
        experiment = self._session.get(f"/experiments/{self.experiment_id}")["experiment"]
        searcher = (experiment.get("config") or {}).get("searcher") or {}
        return bool(searcher.get("smaller_is_better", True))

    def top_checkpoint(self, sort_by: str | None = None,
                       smaller_is_better: bool | None = None) -> Checkpoint:
        """Its best checkpoint by ``sort_by`` (default the searcher metric)."""
        self.reload()
        if sort_by is None and smaller_is_better is None:
            # The master marks the best by the searcher metric, knowing its direction.
            best = [r for r in self._checkpoint_rows() if r.get("best")]
            if best:
                return Checkpoint(self._session, best[0]["uuid"], best[0])
        rows = best_first(self._checkpoint_rows(), sort_by, smaller_is_better)
        return Checkpoint(self._session, rows[0]["uuid"], rows[0])

    def iter_metrics(self, group: str) -> Iterator[TrialMetrics]:
        """Its reports of ``group`` (``training``, ``validation``, ``profiling``) by step."""
        return _trial_metrics(self._session, self.id, group)

    def stream_training_metrics(self) -> Iterator[TrialMetrics]:
        """``iter_metrics("training")`` (Determined's older name)."""
        return self.iter_metrics("training")

    def stream_validation_metrics(self) -> Iterator[TrialMetrics]:
        """``iter_metrics("validation")`` (Determined's older name)."""
        return self.iter_metrics("validation")

    def logs(self, *, tail: int | None = None) -> Iterator[str]:
        """Its log lines so far (the last ``tail`` only, if given); does not follow."""
        if tail is not None:
            answer = self._session.get(f"/trials/{self.id}/logs", {"tail": tail})
            yield from (entry["line"] for entry in answer.get("logs") or [])
            return
        yield from self._lines_after(0)[0]

    def iter_logs(self, follow: bool = False, *, head: int | None = None,
                  tail: int | None = None, interval: float = 1.0) -> Iterator[str]:
        """Determined's ``Trial.iter_logs``: its log lines so far; only the first ``head``
        or the last ``tail`` of them; or, with ``follow``, every line until the trial
        ends (polling the master every ``interval`` seconds). Determined's filters by
        container, rank, level, time, source and text are not supported."""
        from hpcdet.experimental.errors import SDKError

        if sum(x is not None for x in (head, tail)) + follow > 1:
            raise SDKError("follow, head and tail are mutually exclusive")
        if tail is not None:
            yield from self.logs(tail=tail)
            return
        if head is not None:
            if head > 0:
                answer = self._session.get(f"/trials/{self.id}/logs", {"head": head})
                yield from (entry["line"] for entry in answer.get("logs") or [])
            return
        after = 0
        while True:
            # Read the state first: lines written before the trial ended are read below.
            ended = not follow or self._ended()
            lines, after = self._lines_after(after)
            yield from lines
            if ended:
                return
            time.sleep(interval)

    def _ended(self) -> bool:
        self.reload()
        return self.state.is_terminal

    def _lines_after(self, after: int) -> tuple[list[str], int]:
        """Every log line after log id ``after`` (page by page), and the last id read."""
        lines: list[str] = []
        while True:
            answer = self._session.get(f"/trials/{self.id}/logs",
                                       {"after": after, "limit": _LOG_PAGE})
            page = answer.get("logs") or []
            lines += [entry["line"] for entry in page]
            if page:
                after = int(answer["last_id"])
            if len(page) < _LOG_PAGE:
                return lines, after

    def kill(self) -> None:
        """Stop the trial (STOPPING_KILLED)."""
        self._data = self._session.post(f"/trials/{self.id}/kill")["trial"]

    def __repr__(self) -> str:
        return f"Trial(id={self.id})"


def _trial_metrics(session: Session, trial_id: int, group: str) -> Iterator[TrialMetrics]:
    from hpcdet.experimental.errors import SDKError

    if group not in GROUPS:
        raise SDKError(f"group {group!r}: must be one of {', '.join(GROUPS)}")
    answer = session.get(f"/trials/{trial_id}/metrics", {"group": group})
    for row in answer.get("metrics") or []:
        yield TrialMetrics(trial_id=trial_id, trial_run_id=None,
                           steps_completed=int(row["steps_completed"]),
                           end_time=row.get("reported_at"), metrics=dict(row["metrics"]),
                           group=str(row.get("group") or group))


def stream_trials_metrics(session: Session, trial_ids: Iterable[int],
                          group: str) -> Iterator[TrialMetrics]:
    """Every report of ``group`` of each trial, trial by trial."""
    for trial_id in trial_ids:
        yield from _trial_metrics(session, trial_id, group)
