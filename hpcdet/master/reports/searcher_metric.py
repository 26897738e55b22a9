"""The experiment's searcher metric and which way is better, read one way for the master.

Best validations, the best trial, the experiment's best for ``checkpoint_policy: best``,
``--best N`` checkpoints and checkpoint GC all rank by it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SearcherMetric:
    """``searcher.metric`` and ``searcher.smaller_is_better`` of an experiment config."""

    name: str | None
    smaller_is_better: bool = True

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> SearcherMetric:
        """From an effective experiment config (a missing or null flag means smaller)."""
        searcher = config.get("searcher") or {}
        return cls(searcher.get("metric"), searcher.get("smaller_is_better") is not False)

    def key(self, value: float) -> float:
        """A sort key under which the best value comes first."""
        return value if self.smaller_is_better else -value

    def value_in(self, metrics: Mapping[str, Any] | None) -> float | None:
        """The metric's value in ``metrics``; None when absent or not a number."""
        value = (metrics or {}).get(str(self.name))
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)

    def best_of(self, validations: Iterable[tuple[int, Mapping[str, Any] | None]]
                ) -> tuple[int, float] | None:
        """``(trial id, value)`` of the best value among ``(trial id, best_validation)``.

        Ties go to the lowest trial id; None when no validation holds the metric.
        """
        scored = [(self.key(value), trial_id, value) for trial_id, best in validations
                  if (value := self.value_in((best or {}).get("metrics"))) is not None]
        if not scored:
            return None
        _, trial_id, value = min(scored)
        return trial_id, value
