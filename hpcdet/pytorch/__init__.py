"""``hpcdet.pytorch``: Determined's PyTorchTrial API, trained by hpcdet's harness.

A Determined user's trial needs only its imports changed
(``from determined.pytorch import ...`` becomes ``from hpcdet.pytorch import ...``)::

    import torch
    from hpcdet.pytorch import DataLoader, PyTorchTrial, PyTorchTrialContext

    class MyTrial(PyTorchTrial):
        def __init__(self, context: PyTorchTrialContext) -> None:
            self.context = context
            self.model = context.wrap_model(torch.nn.Linear(8, 2))
            self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.1))

        def build_training_data_loader(self) -> DataLoader:
            return DataLoader(train_set, batch_size=self.context.get_per_slot_batch_size())

        def build_validation_data_loader(self) -> DataLoader:
            return DataLoader(val_set, batch_size=64)

        def train_batch(self, batch, epoch_idx, batch_idx):
            x, y = batch
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
            self.context.backward(loss)
            self.context.step_optimizer(self.opt)
            return {"loss": loss}

        def evaluate_batch(self, batch, batch_idx):
            x, y = batch
            return {"validation_loss": torch.nn.functional.cross_entropy(self.model(x), y)}

A script trains it with Determined's Trainer API (``with hpcdet.pytorch.init() as context:
Trainer(MyTrial(context), context).fit(max_length=Epoch(1))``); a ``model_def:MyTrial``
entrypoint has the harness do the same from the experiment config.

See docs/pytorch-trial.md for what the trainer does (sharding, reduction, periods,
checkpoints, preemption).
"""

from __future__ import annotations

from hpcdet.pytorch import samplers
from hpcdet.pytorch._callback import PyTorchCallback
from hpcdet.pytorch._context import PyTorchTrialContext
from hpcdet.pytorch._data import DataLoader, TorchData
from hpcdet.pytorch._fit import Trainer
from hpcdet.pytorch._init import init, local_core_context
from hpcdet.pytorch._lr_scheduler import LRScheduler, StepMode
from hpcdet.pytorch._reducer import MetricReducer, Reducer
from hpcdet.pytorch._run import load_trial_from_checkpoint_path, run_trial_class
from hpcdet.pytorch._trainer import Outcome
from hpcdet.pytorch._trial import PyTorchTrial
from hpcdet.pytorch._units import Batch, Epoch, TrainUnit

__all__ = [
    "samplers",
    "Batch",
    "DataLoader",
    "Epoch",
    "LRScheduler",
    "MetricReducer",
    "Outcome",
    "PyTorchCallback",
    "PyTorchTrial",
    "PyTorchTrialContext",
    "Reducer",
    "StepMode",
    "TorchData",
    "TrainUnit",
    "Trainer",
    "init",
    "load_trial_from_checkpoint_path",
    "local_core_context",
    "run_trial_class",
]
