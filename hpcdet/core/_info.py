"""What the training script may know about its trial."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hpcdet.job.trial_info import TrialInfo


@dataclass(frozen=True)
class Info:
    """The trial this process belongs to; ids are None outside a hpcdet job.

    Example::

        lr = core_context.info.hparams["lr"]
        torch.manual_seed(core_context.info.trial_seed)
    """

    trial_id: int | None
    experiment_id: int | None
    trial_seed: int
    hparams: dict[str, Any]
    latest_checkpoint: str | None = None
    experiment_config: dict[str, Any] = field(default_factory=dict)
    master_url: str | None = None
    run_id: int | None = None

    @property
    def trial(self) -> Info:
        """Determined's ``info.trial`` (``.trial_id``, ``.experiment_id``, ``.hparams``...):
        hpcdet keeps them on the info itself, so this is the same object."""
        return self

    @property
    def _trial_info(self) -> Info:
        """Determined's private name for ``info.trial``, used by its unmanaged examples."""
        return self

    @property
    def in_job(self) -> bool:
        """True inside a hpcdet job, False for the dummy info of a local run."""
        return self.trial_id is not None

    @classmethod
    def from_trial_info(cls, trial: TrialInfo) -> Info:
        return cls(
            trial_id=trial.trial_id,
            experiment_id=trial.experiment_id,
            trial_seed=trial.trial_seed,
            hparams=dict(trial.hparams),
            latest_checkpoint=trial.latest_checkpoint,
            experiment_config=dict(trial.experiment_config),
            master_url=trial.master_url,
            run_id=trial.run_id,
        )

    @classmethod
    def dummy(cls, hparams: dict[str, Any] | None = None, *, trial_seed: int = 0) -> Info:
        """Info for a local run: no ids, the given hparams, a fixed seed."""
        return cls(
            trial_id=None, experiment_id=None, trial_seed=trial_seed, hparams=dict(hparams or {})
        )
