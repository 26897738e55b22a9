"""``metrics_retention``: how long training metrics are kept at full resolution.

Validation metrics (and every group but ``training``) are kept forever: the searcher, the
checkpoint GC and the best checkpoint read them. Training rows reported more than
``training_days`` days ago are thinned by ``det-master vacuum-metrics``:

- ``action: downsample`` (the default) keeps the steps that are multiples of
  ``keep_every`` (every name of a kept step, so the charts' counters stay aligned);
- ``action: drop`` keeps none of them;
- ``action: keep`` keeps them all (an experiment's way to opt out of the master's policy).

Either way each trial's latest training step is kept (the trial page shows it). Without
``training_days`` nothing is thinned. An experiment's config may carry the same section;
its keys win over the master's (:meth:`MetricsRetention.overridden`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from hpcdet.master.settings.read import Getter, unknown_keys

ACTIONS = ("downsample", "drop", "keep")
KEYS = {"training_days", "action", "keep_every"}
MAX_DAYS = 36_500
MAX_KEEP_EVERY = 1_000_000


@dataclass(frozen=True)
class MetricsRetention:
    """One retention policy (the master's, or an experiment's with its overrides)."""

    training_days: int | None = None
    action: str = "downsample"
    keep_every: int = 100

    @property
    def thins(self) -> bool:
        """Whether the policy removes anything at all."""
        return self.training_days is not None and self.action != "keep"

    def overridden(self, override: Mapping[str, Any] | None) -> MetricsRetention:
        """This policy with an experiment's ``metrics_retention`` keys (validated by the
        experiment-config schema) taking precedence."""
        if not override:
            return self
        changes = {key: override[key] for key in KEYS if override.get(key) is not None}
        return replace(self, **changes)

    def describe(self) -> str:
        """One line for people: ``downsample to every 100th step after 30 days``."""
        if not self.thins:
            return "keep"
        if self.action == "drop":
            return f"drop after {self.training_days} days"
        return f"every {self.keep_every}th step after {self.training_days} days"


def build_retention(doc: Mapping[str, Any], where: str, errors: list[str]) -> MetricsRetention:
    """The ``metrics_retention`` section of master.yaml (absent: keep everything)."""
    unknown_keys(doc, KEYS, where, errors)
    get = Getter(doc, where, errors)
    return MetricsRetention(
        training_days=get.opt_integer("training_days", lo=0, hi=MAX_DAYS),
        action=get.choice("action", "downsample", ACTIONS),
        keep_every=get.integer("keep_every", 100, lo=1, hi=MAX_KEEP_EVERY),
    )
