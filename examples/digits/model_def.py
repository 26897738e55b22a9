"""The digits MLP as a ``PyTorchTrial``: hpcdet runs the training loop.

The experiment configs in this directory (``entrypoint: model_def:DigitsTrial``) train
this class. It is written as a Determined user would write it (compare Determined's
``mnist_pytorch`` example): only the imports differ, ``hpcdet`` instead of
``determined``. The trainer does what ``train.py`` does by hand: it wraps the model in
DistributedDataParallel over the trial's slots, shards the training data per rank,
averages the metrics over the ranks, validates and checkpoints every epoch (the
``min_validation_period`` and ``min_checkpoint_period`` of the configs), resumes from the
latest checkpoint, and stops when the searcher or Slurm says so.

Run it without a cluster: ``det experiment create --local const.yaml .``
"""

from __future__ import annotations

from typing import Any

import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn
from torch.utils.data import TensorDataset

from hpcdet.pytorch import DataLoader, PyTorchTrial, PyTorchTrialContext


def load_data() -> tuple[TensorDataset, TensorDataset]:
    """1437 training and 360 validation images, pixel values scaled to [0, 1]."""
    images, labels = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(
        images / 16.0, labels, test_size=0.2, random_state=0, stratify=labels
    )

    def tensors(x: Any, y: Any) -> TensorDataset:
        return TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(y))

    return tensors(x_train, y_train), tensors(x_val, y_val)


def build_model(hidden_size: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(64, hidden_size),
        nn.ReLU(),
        nn.Linear(hidden_size, hidden_size),
        nn.ReLU(),
        nn.Linear(hidden_size, 10),
    )


class DigitsTrial(PyTorchTrial):
    """Classify scikit-learn's 8x8 digits; hyperparameters ``lr``, ``hidden_size`` and
    ``global_batch_size`` (split over the slots by the trainer)."""

    def __init__(self, context: PyTorchTrialContext) -> None:
        self.context = context
        self.train_data, self.val_data = load_data()
        self.model = context.wrap_model(build_model(int(context.get_hparam("hidden_size"))))
        self.optimizer = context.wrap_optimizer(
            torch.optim.Adam(self.model.parameters(), lr=float(context.get_hparam("lr")))
        )

    def build_training_data_loader(self) -> DataLoader:
        return DataLoader(self.train_data, batch_size=self.context.get_per_slot_batch_size())

    def build_validation_data_loader(self) -> DataLoader:
        return DataLoader(self.val_data, batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        images, labels = batch
        loss = nn.functional.cross_entropy(self.model(images), labels)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        return {"loss": loss}

    def evaluate_batch(self, batch: Any, batch_idx: int) -> dict[str, Any]:
        images, labels = batch
        logits = self.model(images)
        return {
            "validation_loss": nn.functional.cross_entropy(logits, labels).item(),
            "accuracy": (logits.argmax(dim=1) == labels).float().mean().item(),
        }
