"""Small PyTorchTrials for the tests (importable by the rank worker processes too)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset

from hpcdet.core import _preempt
from hpcdet.pytorch import (
    DataLoader,
    LRScheduler,
    MetricReducer,
    PyTorchCallback,
    PyTorchTrial,
    PyTorchTrialContext,
    Reducer,
)

FEATURES = 4


class Regression(Dataset[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]):
    """``size`` points of a noisy linear function, fixed by ``seed``; items carry their index."""

    def __init__(self, size: int, seed: int = 1234) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.x = torch.randn(size, FEATURES, generator=generator)
        weights = torch.tensor([[1.5], [-2.0], [0.5], [3.0]])
        self.y = self.x @ weights + 0.1 * torch.randn(size, 1, generator=generator)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.x[index], self.y[index], torch.tensor(index)


class Recorder(PyTorchCallback):
    """Keeps what the trainer reported, for the tests to look at."""

    def __init__(self) -> None:
        self.training: list[dict[str, Any]] = []
        self.validation: list[dict[str, Any]] = []
        self.epochs_ended: list[int] = []
        self.loaded = 0

    def on_training_workload_end(self, avg_metrics: dict[str, Any], batch_metrics: Any) -> None:
        self.training.append(dict(avg_metrics))

    def on_validation_end(self, metrics: dict[str, Any]) -> None:
        self.validation.append(dict(metrics))

    def on_training_epoch_end(self, epoch_idx: int) -> None:
        self.epochs_ended.append(epoch_idx)

    def state_dict(self) -> dict[str, Any]:
        return {"epochs_ended": list(self.epochs_ended)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.loaded += 1
        self.epochs_ended = list(state_dict["epochs_ended"])


class RegressionTrial(PyTorchTrial):
    """A small MLP with dropout (so RNG state matters) fitting :class:`Regression`.

    Hyperparameters: ``global_batch_size``, ``lr``, ``train_size`` (default 64),
    ``preempt_at`` (a batch index at which rank ``preempt_rank`` signals preemption),
    ``stop_at`` (a batch index at which the trial calls set_stop_requested).
    """

    def __init__(self, context: PyTorchTrialContext) -> None:
        self.context = context
        dropout = float(context.get_hparams().get("dropout", 0.1))
        hidden = nn.Sequential(
            nn.Linear(FEATURES, 16), nn.Tanh(), nn.Dropout(dropout), nn.Linear(16, 1)
        )
        self.model = context.wrap_model(hidden)
        lr = float(context.get_hparams().get("lr", 0.01))
        self.opt = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        )
        scheduler = torch.optim.lr_scheduler.StepLR(self.opt, step_size=3, gamma=0.9)
        context.wrap_lr_scheduler(scheduler, LRScheduler.StepMode.STEP_EVERY_EPOCH)
        self.recorder = Recorder()
        self.seen: list[int] = []

    def build_training_data_loader(self) -> DataLoader:
        size = int(self.context.get_hparams().get("train_size", 64))
        return DataLoader(Regression(size), batch_size=self.context.get_per_slot_batch_size())

    def build_validation_data_loader(self) -> DataLoader:
        return DataLoader(Regression(30, seed=99), batch_size=7)

    def build_callbacks(self) -> dict[str, PyTorchCallback]:
        return {"recorder": self.recorder}

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        x, y, index = batch
        self.seen.extend(int(i) for i in index)
        loss = nn.functional.mse_loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        self._maybe_stop(batch_idx)
        return {"loss": loss, "rank": float(self.context.distributed.rank)}

    def _maybe_stop(self, batch_idx: int) -> None:
        hparams = self.context.get_hparams()
        if batch_idx == hparams.get("preempt_at") and (
            self.context.distributed.rank == hparams.get("preempt_rank", 0)
        ):
            _preempt.signal_preemption()
        if batch_idx == hparams.get("stop_at"):
            self.context.set_stop_requested(True)

    def evaluate_batch(self, batch: Any, batch_idx: int) -> dict[str, Any]:
        x, y, _ = batch
        error = nn.functional.mse_loss(self.model(x), y)
        return {"validation_loss": error, "batch_max": float(batch_idx), "count": len(y)}

    def evaluation_reducer(self) -> dict[str, Reducer]:
        return {"batch_max": Reducer.MAX, "count": Reducer.SUM}


class MeanAbsError(MetricReducer):
    """A custom reducer: the exact mean absolute error over all records of all ranks."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.total, self.count = 0.0, 0

    def update(self, errors: torch.Tensor) -> None:
        self.total += float(errors.abs().sum())
        self.count += len(errors)

    def per_slot_reduce(self) -> tuple[float, int]:
        return self.total, self.count

    def cross_slot_reduce(self, per_slot_metrics: list[Any]) -> float:
        return sum(t for t, _ in per_slot_metrics) / sum(c for _, c in per_slot_metrics)


class FullDatasetTrial(RegressionTrial):
    """Validates with evaluate_full_dataset and a wrapped MetricReducer."""

    def __init__(self, context: PyTorchTrialContext) -> None:
        super().__init__(context)
        self.mae = context.wrap_reducer(MeanAbsError(), name="mae")

    def evaluate_full_dataset(self, data_loader: Any) -> dict[str, Any]:
        records = 0
        for x, y, _ in data_loader:
            x, y = self.context.to_device((x, y))
            self.mae.update(self.model(x) - y)  # type: ignore[attr-defined]
            records += len(y)
        return {"records_seen": records}


# Only evaluate_full_dataset: the base class's evaluate_batch is not overridden.
FullDatasetTrial.evaluate_batch = PyTorchTrial.evaluate_batch  # type: ignore[method-assign]


class HparamsTrial(RegressionTrial):
    """Takes ``(context, hparams)`` as Determined's mnist_pytorch tutorial's trial does."""

    def __init__(self, context: PyTorchTrialContext, hparams: dict[str, Any]) -> None:
        super().__init__(context)
        self.hparams = hparams
