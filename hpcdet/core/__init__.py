"""The Core API: what a training script uses to report, checkpoint and stop on time.

It follows Determined's Core API. :func:`init` returns a :class:`Context` composed of
small contexts (``train``, ``checkpoint``, ``preempt``, ``distributed``, ``info``), real
ones inside a hpcdet job and ``Dummy*`` twins elsewhere, so the same script runs on a
laptop::

    import hpcdet.core

    with hpcdet.core.init() as core_context:
        for epoch in range(epochs):
            loss = train_one_epoch()
            core_context.train.report_training_metrics(steps, {"loss": loss})
            if core_context.distributed.is_chief:
                with core_context.checkpoint.store_path({"steps_completed": steps}) as (path, _):
                    torch.save(model.state_dict(), path / "model.pt")
            if core_context.preempt.should_preempt():
                break

``should_preempt()`` turns True on Slurm's warning signals and when the master stops the
trial (the searcher ended it early); ``train.report_early_exit`` (or raising
``hpcdet.InvalidHP``) tells the master that the hyperparameters cannot work.

torch is only imported for distributed operations, so the dummy path works without it.
"""

from __future__ import annotations

from hpcdet.core._checkpoint import (
    CheckpointContext,
    CheckpointNotFoundError,
    DummyCheckpointContext,
)
from hpcdet.core._checkpoint_files import DownloadMode
from hpcdet.core._context import Context, init
from hpcdet.core._distributed import DistributedContext, DummyDistributedContext
from hpcdet.core._info import Info
from hpcdet.core._preempt import DummyPreemptContext, PreemptContext, PreemptMode
from hpcdet.core._profiler import ProfilerContext
from hpcdet.core._searcher import SearcherContext, SearcherMode, SearcherOperation, Unit
from hpcdet.core._tensorboard_mode import TensorboardMode
from hpcdet.core._train import DummyTrainContext, MetricsReport, TrainContext
from hpcdet.job.early_exit import EarlyExitReason

__all__ = [
    "CheckpointContext",
    "CheckpointNotFoundError",
    "Context",
    "DistributedContext",
    "DownloadMode",
    "DummyCheckpointContext",
    "DummyDistributedContext",
    "DummyPreemptContext",
    "DummyTrainContext",
    "EarlyExitReason",
    "Info",
    "MetricsReport",
    "PreemptContext",
    "PreemptMode",
    "ProfilerContext",
    "SearcherContext",
    "SearcherMode",
    "SearcherOperation",
    "TensorboardMode",
    "TrainContext",
    "Unit",
    "init",
]
