"""Adaptive ASHA, stopping variant (Determined's ``adaptive_asha.go``,
``asha_stopping.go`` and ``tournament.go``).

Bracket and rung arithmetic is reproduced exactly; each bracket is an
:class:`AshaBracket` and :class:`AdaptiveAshaSearch` routes events to the
bracket that created the trial, sharing one RNG as Determined does.
"""

from __future__ import annotations

import bisect
import math
import sys
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from hpcdet.searcher.base import Action, Create, Searcher, Stop, TrialRequest
from hpcdet.searcher.sampling import HParams

EXITED_METRIC = sys.float_info.max
MODES = ("aggressive", "standard", "conservative")


def max_rungs_cap(max_rungs: int, max_time: int, max_trials: int, divisor: float) -> int:
    """``min(max_rungs, floor(log(max_time)/log(d))+1, floor(log(max_trials)/log(d))+1)``."""
    by_time = int(math.log(max_time) / math.log(divisor)) + 1
    by_trials = int(math.log(max_trials) / math.log(divisor)) + 1
    return min(max_rungs, by_time, by_trials)


def mode_brackets(mode: str, max_rungs: int) -> list[int]:
    """Rungs per bracket for a mode, most aggressive (most rungs) first."""
    if mode == "aggressive":
        rungs = [max_rungs]
    elif mode == "standard":
        rungs = list(range((max_rungs - 1) // 2 + 1, max_rungs + 1))
    elif mode == "conservative":
        rungs = list(range(1, max_rungs + 1))
    else:
        raise ValueError(f"unknown adaptive mode {mode!r}")
    return sorted(rungs, reverse=True)


def bracket_max_trials(max_trials: int, divisor: float, brackets: list[int]) -> list[int]:
    """Split trials by weight ``divisor**(rungs-1)/rungs``; remainder to bracket 0."""
    weights = [math.pow(divisor, rungs - 1) / rungs for rungs in brackets]
    total = sum(weights)
    trials = [max(int(w / total * max_trials), 1) for w in weights]
    trials[0] += max(max_trials - sum(trials), 0)
    return trials


def bracket_max_concurrent(max_concurrent: int, divisor: float, trials: list[int]) -> list[int]:
    """Split concurrency evenly (remainder to the first brackets); 0 means default."""
    count = len(trials)
    if max_concurrent == 0:
        return [max(trials[-1], int(divisor))] * count
    max_concurrent = max(max_concurrent, count)
    base, remainder = divmod(max_concurrent, count)
    return [base + (1 if i < remainder else 0) for i in range(count)]


def rung_units(num_rungs: int, divisor: float, max_time: int) -> list[int]:
    """Units rung ``i`` needs: ``max(int(max_time / divisor**(rungs-i-1)), 1)``."""
    return [max(int(max_time / math.pow(divisor, num_rungs - i - 1)), 1) for i in range(num_rungs)]


def num_continue(rung_size: int, divisor: float) -> int:
    """How many of a rung's results may continue: ``max(int(n/divisor), 1)``."""
    return max(int(rung_size / divisor), 1)


@dataclass
class Rung:
    """One rung: units needed and ``(metric, trial_id)`` results sorted ascending."""

    units_needed: int
    metrics: list[tuple[float, str]]

    def insert(self, trial_id: str, metric: float) -> int:
        """Insert before any equal metric (Go's ``sort.Search``); return the index."""
        index = bisect.bisect_left(self.metrics, metric, key=itemgetter(0))
        self.metrics.insert(index, (metric, trial_id))
        return index

    def remove(self, trial_id: str) -> None:
        """Drop a trial's result, if present."""
        self.metrics = [(m, t) for m, t in self.metrics if t != trial_id]


class AshaBracket:
    """One ASHA bracket with stopping-based early termination."""

    def __init__(
        self, num_rungs: int, divisor: float, max_time: int, max_trials: int, max_concurrent: int
    ) -> None:
        """Build the rungs of a bracket."""
        self.divisor, self.max_trials, self.max_concurrent = divisor, max_trials, max_concurrent
        units = rung_units(num_rungs, divisor, max_time)
        self.rungs = [Rung(u, []) for u in units]
        self.trial_rungs: dict[str, int] = {}
        self.trials_completed = 0
        self.invalid = 0

    def initial_count(self) -> int:
        """Initial trials; with no concurrency limit, enough to fill the top rung."""
        if self.max_concurrent > 0:
            return min(self.max_concurrent, self.max_trials)
        fill = int(math.pow(self.divisor, len(self.rungs) - 1))
        return max(1, min(fill, self.max_trials))

    def add_trial(self, trial_id: str) -> None:
        """Register a created trial at rung 0."""
        self.trial_rungs[trial_id] = 0

    def wants_more(self) -> bool:
        """Whether the valid-trial budget allows another trial."""
        return len(self.trial_rungs) - self.invalid < self.max_trials

    def should_stop(self, trial_id: str, time_units: float, metric: float) -> bool:
        """Record the metric in every rung it reaches; True if the trial must stop."""
        units = int(time_units)
        for index in range(self.trial_rungs[trial_id], len(self.rungs)):
            rung = self.rungs[index]
            self.trial_rungs[trial_id] = index
            if units < rung.units_needed:
                return False
            position = rung.insert(trial_id, metric)
            if index == len(self.rungs) - 1:
                return True
            if position >= num_continue(len(rung.metrics), self.divisor):
                return True
        return False

    def exited_invalid(self, trial_id: str) -> None:
        """Forget an invalid-hp trial's results; it does not use the budget."""
        self.invalid += 1
        for rung in self.rungs[: self.trial_rungs[trial_id] + 1]:
            rung.remove(trial_id)

    def exited_errored(self, trial_id: str) -> None:
        """Count an errored trial as finished with the worst metric."""
        self.rungs[self.trial_rungs[trial_id]].insert(trial_id, EXITED_METRIC)

    def progress(self) -> float:
        """Rung-0 fill with 20% overhead; exact once rung 0 holds ``max_trials``."""
        in_rung0 = len(self.rungs[0].metrics)
        value = in_rung0 / (1.2 * self.max_trials)
        if in_rung0 == self.max_trials:
            value = max(value, (self.trials_completed - self.invalid) / self.max_trials)
        return value

    def to_state(self) -> dict[str, Any]:
        """JSON-serialisable bracket state."""
        return {
            "rungs": [{"units_needed": r.units_needed, "metrics": r.metrics} for r in self.rungs],
            "trial_rungs": self.trial_rungs,
            "trials_completed": self.trials_completed,
            "invalid": self.invalid,
        }

    def from_state(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`to_state` output."""
        self.rungs = [
            Rung(int(r["units_needed"]), [(float(m), str(t)) for m, t in r["metrics"]])
            for r in state["rungs"]
        ]
        self.trial_rungs = {str(k): int(v) for k, v in state["trial_rungs"].items()}
        self.trials_completed = int(state["trials_completed"])
        self.invalid = int(state["invalid"])


@dataclass(frozen=True)
class AshaConfig:
    """The ``adaptive_asha`` searcher settings."""

    max_trials: int
    max_time: int
    divisor: float = 4.0
    max_rungs: int = 5
    mode: str = "standard"
    bracket_rungs: tuple[int, ...] = ()
    max_concurrent_trials: int = 16
    smaller_is_better: bool = True

    def brackets(self) -> list[int]:
        """Rungs per bracket, most aggressive first."""
        if self.bracket_rungs:
            return sorted(self.bracket_rungs, reverse=True)
        cap = max_rungs_cap(self.max_rungs, self.max_time, self.max_trials, self.divisor)
        return mode_brackets(self.mode, cap)


class AdaptiveAshaSearch(Searcher):
    """A tournament of ASHA brackets sharing one RNG."""

    def __init__(self, hparams: HParams, seed: int, config: AshaConfig) -> None:
        """Split trials and concurrency over the brackets."""
        super().__init__(hparams, seed)
        self.config = config
        rungs = config.brackets()
        trials = bracket_max_trials(config.max_trials, config.divisor, rungs)
        conc = bracket_max_concurrent(config.max_concurrent_trials, config.divisor, trials)
        self.brackets = [
            AshaBracket(r, config.divisor, config.max_time, t, c)
            for r, t, c in zip(rungs, trials, conc, strict=True)
        ]
        self.owner: dict[str, int] = {}
        # Trials already told to stop: a trial keeps reporting until it notices the stop,
        # and those late reports must not enter a rung a second time.
        self.stopped: set[str] = set()

    def _create_in(self, bracket: int) -> TrialRequest:
        """Create a trial owned by ``bracket``."""
        request = self._create()
        self.owner[request.request_id] = bracket
        self.brackets[bracket].add_trial(request.request_id)
        return request

    def _refill(self, bracket: int) -> list[Action]:
        """A replacement trial for ``bracket`` if its budget allows."""
        return [Create(self._create_in(bracket))] if self.brackets[bracket].wants_more() else []

    def initial_trials(self) -> list[TrialRequest]:
        """Each bracket's initial trials, in bracket order."""
        return [
            self._create_in(index)
            for index, bracket in enumerate(self.brackets)
            for _ in range(bracket.initial_count())
        ]

    def on_validation(self, trial_id: str, metric: float, time_units: float) -> list[Action]:
        """Stop the trial if it ranks outside its rung's top; then refill."""
        if trial_id in self.stopped or self.is_closed(trial_id) or trial_id not in self.owner:
            return []
        index = self.owner[trial_id]
        signed = metric if self.config.smaller_is_better else -metric
        if not self.brackets[index].should_stop(trial_id, time_units, signed):
            return []
        self.stopped.add(trial_id)
        return [Stop(trial_id), *self._refill(index)]

    def on_trial_exited(self, trial_id: str, reason: str) -> list[Action]:
        """Close the trial; invalid-hp is replaced, errored scores worst and refills."""
        self._close(trial_id, reason)
        index = self.owner[trial_id]
        bracket = self.brackets[index]
        bracket.trials_completed += 1
        if reason == "invalid_hp":
            bracket.exited_invalid(trial_id)
            return [Create(self._create_in(index))]
        if reason == "errored":
            bracket.exited_errored(trial_id)
            return self._refill(index)
        return []

    def progress(self) -> float:
        """Mean progress over the brackets."""
        return sum(b.progress() for b in self.brackets) / len(self.brackets)

    def _method_state(self) -> dict[str, Any]:
        """Bracket states and trial ownership."""
        return {"owner": self.owner, "stopped": sorted(self.stopped),
                "brackets": [b.to_state() for b in self.brackets]}

    def _restore_method(self, state: dict[str, Any]) -> None:
        """Restore bracket states and trial ownership."""
        self.owner = {str(k): int(v) for k, v in state["owner"].items()}
        self.stopped = {str(t) for t in state["stopped"]}
        for bracket, bracket_state in zip(self.brackets, state["brackets"], strict=True):
            bracket.from_state(bracket_state)
