"""``single``, ``random`` and ``grid`` searchers (Determined's ``random.go``, ``grid.go``)."""

from __future__ import annotations

from typing import Any

from hpcdet.searcher.base import Action, Create, Searcher, TrialRequest
from hpcdet.searcher.grid import grid_points
from hpcdet.searcher.sampling import HParams

DEFAULT_MAX_CONCURRENT_TRIALS = 16


def initial_count(total: int, max_concurrent: int) -> int:
    """Trials to start: ``min(total, max_concurrent)``; 0 means unlimited."""
    return total if max_concurrent == 0 else min(total, max_concurrent)


class RandomSearch(Searcher):
    """Random search: keep ``max_concurrent_trials`` running until ``max_trials``."""

    def __init__(
        self,
        hparams: HParams,
        seed: int,
        max_trials: int,
        max_concurrent_trials: int = DEFAULT_MAX_CONCURRENT_TRIALS,
    ) -> None:
        """Configure the budget; ``single`` is ``max_trials=1, max_concurrent_trials=1``."""
        super().__init__(hparams, seed)
        self.max_trials = max_trials
        self.max_concurrent_trials = max_concurrent_trials
        self.invalid = 0

    def initial_trials(self) -> list[TrialRequest]:
        """Sample the first batch of trials."""
        count = initial_count(self.max_trials, self.max_concurrent_trials)
        return [self._create() for _ in range(count)]

    def on_validation(self, trial_id: str, metric: float, time_units: float) -> list[Action]:
        """Random search ignores validations."""
        return []

    def on_trial_exited(self, trial_id: str, reason: str) -> list[Action]:
        """Close the trial and refill; invalid-hp trials do not use the budget."""
        self._close(trial_id, reason)
        if reason == "invalid_hp":
            self.invalid += 1
        if len(self.requested) - self.invalid < self.max_trials:
            return [Create(self._create())]
        return []

    def progress(self) -> float:
        """Fraction of the valid-trial budget that has closed."""
        return min(1.0, (len(self.closed) - self.invalid) / self.max_trials)

    def _method_state(self) -> dict[str, Any]:
        """Only the invalid-trial count is method specific."""
        return {"invalid": self.invalid}

    def _restore_method(self, state: dict[str, Any]) -> None:
        """Restore the invalid-trial count."""
        self.invalid = int(state["invalid"])


def single_search(hparams: HParams, seed: int) -> RandomSearch:
    """The ``single`` searcher: one random trial."""
    return RandomSearch(hparams, seed, max_trials=1, max_concurrent_trials=1)


class GridSearch(Searcher):
    """Grid search: one trial per grid point, launched popping from the end."""

    def __init__(
        self,
        hparams: HParams,
        seed: int,
        max_concurrent_trials: int = DEFAULT_MAX_CONCURRENT_TRIALS,
    ) -> None:
        """Build the grid up front."""
        super().__init__(hparams, seed)
        self.max_concurrent_trials = max_concurrent_trials
        self.pending: list[HParams] = grid_points(hparams)
        self.total = len(self.pending)

    def _next(self) -> TrialRequest:
        """Create a trial for the last pending grid point."""
        return self._create(self.pending.pop())

    def initial_trials(self) -> list[TrialRequest]:
        """Start up to ``max_concurrent_trials`` grid points."""
        count = initial_count(self.total, self.max_concurrent_trials)
        return [self._next() for _ in range(count)]

    def on_validation(self, trial_id: str, metric: float, time_units: float) -> list[Action]:
        """Grid search ignores validations."""
        return []

    def on_trial_exited(self, trial_id: str, reason: str) -> list[Action]:
        """Close the trial and launch the next point (invalid points are not retried)."""
        self._close(trial_id, reason)
        return [Create(self._next())] if self.pending else []

    def progress(self) -> float:
        """Fraction of grid points whose trial has closed."""
        return len(self.closed) / self.total if self.total else 1.0

    def _method_state(self) -> dict[str, Any]:
        """The points not yet launched."""
        return {"pending": self.pending}

    def _restore_method(self, state: dict[str, Any]) -> None:
        """Restore the points not yet launched."""
        self.pending = list(state["pending"])
