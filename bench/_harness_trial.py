"""The ``trial`` side of ``bench/harness.py throughput``: the workload as a PyTorchTrial.

``digits`` is the example's own ``DigitsTrial`` (``examples/digits/model_def.py``); ``mlp``
is the same kind of trial around the synthetic MLP. Both train exactly what
``_harness_rank.ddp_loop`` trains (same model, optimizer, global batch, data), and
``train_batch`` ticks the rank's stopwatch around the work, so the trainer's own time
between batches (loading and sharding, moving to the device, metric bookkeeping,
reporting) is inside the timed window.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch
from torch import nn

from hpcdet.pytorch import DataLoader, PyTorchTrial, PyTorchTrialContext


def make_trial_class(workload: ModuleType, watch: Any) -> type[PyTorchTrial]:
    """A PyTorchTrial over ``workload`` (the ``_harness_rank`` module) timed by ``watch``."""
    if workload.hparams()["workload"] == "digits":
        return timed_digits_trial(watch)
    return mlp_trial(workload, watch)


def timed_digits_trial(watch: Any) -> type[PyTorchTrial]:
    """The digits example's trial, its ``train_batch`` timed."""
    from model_def import DigitsTrial  # examples/digits, on sys.path

    class TimedDigitsTrial(DigitsTrial):
        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
            watch.batch_started(epoch_idx)
            metrics = super().train_batch(batch, epoch_idx, batch_idx)
            watch.batch_ended(len(batch[1]))
            return metrics

    return TimedDigitsTrial


def mlp_trial(workload: ModuleType, watch: Any) -> type[PyTorchTrial]:
    """The synthetic MLP as a trial written like ``DigitsTrial``, ``train_batch`` timed."""

    class BenchTrial(PyTorchTrial):
        def __init__(self, context: PyTorchTrialContext) -> None:
            self.context = context
            hp = context.get_hparams()
            self.train_set, self.val_set = workload.workload_data(hp["workload"],
                                                                  int(hp["records"]))
            torch.manual_seed(int(hp["seed"]))
            self.model = context.wrap_model(workload.workload_model(hp["workload"]))
            self.optimizer = context.wrap_optimizer(
                workload.make_optimizer(self.model, float(hp["lr"])))

        def build_training_data_loader(self) -> DataLoader:
            return DataLoader(self.train_set, batch_size=self.context.get_per_slot_batch_size())

        def build_validation_data_loader(self) -> DataLoader:
            return DataLoader(self.val_set, batch_size=self.context.get_per_slot_batch_size())

        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
            watch.batch_started(epoch_idx)
            x, y = batch
            loss = nn.functional.cross_entropy(self.model(x), y)
            self.context.backward(loss)
            self.context.step_optimizer(self.optimizer)
            watch.batch_ended(len(y))
            return {"loss": loss}

        def evaluate_batch(self, batch: Any, batch_idx: int) -> dict[str, Any]:
            x, y = batch
            return {"validation_loss": nn.functional.cross_entropy(self.model(x), y)}

    return BenchTrial
