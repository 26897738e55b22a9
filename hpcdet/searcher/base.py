"""Event-driven searcher interface (mirrors Determined's ``search_method.go``).

A searcher is pure: the master feeds it events and carries out the actions
it returns.  Every trial is identified by the ``request_id`` of the
:class:`TrialRequest` that created it; event methods take that id as
``trial_id``.  All randomness comes from one :class:`NpRand` seeded with
``reproducibility.experiment_seed``, and :meth:`Searcher.to_state` captures
it together with the method's bookkeeping, so a restarted master continues
the same search.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Literal

from hpcdet.searcher.sampling import HParams, NpRand, sample_all

ExitReason = Literal["completed", "errored", "invalid_hp"]
EXIT_REASONS: tuple[str, ...] = ("completed", "errored", "invalid_hp")


@dataclass(frozen=True)
class TrialRequest:
    """A trial the searcher wants created (Determined's ``Create`` action)."""

    request_id: str
    hparams: HParams
    seed: int


@dataclass(frozen=True)
class Stop:
    """Ask the master to stop (preempt and close) a trial."""

    trial_id: str


@dataclass(frozen=True)
class Create:
    """Ask the master to create a trial."""

    request: TrialRequest


Action = Stop | Create


def new_request(rng: NpRand, hparams: HParams) -> TrialRequest:
    """Draw a request id (16 bytes, uuid4) then a seed in ``[0, 2**31)``.

    The order (hparams sampled by the caller first, then id, then seed)
    follows Go's evaluation of ``NewCreate(rand, sampleAll(hparams, rand))``.
    """
    request_id = str(uuid.UUID(bytes=rng.read(16), version=4))
    seed = rng.bits_limit((1 << 31) - 1)
    return TrialRequest(request_id=request_id, hparams=hparams, seed=seed)


class Searcher(ABC):
    """Base class: shared RNG plus Determined's experiment-end bookkeeping."""

    def __init__(self, hparams: HParams, seed: int) -> None:
        """Keep the hyperparameter spec and seed the RNG."""
        self.hparams = hparams
        self.rng = NpRand(seed)
        self.requested: list[str] = []
        self.closed: list[str] = []
        self.failures: list[str] = []
        # Membership of the two lists above, so a check is O(1) at 10,000 trials.
        self._requested_ids: set[str] = set()
        self._closed_ids: set[str] = set()

    def _create(self, hparams: HParams | None = None) -> TrialRequest:
        """Sample (unless given) hyperparameters and record a new request."""
        if hparams is None:
            hparams = sample_all(self.hparams, self.rng)
        request = new_request(self.rng, hparams)
        self.requested.append(request.request_id)
        self._requested_ids.add(request.request_id)
        return request

    def _close(self, trial_id: str, reason: str) -> None:
        """Record a trial as closed; check the reason and the id."""
        if reason not in EXIT_REASONS:
            raise ValueError(f"unknown exit reason {reason!r}")
        if trial_id not in self._requested_ids or self.is_closed(trial_id):
            raise KeyError(f"trial {trial_id!r} is unknown or already closed")
        self.closed.append(trial_id)
        self._closed_ids.add(trial_id)
        if reason == "errored":
            self.failures.append(trial_id)

    def is_closed(self, trial_id: str) -> bool:
        """Whether the trial has exited (in constant time)."""
        return trial_id in self._closed_ids

    def is_complete(self) -> bool:
        """True once every requested trial has closed (Determined's Shutdown)."""
        return bool(self.requested) and len(self.closed) == len(self.requested)

    def is_failure(self) -> bool:
        """True when the finished experiment had no successful trial."""
        return len(self.failures) >= len(self.requested)

    @abstractmethod
    def initial_trials(self) -> list[TrialRequest]:
        """Return the trials to create when the experiment starts."""

    @abstractmethod
    def on_validation(self, trial_id: str, metric: float, time_units: float) -> list[Action]:
        """Handle a reported validation (searcher metric at ``time_units``)."""

    @abstractmethod
    def on_trial_exited(self, trial_id: str, reason: str) -> list[Action]:
        """Handle a trial exit: ``completed``, ``errored`` or ``invalid_hp``."""

    @abstractmethod
    def progress(self) -> float:
        """Return search progress in ``[0, 1]``."""

    @abstractmethod
    def _method_state(self) -> dict[str, Any]:
        """Return the method-specific JSON-serialisable state."""

    @abstractmethod
    def _restore_method(self, state: dict[str, Any]) -> None:
        """Restore the method-specific state."""

    def to_state(self) -> dict[str, Any]:
        """Return the whole searcher state as JSON-serialisable data."""
        return {
            "rng": self.rng.to_state(),
            "requested": list(self.requested),
            "closed": list(self.closed),
            "failures": list(self.failures),
            "method": self._method_state(),
        }

    def from_state(self, state: dict[str, Any]) -> None:
        """Restore state produced by :meth:`to_state` on an equally configured searcher."""
        self.rng = NpRand.from_state(state["rng"])
        self.requested = list(state["requested"])
        self.closed = list(state["closed"])
        self.failures = list(state["failures"])
        self._requested_ids, self._closed_ids = set(self.requested), set(self.closed)
        self._restore_method(state["method"])
