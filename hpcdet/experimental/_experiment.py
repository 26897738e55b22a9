"""``Experiment``: state, trials, checkpoints and lifecycle of one experiment."""

from __future__ import annotations

import time
from typing import Any

from hpcdet.experimental._checkpoint import Checkpoint
from hpcdet.experimental._enums import CheckpointSortBy, ExperimentState, OrderBy, TrialSortBy
from hpcdet.experimental._session import Session
from hpcdet.experimental._sorting import best_first, sort_checkpoints
from hpcdet.experimental._trial import Trial
from hpcdet.experimental.errors import NotFoundException

# The states an experiment does not leave (``wait`` returns on them).
TERMINAL = (ExperimentState.COMPLETED, ExperimentState.CANCELED, ExperimentState.ERROR)


class Experiment:
    """An experiment, as ``client.get_experiment(id)`` and ``create_experiment`` return it."""

    def __init__(self, session: Session, experiment_id: int,
                 data: dict[str, Any] | None = None) -> None:
        self._session = session
        self.id = experiment_id
        self._data: dict[str, Any] = data or {}
        if "config" not in self._data:
            self.reload()

    def reload(self) -> None:
        """Read the experiment again from the master."""
        self._data = self._session.get(f"/experiments/{self.id}")["experiment"]

    @property
    def config(self) -> dict[str, Any]:
        """Its effective configuration (the master's defaults filled in)."""
        return dict(self._data.get("config") or {})

    @property
    def state(self) -> ExperimentState:
        """Its state, as of the last reload."""
        return ExperimentState(self._data["state"])

    @property
    def name(self) -> str | None:
        """Its name."""
        return self._data.get("name")

    @property
    def description(self) -> str | None:
        """Its description."""
        return self._data.get("description")

    @property
    def labels(self) -> list[str]:
        """Its labels."""
        return list(self._data.get("labels") or [])

    @property
    def owner(self) -> str | None:
        """Who created it (Determined's ``user_id`` is a name in hpcdet)."""
        return self._data.get("owner")

    @property
    def project_id(self) -> int | None:
        """Its project, or None when it is its owner's alone."""
        return self._data.get("project_id")

    @property
    def workspace_id(self) -> int | None:
        """Its workspace, or None when it is its owner's alone."""
        return self._data.get("workspace_id")

    @property
    def parent_id(self) -> int | None:
        """The experiment it was forked from."""
        return self._data.get("parent_id")

    def wait(self, interval: float = 5.0) -> ExperimentState:
        """Poll every ``interval`` seconds until it ends; its final state."""
        while True:
            self.reload()
            if self.state in TERMINAL:
                return self.state
            time.sleep(interval)

    def list_trials(self, sort_by: TrialSortBy | None = None,
                    order_by: OrderBy | None = None) -> list[Trial]:
        """Its trials (all of them, page by page), by id unless asked otherwise."""
        from hpcdet.client import TRIAL_PAGE_SIZE

        params: dict[str, Any] = {"sortBy": (sort_by or TrialSortBy.ID).value,
                                  "limit": TRIAL_PAGE_SIZE}
        if order_by is not None:
            params["orderBy"] = OrderBy(order_by).value
        rows: list[dict[str, Any]] = []
        while True:
            answer = self._session.get(f"/experiments/{self.id}/trials",
                                       {**params, "offset": len(rows)})
            page = answer.get("trials") or []
            rows += page
            if not page or len(rows) >= (answer.get("pagination") or {}).get("total", 0):
                return [Trial(self._session, int(r["id"]), r) for r in rows]

    def await_first_trial(self, interval: float = 0.1) -> Trial:
        """Its first trial, waiting for the searcher to make it."""
        while True:
            trials = self._session.get(f"/experiments/{self.id}/trials",
                                       {"limit": 1, "sortBy": "id"}).get("trials") or []
            if trials:
                return Trial(self._session, int(trials[0]["id"]), trials[0])
            time.sleep(interval)

    def list_checkpoints(self, sort_by: CheckpointSortBy | str | None = None,
                         order_by: OrderBy | None = None,
                         max_results: int | None = None) -> list[Checkpoint]:
        """Its ACTIVE checkpoints, sorted by ``sort_by`` (a CheckpointSortBy field or a
        validation metric's name) in ``order_by``; by default, as in Determined, by the
        searcher metric, best first (those without a validation of it last)."""
        searcher = self.config.get("searcher") or {}
        rows = sort_checkpoints(self._checkpoint_rows(), sort_by, order_by,
                                bool(searcher.get("smaller_is_better", True)))
        return [Checkpoint(self._session, r["uuid"], r) for r in rows[:max_results]]

    def top_checkpoint(self, sort_by: str | None = None,
                       smaller_is_better: bool | None = None) -> Checkpoint:
        """Its best checkpoint by ``sort_by`` (default the searcher metric, in its
        direction); NotFoundException when none has a validation of it."""
        if sort_by is None and smaller_is_better is None:
            rows = self._checkpoint_rows(best=1)
        else:
            rows = best_first(self._checkpoint_rows(), sort_by, smaller_is_better)
        if not rows:
            raise NotFoundException(f"experiment {self.id} has no checkpoint with a validation"
                                    " of its searcher metric", status=404, code="not_found")
        return Checkpoint(self._session, rows[0]["uuid"], rows[0])

    def _checkpoint_rows(self, **params: Any) -> list[dict[str, Any]]:
        answer = self._session.get(f"/experiments/{self.id}/checkpoints", params or None)
        return list(answer.get("checkpoints") or [])

    def _act(self, action: str) -> None:
        self._data = {**self._data,
                      **self._session.post(f"/experiments/{self.id}/{action}")["experiment"]}

    def activate(self) -> None:
        """Resume a paused experiment."""
        self._act("activate")

    def pause(self) -> None:
        """Pause it: its trials checkpoint and stop until activated."""
        self._act("pause")

    def cancel(self) -> None:
        """Stop it gracefully (CANCELED)."""
        self._act("cancel")

    def kill(self) -> None:
        """Stop it at once (its jobs are cancelled)."""
        self._act("kill")

    def archive(self) -> None:
        """Hide an ended experiment from listings."""
        self._act("archive")

    def unarchive(self) -> None:
        """Show an archived experiment again."""
        self._act("unarchive")

    def delete(self) -> None:
        """Delete an ended experiment and its checkpoints."""
        self._session.delete(f"/experiments/{self.id}")

    def set_name(self, name: str) -> None:
        """Rename it."""
        self._patch({"name": name})

    def set_description(self, description: str) -> None:
        """Change its description."""
        self._patch({"description": description})

    def add_label(self, label: str) -> None:
        """Add a label."""
        self._session.post(f"/experiments/{self.id}/labels/add", {"label": label})
        self.reload()

    def remove_label(self, label: str) -> None:
        """Remove a label."""
        self._session.post(f"/experiments/{self.id}/labels/remove", {"label": label})
        self.reload()

    def _patch(self, body: dict[str, Any]) -> None:
        self._session.patch(f"/experiments/{self.id}", body)
        self.reload()

    def __repr__(self) -> str:
        return f"Experiment(id={self.id})"

