"""Determined's ``core_v2``: the Core API as module-level singletons, and unmanaged runs.

::

    from hpcdet.experimental import core_v2

    core_v2.init(config=core_v2.Config(name="my-run", hparams={"lr": 0.1}))
    for step in range(100):
        core_v2.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0})
    core_v2.close()

Run inside a trial of the master, it is that trial's Core API. Run anywhere else, it is an
*unmanaged* experiment: the master shows it and stores its metrics and checkpoints but
never schedules it (see docs/unmanaged.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpcdet.core import DistributedContext, PreemptMode, TensorboardMode
from hpcdet.experimental.core_v2._core_v2 import (
    Config,
    DefaultConfig,
    UnmanagedConfig,
    close,
    init,
    init_context,
    url_reverse_webui_exp_view,
)

if TYPE_CHECKING:
    from hpcdet import core

# The singletons init() sets and close() clears (Determined's names).
train: core.TrainContext | None = None
distributed: core.DistributedContext | None = None
preempt: core.PreemptContext | None = None
checkpoint: core.CheckpointContext | None = None
searcher: core.SearcherContext | None = None
info: core.Info | None = None

__all__ = [
    "Config",
    "DefaultConfig",
    "DistributedContext",
    "PreemptMode",
    "TensorboardMode",
    "UnmanagedConfig",
    "checkpoint",
    "close",
    "distributed",
    "info",
    "init",
    "init_context",
    "preempt",
    "searcher",
    "train",
    "url_reverse_webui_exp_view",
]
