"""``PyTorchTrial``: the class a user subclasses to have hpcdet run the training loop."""

from __future__ import annotations

import abc
from typing import Any

import torch

from hpcdet.pytorch._callback import PyTorchCallback
from hpcdet.pytorch._context import PyTorchTrialContext
from hpcdet.pytorch._data import DataLoader, batch_length
from hpcdet.pytorch._reducer import Reducer


class PyTorchTrial(abc.ABC):
    """A trial: build the model in ``__init__``, the data in ``build_*_data_loader``,
    train one batch in :meth:`train_batch`, score one in :meth:`evaluate_batch` (or the
    whole validation set in :meth:`evaluate_full_dataset`).

    The trainer calls these on every rank; it wraps the model in DistributedDataParallel
    (through ``context.wrap_model``), shards the data, reduces metrics across ranks,
    validates, checkpoints and resumes. Run it in a job through the ``model_def:Trial``
    entrypoint, or off-cluster with ``hpcdet.pytorch.run_trial_class(MyTrial, local=True)``.
    """

    trial_context_class = PyTorchTrialContext

    @abc.abstractmethod
    def __init__(self, context: PyTorchTrialContext) -> None:
        """Build and wrap models, optimizers and LR schedulers through ``context``.

        ``__init__(self, context, hparams)`` works too: the harness and
        ``load_trial_from_checkpoint_path`` then pass the trial's hyperparameters."""

    @abc.abstractmethod
    def build_training_data_loader(self) -> DataLoader:
        """The training data: a :class:`hpcdet.pytorch.DataLoader` with the per-slot
        batch size (``context.get_per_slot_batch_size()``)."""

    @abc.abstractmethod
    def build_validation_data_loader(self) -> DataLoader:
        """The validation data, a :class:`hpcdet.pytorch.DataLoader`."""

    @abc.abstractmethod
    def train_batch(
        self, batch: Any, epoch_idx: int, batch_idx: int
    ) -> torch.Tensor | dict[str, Any]:
        """Train one batch (already on the device): forward, ``context.backward(loss)``,
        ``context.step_optimizer(opt)``. Return the loss, or a dict of metrics (a
        ``loss`` among them by convention). ``batch_idx`` counts batches over the whole
        trial, ``epoch_idx`` epochs, both from 0."""

    def evaluate_batch(self, batch: Any, batch_idx: int) -> dict[str, Any]:
        """Metrics of one validation batch; the trainer reduces them over all batches
        and ranks with :meth:`evaluation_reducer` (the mean by default)."""
        raise NotImplementedError(
            f"{type(self).__name__} must define evaluate_batch() or evaluate_full_dataset()"
        )

    def evaluate_full_dataset(
        self, data_loader: torch.utils.data.DataLoader[Any]
    ) -> dict[str, Any]:
        """Metrics of the whole validation set; runs on the chief only, with the whole
        (unsharded) set, and the other ranks receive its answer."""
        raise NotImplementedError(
            f"{type(self).__name__} must define evaluate_batch() or evaluate_full_dataset()"
        )

    def build_callbacks(self) -> dict[str, PyTorchCallback]:
        """Callbacks by name (the names key their state in checkpoints)."""
        return {}

    def evaluation_reducer(self) -> Reducer | dict[str, Reducer]:
        """How ``evaluate_batch`` metrics combine: one Reducer, or one per metric."""
        return Reducer.AVG

    def get_batch_length(self, batch: Any) -> int:
        """Records in ``batch`` (counts the ``records`` metric); the first dimension of
        its first tensor unless overridden."""
        return batch_length(batch)


def defines(trial: PyTorchTrial, method: str) -> bool:
    """Whether ``trial``'s class overrides ``method`` of PyTorchTrial."""
    return getattr(type(trial), method) is not getattr(PyTorchTrial, method)
