"""``det experiment set gc-policy``: which checkpoints a new policy would delete, and running it.

As in Determined, setting the policy runs checkpoint garbage collection at once with it
(the reconciler would otherwise only collect when a trial ends). Collection is
:mod:`hpcdet.master.reports.checkpoint_gc`'s: only checkpoints of ended trials are deleted.
The preview applies the same rules to the same facts without deleting anything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.master.models import Checkpoint, Experiment, Metric, Trial, as_utc
from hpcdet.master.reports.checkpoint_gc import (
    ACTIVE,
    CheckpointCollector,
    CheckpointFacts,
    GcPolicy,
    checkpoints_to_keep,
)
from hpcdet.master.reports.searcher_metric import SearcherMetric
from hpcdet.master.settings.core import MasterSettings
from hpcdet.states import TERMINAL_STATES

_TERMINAL = [s.value for s in TERMINAL_STATES]


def current_policy(exp: Experiment) -> dict[str, int]:
    """The experiment's policy now (``checkpoint_storage.save_*``, Determined's defaults)."""
    policy = GcPolicy.from_config(exp.config)
    return {"save_experiment_best": policy.experiment_best,
            "save_trial_best": policy.trial_best, "save_trial_latest": policy.trial_latest}


def preview(session: Session, exp: Experiment, policy: Mapping[str, int]) -> list[Checkpoint]:
    """The ACTIVE checkpoints of ended trials that ``policy`` would delete, by trial and step."""
    rows = session.execute(
        select(Checkpoint, Trial.state).join(Trial, Trial.id == Checkpoint.trial_id)
        .where(Trial.experiment_id == exp.id)
        .order_by(Checkpoint.trial_id, Checkpoint.steps_completed)).all()
    metric = SearcherMetric.of(exp.config)
    checkpoints = [c for c, _ in rows]
    keep = checkpoints_to_keep(_facts(session, checkpoints, metric.name or ""),
                               GcPolicy(policy["save_experiment_best"],
                                        policy["save_trial_best"],
                                        policy["save_trial_latest"]),
                               smaller_is_better=metric.smaller_is_better)
    return [c for c, state in rows
            if c.state == ACTIVE and state in _TERMINAL and c.uuid not in keep]


def _facts(session: Session, checkpoints: list[Checkpoint], metric: str) -> list[CheckpointFacts]:
    """Each checkpoint's searcher metric: its own validation, else the one at its step."""
    at_step: dict[tuple[int, int], float] = {}
    if metric and checkpoints:
        for trial_id, step, value in session.execute(
                select(Metric.trial_id, Metric.steps_completed, Metric.value).where(
                    Metric.trial_id.in_({c.trial_id for c in checkpoints}),
                    Metric.group == "validation", Metric.name == metric,
                    Metric.archived.is_(False))):
            if math.isfinite(value):
                at_step[(trial_id, step)] = value
    return [CheckpointFacts(c.uuid, c.trial_id, c.steps_completed,
                            _own(c.validation_metrics, metric)
                            if _own(c.validation_metrics, metric) is not None
                            else at_step.get((c.trial_id, c.steps_completed)),
                            (as_utc(c.reported_at).timestamp(),))
            for c in checkpoints]


def _own(metrics: Mapping[str, Any] | None, name: str) -> float | None:
    value = (metrics or {}).get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def collect_now(sessions: sessionmaker[Session], settings: MasterSettings,
                exp_id: int) -> tuple[list[str], list[str]]:
    """Run garbage collection for one experiment now: (deleted, failed) uuids.

    Call it after the new policy is committed: the collector reads it in its own session.
    """
    return CheckpointCollector(sessions, settings).collect_experiment(exp_id)
