"""TensorBoards (``det tensorboard start``): a command task of kind ``tensorboard``.

Its job runs ``python3 -m hpcdet.tensorboard`` (:mod:`hpcdet.tensorboard`), which reads
the trials' metrics from this master's API as the task's owner, writes TensorBoard event
files into the job directory and serves them with ``tensorboard`` under
``/proxy/<task id>/``. The task is planned as a command (:mod:`.commands`: the same config,
pool, slots, priority and batch arguments; default no GPU) and submitted, polled, killed,
re-adopted and its logs read as every command task. The caller checks that the
experiments and trials exist and that the owner may read them. See docs/tensorboard.md.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from hpcdet.dispatcher import Backend
from hpcdet.master.scheduling.commands import CommandPlan, plan_command
from hpcdet.master.scheduling.task_submission import TENSORBOARD
from hpcdet.master.scheduling.task_tokens import OwnerIdentity, owner_identity
from hpcdet.master.settings.core import MasterSettings


def entrypoint(experiment_ids: Sequence[int], trial_ids: Sequence[int]) -> list[str]:
    """What the job runs (the ids are whole numbers, already checked)."""
    words = ["python3", "-m", "hpcdet.tensorboard"]
    if experiment_ids:
        words += ["--experiment-ids", *(str(i) for i in experiment_ids)]
    if trial_ids:
        words += ["--trial-ids", *(str(i) for i in trial_ids)]
    return words


def description(experiment_ids: Sequence[int], trial_ids: Sequence[int]) -> str:
    """The default job name, as ``TensorBoard (experiment 3)``."""
    parts = []
    if experiment_ids:
        noun = "experiment" if len(experiment_ids) == 1 else "experiments"
        parts.append(f"{noun} {', '.join(map(str, experiment_ids))}")
    if trial_ids:
        noun = "trial" if len(trial_ids) == 1 else "trials"
        parts.append(f"{noun} {', '.join(map(str, trial_ids))}")
    return f"TensorBoard ({'; '.join(parts)})"[:200]


@dataclass(frozen=True)
class TensorBoardPlan:
    """A planned TensorBoard, and how its job reads metrics as the owner
    (:mod:`.task_tokens`)."""

    planned: CommandPlan
    identity: OwnerIdentity


def plan_tensorboard(session: Session, settings: MasterSettings, backend: Backend,
                     body: Mapping[str, Any], owner: str, experiment_ids: Sequence[int],
                     trial_ids: Sequence[int]) -> TensorBoardPlan:
    """The TensorBoard's task plan: a command's, of kind ``tensorboard``, whose job reads
    metrics as ``owner``; Invalid naming a bad config key."""
    raw = body.get("config")
    config = dict(raw or {}) if raw is None or isinstance(raw, dict) else raw  # bad: refused
    if isinstance(config, dict):
        config.setdefault("description", description(experiment_ids, trial_ids))
        resources = dict(config.get("resources") or {})
        resources.setdefault("slots", 0)  # TensorBoard needs no GPU
        config["resources"] = resources
    command_body = {"config": config, "context": body.get("context"),
                    "test_only": body.get("test_only", False),
                    "entrypoint": entrypoint(experiment_ids, trial_ids)}
    planned = plan_command(session, settings, backend, command_body, owner)
    request = planned.plan.request
    identity = owner_identity(session, settings, owner, test_only=request.test_only)
    environment = {**(request.environment or {}), **identity.environment,
                   "DET_TASK_TYPE": "TENSORBOARD"}
    config = {**(request.config or {}), "experiment_ids": list(experiment_ids),
              "trial_ids": list(trial_ids)}
    # The service token marks a proxied task (TensorBoard itself checks no token).
    request = replace(request, kind=TENSORBOARD, environment=environment, config=config,
                      files=identity.files, service_token=secrets.token_hex(32))
    return TensorBoardPlan(replace(planned, plan=replace(planned.plan, request=request)),
                           identity)
