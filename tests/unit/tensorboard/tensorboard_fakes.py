"""A fake metrics source for the TensorBoard syncer's tests (the master's API stand-in)."""

from __future__ import annotations

from collections.abc import Sequence

from hpcdet.tensorboard.source import Report


class FakeMetrics:
    """A metrics source whose trials report as a test says; it records every question."""

    def __init__(self) -> None:
        self.experiments: dict[int, list[int]] = {}
        self.stored: dict[tuple[int, str], list[Report]] = {}
        self.asked: list[tuple[int, str, int | None]] = []

    def report(self, trial_id: int, group: str, step: int, **metrics: float) -> None:
        self.stored.setdefault((trial_id, group), []).append(
            Report(step, dict(metrics), 1_700_000_000.0 + step))

    def trial_ids(self, experiment_ids: Sequence[int]) -> list[int]:
        return [t for e in experiment_ids for t in self.experiments.get(e, [])]

    def reports(self, trial_id: int, group: str, since_steps: int | None) -> list[Report]:
        self.asked.append((trial_id, group, since_steps))
        return [r for r in self.stored.get((trial_id, group), [])
                if since_steps is None or r.steps_completed > since_steps]
