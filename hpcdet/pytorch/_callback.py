"""``PyTorchCallback``: hooks the trainer calls at points of the trial's life."""

from __future__ import annotations

from typing import Any


class PyTorchCallback:
    """Subclass and override the hooks you need; return them from ``build_callbacks()``.

    A callback's :meth:`state_dict` is saved in checkpoints under its name and handed back
    to :meth:`load_state_dict` when the trial resumes. Hooks run on every rank.
    """

    def on_trial_startup(self, first_batch_idx: int, checkpoint_uuid: str | None) -> None:
        """Before training starts (or resumes at ``first_batch_idx``)."""

    def on_trial_shutdown(self) -> None:
        """After training ends, normally or by an exception."""

    def on_training_start(self) -> None:
        """Before the first batch this process trains."""

    def on_training_epoch_start(self, epoch_idx: int) -> None:
        """Before the first batch of epoch ``epoch_idx``."""

    def on_training_epoch_end(self, epoch_idx: int) -> None:
        """After the last batch of epoch ``epoch_idx``."""

    def on_training_workload_end(
        self, avg_metrics: dict[str, Any], batch_metrics: list[dict[str, Any]]
    ) -> None:
        """After training metrics were reported: their means, and each batch's."""

    def on_validation_start(self) -> None:
        """Before validation."""

    def on_validation_epoch_start(self) -> None:
        """Before validation (Determined calls both)."""

    def on_validation_end(self, metrics: dict[str, Any]) -> None:
        """After validation, with the reduced metrics (the same on every rank)."""

    def on_validation_epoch_end(self, outputs: list[Any]) -> None:
        """After validation."""

    def on_checkpoint_load_start(self, checkpoint: dict[str, Any]) -> None:
        """Before the state in ``checkpoint`` is restored."""

    def on_checkpoint_save_start(self, checkpoint: dict[str, Any]) -> None:
        """Before ``checkpoint`` (the state dict about to be saved) is written; chief only."""

    def on_checkpoint_write_end(self, checkpoint_dir: str) -> None:
        """After the checkpoint files were written to ``checkpoint_dir``; chief only."""

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        """After checkpoint ``uuid`` was stored and registered; chief only."""

    def state_dict(self) -> dict[str, Any]:
        """State to save in checkpoints."""
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
