"""``det experiment set gc-policy``: which checkpoints a new policy would delete, and running it.

As in Determined, setting the policy runs checkpoint garbage collection at once with it
(the reconciler would otherwise only collect when a trial ends). Collection is
:mod:`hpcdet.master.reports.checkpoint_gc`'s: only checkpoints of ended trials are deleted.
The preview applies the same rules to the same facts without deleting anything.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.orm import Session, sessionmaker

from hpcdet.master.models import Checkpoint, Experiment
from hpcdet.master.reports.checkpoint_gc import (
    CheckpointCollector,
    GcPolicy,
    doomed_checkpoints,
)
from hpcdet.master.settings.core import MasterSettings


def current_policy(exp: Experiment) -> dict[str, int]:
    """The experiment's policy now (``checkpoint_storage.save_*``, Determined's defaults)."""
    policy = GcPolicy.from_config(exp.config)
    return {"save_experiment_best": policy.experiment_best,
            "save_trial_best": policy.trial_best, "save_trial_latest": policy.trial_latest}


def preview(session: Session, exp: Experiment, policy: Mapping[str, int]) -> list[Checkpoint]:
    """The ACTIVE checkpoints of ended trials that ``policy`` would delete, by trial and step
    (the collector's own choice: registered model versions are kept too)."""
    return doomed_checkpoints(session, exp.id, exp.config,
                              GcPolicy(policy["save_experiment_best"], policy["save_trial_best"],
                                       policy["save_trial_latest"]))


def collect_now(sessions: sessionmaker[Session], settings: MasterSettings,
                exp_id: int) -> tuple[list[str], list[str]]:
    """Run garbage collection for one experiment now: (deleted, failed) uuids.

    Call it after the new policy is committed: the collector reads it in its own session.
    """
    return CheckpointCollector(sessions, settings).collect_experiment(exp_id)
