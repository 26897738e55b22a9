"""The training loop: runs one PyTorchTrial on every rank of the job.

:class:`hpcdet.pytorch.Trainer` drives it for both entry points, ``Trainer(trial,
context).fit(...)`` and the harness's ``model_def:Trial`` entrypoint (which fits with the
experiment config's periods, as Determined's harness does).

Per batch it only reads the data, moves it to the device and calls ``train_batch``
(DistributedDataParallel all-reduces the gradients there); metrics stay on the device
until a report. On each ``reporting_period`` boundary it reports training metrics and
progress and asks whether to stop (``should_preempt()``, a collective, so every rank
asks at the same batches); it validates and checkpoints on their periods and at the end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import random
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager as ContextManager
from typing import Any

import numpy as np
import torch

import hpcdet.pytorch._checkpoint as _checkpoint
from hpcdet.core import Context
from hpcdet.pytorch._context import PyTorchTrialContext
from hpcdet.pytorch._data import DataLoader, ShardedBatchSampler
from hpcdet.pytorch._evaluate import reduce_custom, validate
from hpcdet.pytorch._lr_scheduler import LRScheduler
from hpcdet.pytorch._metrics import TrainingMetrics, as_metrics
from hpcdet.pytorch._trial import PyTorchTrial
from hpcdet.pytorch._units import Epoch, TrainUnit


class Outcome(enum.Enum):
    """How training ended."""

    COMPLETED = "completed"  # reached the searcher's length
    STOPPED = "stopped"  # preempted, stopped by the searcher, or set_stop_requested


@dataclasses.dataclass
class Progress:
    """The trainer's counters (saved in checkpoints)."""

    batches: int = 0
    records: int = 0  # over all ranks, up to the last Trainer._records (same on every rank)
    last_validation: int = -1
    last_checkpoint: int = -1


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (all devices) with ``seed``."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


@dataclasses.dataclass(frozen=True)
class FitPlan:
    """What ``fit()`` decided: lengths and periods as units, and the checkpoint policy."""

    max_length: TrainUnit
    validation_period: TrainUnit
    checkpoint_period: TrainUnit
    reporting_period: TrainUnit
    checkpoint_policy: str = "best"
    step_zero_validation: bool = False
    test_mode: bool = False
    profiling_enabled: bool = False
    searcher_metric: str | None = None
    smaller_is_better: bool = True
    average_training_metrics: bool = True
    latest_checkpoint: str | None = None


class TrialController:
    """Trains one built ``trial`` through ``context`` as ``plan`` says; :meth:`run` does it."""

    def __init__(self, trial: PyTorchTrial, context: PyTorchTrialContext, plan: FitPlan) -> None:
        self.core: Context = context._core
        self.dist = self.core.distributed
        self.context = context
        self.plan = plan
        self.trial = trial
        self.trial_class = type(trial)
        _check_wrapped(context)
        self.callbacks = self.trial.build_callbacks()
        self.train_spec = _check_loader(self.trial.build_training_data_loader(), "training")
        self.val_spec = _check_loader(self.trial.build_validation_data_loader(), "validation")
        self.sampler = ShardedBatchSampler(
            len(self.train_spec.dataset),
            batch_size=self.train_spec.batch_size,
            rank=self.dist.rank,
            ranks=self.dist.size,
            seed=context.get_trial_seed(),
        )
        self.batches_per_epoch = len(self.sampler)
        if self.batches_per_epoch < 1:
            raise ValueError(
                f"the training data ({len(self.train_spec.dataset)} records) gives no whole "
                f"batch of {self.train_spec.batch_size} per rank on {self.dist.size} rank(s)"
            )
        self.context._position.batches_per_epoch = self.batches_per_epoch
        self.progress = Progress()
        self.metrics = TrainingMetrics(self.context.device)
        self.local_records = 0  # records this rank trained since progress.records
        self.last_metrics: dict[str, Any] = {}
        # This trial's best searcher metric so far (checkpoint_policy: best).
        self.own_best: float | None = None
        self._profiler = getattr(self.core, "profiler", None)

    # Entry ---------------------------------------------------------------------------

    def run(self) -> Outcome:
        """Restore ``plan.latest_checkpoint`` (if any), train, validate, checkpoint."""
        uuid = self.plan.latest_checkpoint
        if uuid is not None:
            self._restore(uuid)
        self.context._position.batches_trained = self.progress.batches
        self._start_profiling()
        for callback in self.callbacks.values():
            callback.on_trial_startup(self.progress.batches, uuid)
        try:
            return self._train()
        finally:
            for callback in self.callbacks.values():
                callback.on_trial_shutdown()
            self._stop_profiling()

    def _train(self) -> Outcome:
        target = 1 if self.plan.test_mode else self._target()
        if (
            self.plan.step_zero_validation
            and self.progress.batches == 0
            and self.progress.last_validation < 0
        ):
            self._validate()
        for callback in self.callbacks.values():
            callback.on_training_start()
        for batch in self._batches(target):
            self._train_batch(batch)
            if self._after_batch(target):
                self._finish_stopped()
                return Outcome.STOPPED
        self._finish()
        return Outcome.COMPLETED

    def _target(self) -> int:
        return self.plan.max_length.in_batches(self.batches_per_epoch)

    # The loop ------------------------------------------------------------------------

    def _batches(self, target: int) -> Iterator[Any]:
        """The batches still to train, epoch after epoch, from where the trial stands."""
        while self.progress.batches < target:
            epoch, skip = divmod(self.progress.batches, self.batches_per_epoch)
            self.sampler.set_epoch(epoch, skip)
            loader = self.train_spec.build(
                self.sampler, _generator(self.context.get_trial_seed(), epoch)
            )
            iterator = iter(loader)
            if skip == 0:
                for callback in self.callbacks.values():
                    callback.on_training_epoch_start(epoch)
            for _ in range(skip, self.batches_per_epoch):
                if self.progress.batches >= target:
                    return
                with self._timing("dataloader_next"):
                    batch = next(iterator)
                yield batch

    def _train_batch(self, batch: Any) -> None:
        context = self.context
        with self._timing("to_device"):
            batch = context.to_device(batch)
        context._set_grad_sync()
        epoch = self.progress.batches // self.batches_per_epoch
        with self._timing("train_batch"):
            output = self.trial.train_batch(batch, epoch, self.progress.batches)
        self.metrics.add(as_metrics(output))
        self.local_records += self.trial.get_batch_length(batch)
        self.progress.batches += 1
        context._position.batches_trained = self.progress.batches
        with self._timing("step_lr_schedulers"):
            context._step_schedulers(LRScheduler.StepMode.STEP_EVERY_BATCH, self.progress.batches)

    def _after_batch(self, target: int) -> bool:
        """Epoch end, reports, validation, checkpoint, stop check; True to stop now."""
        batches = self.progress.batches
        if batches % self.batches_per_epoch == 0:
            self._end_epoch(batches // self.batches_per_epoch)
        at_report = self._due(self.plan.reporting_period)
        if at_report:
            self._report_training()
        if batches >= target:
            return False  # _finish validates and checkpoints
        validated = self._due(self.plan.validation_period)
        by_policy = False
        if validated:
            by_policy = self._validate_for_policy()
        # Gradients of an unfinished accumulation live only in memory: no checkpoint or
        # stop before the optimizer step that consumes them.
        if batches % self.context._aggregation_frequency:
            return False
        if by_policy or self._due(self.plan.checkpoint_period):
            self._checkpoint()
        elif not (at_report or validated):
            return False
        return self._should_stop()

    def _end_epoch(self, epochs_done: int) -> None:
        self.context._step_schedulers(LRScheduler.StepMode.STEP_EVERY_EPOCH, epochs_done)
        for callback in self.callbacks.values():
            callback.on_training_epoch_end(epochs_done - 1)

    def _due(self, period: TrainUnit) -> bool:
        return period.due(self.progress.batches, self.batches_per_epoch)

    def _should_stop(self) -> bool:
        """Preempted, stopped by the master, or asked by the trial on any rank (collective)."""
        preempt = self.core.preempt.should_preempt()
        requested = self.context.get_stop_requested()
        if self.dist.size > 1:
            requested = any(self.dist.allgather(requested))
        return preempt or requested

    def _finish_stopped(self) -> None:
        self._report_training()
        if self.progress.last_checkpoint != self.progress.batches:
            self._checkpoint()
        if self.dist.is_chief:
            print(
                f"hpcdet.pytorch: stopped after batch {self.progress.batches} "
                "(preempted or asked to stop); the checkpoint is saved",
                file=sys.stderr,
                flush=True,
            )

    def _finish(self) -> None:
        self._report_training()
        if self.progress.last_validation != self.progress.batches:
            self._validate()
        if self.progress.last_checkpoint != self.progress.batches:
            self._checkpoint()

    # Reports -------------------------------------------------------------------------

    def _report_training(self) -> None:
        if self.metrics.batches == 0:
            return
        with self._timing("reduce_metrics"):
            metrics, batch_metrics = self.metrics.reduce(
                self.dist, self.plan.average_training_metrics
            )
            metrics.update(reduce_custom(self.context, for_training=True))
        # As Determined: "batches" and "epochs" (whole epochs done) unless the trial's own.
        metrics.setdefault("batches", self.progress.batches)
        metrics.setdefault("epochs", self.progress.batches // self.batches_per_epoch)
        self.core.train.report_training_metrics(
            self.progress.batches, metrics, batch_metrics=batch_metrics
        )
        self.core.train.report_progress(self._progress_fraction())
        for callback in self.callbacks.values():
            callback.on_training_workload_end(metrics, batch_metrics)

    def _progress_fraction(self) -> float:
        """Training done, as a fraction of ``max_length`` in its own unit (as Determined)."""
        length = self.plan.max_length
        done = self.progress.batches
        if isinstance(length, Epoch):
            done //= self.batches_per_epoch
        total = length.value if isinstance(length.value, int) else 0
        return min(done / total, 1.0) if total > 0 else 0.0

    def _validate(self) -> dict[str, Any]:
        for callback in self.callbacks.values():
            callback.on_validation_start()
            callback.on_validation_epoch_start()
        metrics = validate(self.trial, self.context, self.val_spec)
        # As Determined: "batches" and "epochs" (whole epochs done) unless the trial's own.
        metrics.setdefault("batches", self.progress.batches)
        metrics.setdefault("epochs", self.progress.batches // self.batches_per_epoch)
        metrics["records"] = self._records()
        self.core.train.report_validation_metrics(self.progress.batches, metrics)
        self.progress.last_validation = self.progress.batches
        self.last_metrics = metrics
        for callback in self.callbacks.values():
            callback.on_validation_end(metrics)
            callback.on_validation_epoch_end([])
        return metrics

    def _validate_for_policy(self) -> bool:
        """Validate; True when ``checkpoint_policy`` wants a checkpoint of this state.

        ``best``: the validation beats the experiment's best before it (as Determined
        decides it, on the chief; the answer is broadcast so every rank agrees).
        """
        policy = self.plan.checkpoint_policy
        best_before = self._best_so_far() if policy == "best" and self.dist.is_chief else None
        metrics = self._validate()
        wanted = policy == "all" or (policy == "best" and self._beats(metrics, best_before))
        if self._beats(metrics, self.own_best):
            self.own_best = float(metrics[self.plan.searcher_metric or ""])
        return bool(self.dist.broadcast(wanted)) if self.dist.size > 1 else wanted

    def _best_so_far(self) -> float | None:
        """The experiment's best from the master, or this trial's own if better or alone
        (its last reports may not have reached the master yet)."""
        master = self.core.train.get_experiment_best_validation()
        if master is None or self.own_best is None:
            return master if master is not None else self.own_best
        better = min if self.plan.smaller_is_better else max
        return float(better(master, self.own_best))

    def _beats(self, metrics: dict[str, Any], best_before: float | None) -> bool:
        value = metrics.get(self.plan.searcher_metric or "")
        if not isinstance(value, int | float):
            return False
        if best_before is None:
            return True
        return value < best_before if self.plan.smaller_is_better else value > best_before

    def _records(self) -> int:
        """Records trained over all ranks (a collective): folds the local counts in."""
        local = self.local_records
        total = sum(self.dist.allgather(local)) if self.dist.size > 1 else local
        self.progress.records += total
        self.local_records = 0
        return self.progress.records

    # Checkpoints ---------------------------------------------------------------------

    def _checkpoint(self) -> None:
        records = self._records()
        rng = (
            self.dist.allgather(_checkpoint.rng_state())
            if self.dist.size > 1
            else [_checkpoint.rng_state()]
        )
        self.progress.last_checkpoint = self.progress.batches
        if self.dist.is_chief:
            state = _checkpoint.trial_state(
                self.context, self.callbacks, dataclasses.asdict(self.progress), rng
            )
            _checkpoint.save(
                self.core, state, self._metadata(records), self._load_data(), self.callbacks
            )
        if self.dist.size > 1:
            self.dist.barrier()  # no rank races ahead (or exits) before the checkpoint exists

    def _metadata(self, records: int) -> dict[str, Any]:
        return {
            "steps_completed": self.progress.batches,
            "format": _checkpoint.FORMAT,
            "trial_type": "PyTorchTrial",
            "trial_cls": _class_spec(self.trial_class),
            "batches": self.progress.batches,
            "epochs": self.progress.batches / self.batches_per_epoch,
            "records": records,
        }

    def _load_data(self) -> dict[str, Any]:
        info = self.core.info
        return {
            "trial_type": "PyTorchTrial",
            "trial_cls_spec": _class_spec(self.trial_class),
            "hparams": self.context.get_hparams(),
            "experiment_config": self.context.get_experiment_config(),
            "trial_id": info.trial_id,
            "experiment_id": info.experiment_id,
            "trial_seed": info.trial_seed,
        }

    def _restore(self, uuid: str) -> None:
        with self.core.checkpoint.restore_path(uuid) as path:
            state = _checkpoint.read_state(path, "cpu")
        for callback in self.callbacks.values():
            callback.on_checkpoint_load_start(state)
        _checkpoint.load_into(state, self.context, self.callbacks)
        saved = state["trainer"]
        self.progress = Progress(**saved)
        rng_states = state["rng_states"]
        _checkpoint.set_rng_state(rng_states[self.dist.rank % len(rng_states)])

    # Helpers -------------------------------------------------------------------------

    def _timing(self, name: str) -> ContextManager[Any]:
        if self._profiler is None:
            return contextlib.nullcontext()
        timing: ContextManager[Any] = self._profiler.timing(name)
        return timing

    def _start_profiling(self) -> None:
        """``fit(profiling_enabled=True)`` turns the Core API profiler on, with the batch
        window of the config's ``profiling`` section when it has one."""
        if self._profiler is None or not self.plan.profiling_enabled:
            return
        profiling = dict(self.context.get_experiment_config().get("profiling") or {})
        if hasattr(self._profiler, "on_from_config"):
            self._profiler.on_from_config({**profiling, "enabled": True})
        else:
            self._profiler.on()

    def _stop_profiling(self) -> None:
        if self._profiler is not None and self.plan.profiling_enabled:
            self._profiler.off()


def _check_wrapped(context: PyTorchTrialContext) -> None:
    """As Determined: a trial with no wrapped model or optimizer is a mistake."""
    if not context.models:
        raise ValueError("the trial wrapped no model: call context.wrap_model() in __init__")
    if not context.optimizers:
        raise ValueError(
            "the trial wrapped no optimizer: call context.wrap_optimizer() in __init__"
        )


def _check_loader(loader: Any, which: str) -> DataLoader:
    if not isinstance(loader, DataLoader):
        raise TypeError(
            f"build_{which}_data_loader() must return a hpcdet.pytorch.DataLoader, not "
            f"{type(loader).__name__} (the trainer shards the data itself)"
        )
    return loader


def _generator(seed: int, epoch: int) -> torch.Generator:
    generator = torch.Generator()
    generator.manual_seed(seed * 7919 + epoch)
    return generator


def _class_spec(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"
