"""``PyTorchTrialContext``: what a PyTorchTrial uses to register its model, optimizers
and schedulers, run its backward pass and read its configuration."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
import torch.distributed as torch_dist
from torch import nn

from hpcdet.core import Context
from hpcdet.pytorch._allreduce import make_ddp
from hpcdet.pytorch._lr_scheduler import LRScheduler
from hpcdet.pytorch._reducer import MetricReducer

ClipGrads = Callable[[Iterator[nn.Parameter]], Any]


@dataclasses.dataclass
class TrainPosition:
    """Where training stands; the trainer moves it, the context reads it."""

    batches_trained: int = 0
    batches_per_epoch: int = 1

    @property
    def epoch(self) -> int:
        return self.batches_trained // self.batches_per_epoch


@dataclasses.dataclass(frozen=True)
class WrappedReducer:
    reducer: MetricReducer
    name: str | None
    for_training: bool


class PyTorchTrialContext:
    """Given to the trial's ``__init__``; the trial wraps its objects through it.

    Example::

        class MyTrial(hpcdet.pytorch.PyTorchTrial):
            def __init__(self, context):
                self.context = context
                self.model = context.wrap_model(build_model(context.get_hparam("hidden")))
                self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), 0.1))

    and its ``train_batch`` steps through it (``self.context.backward(loss)``, then
    ``self.context.step_optimizer(self.opt)``): the whole trial is in :mod:`hpcdet.pytorch`.
    """

    def __init__(
        self,
        core_context: Context,
        *,
        device: torch.device | None = None,
        hparams: Mapping[str, Any] | None = None,
        exp_conf: Mapping[str, Any] | None = None,
        aggregation_frequency: int | None = None,
        enable_tensorboard_logging: bool = True,
    ) -> None:
        """``hparams`` and ``exp_conf`` default to the trial's (``core_context.info``);
        ``aggregation_frequency`` to the config's ``optimizations.aggregation_frequency``."""
        self._core = core_context
        self.distributed = core_context.distributed
        self.device = device or default_device(self.distributed.local_rank)
        self._hparams = dict(core_context.info.hparams if hparams is None else hparams)
        config = dict(core_context.info.experiment_config if exp_conf is None else exp_conf)
        self._exp_conf = config
        optimizations = config.get("optimizations") or {}
        self._aggregation_frequency = int(
            aggregation_frequency or optimizations.get("aggregation_frequency") or 1
        )
        self._average_aggregated_gradients = bool(
            optimizations.get("average_aggregated_gradients", True)
        )
        self._enable_tensorboard_logging = enable_tensorboard_logging
        self.models: list[nn.Module] = []
        self.optimizers: list[torch.optim.Optimizer] = []
        self.lr_schedulers: list[LRScheduler] = []
        self.reducers: list[WrappedReducer] = []
        # The GradScaler wrap_scaler registered, checkpointed with the trial.
        self.scaler: Any = None
        self._position = TrainPosition()
        self._stop_requested = False

    # Registration --------------------------------------------------------------------

    def wrap_model(self, model: nn.Module) -> nn.Module:
        """Move ``model`` to this rank's device; wrap it in DistributedDataParallel when
        the trial has several ranks. Use (and call) what it returns."""
        model = model.to(self.device)
        if _world_size() > 1:
            model = make_ddp(model, self.device)
        self.models.append(model)
        return model

    def wrap_optimizer(
        self,
        optimizer: torch.optim.Optimizer,
        backward_passes_per_step: int = 1,
        fp16_compression: bool | None = None,
        average_aggregated_gradients: bool | None = None,
    ) -> torch.optim.Optimizer:
        """Register ``optimizer`` (checkpointed by the trainer); returns it unchanged.

        Gradient accumulation comes from ``optimizations.aggregation_frequency``;
        ``backward_passes_per_step`` and ``fp16_compression`` are accepted for
        compatibility and ignored.
        """
        if average_aggregated_gradients is not None:
            self._average_aggregated_gradients = average_aggregated_gradients
        self.optimizers.append(optimizer)
        return optimizer

    def wrap_lr_scheduler(
        self, lr_scheduler: Any, step_mode: LRScheduler.StepMode, frequency: int = 1
    ) -> Any:
        """Register a torch LR scheduler; the trainer steps it per ``step_mode`` and
        checkpoints it. Returns ``lr_scheduler`` itself."""
        self.lr_schedulers.append(LRScheduler(lr_scheduler, step_mode, frequency))
        return lr_scheduler

    def wrap_scaler(self, scaler: Any) -> Any:
        """Register an AMP ``GradScaler`` (``torch.amp`` or ``torch.cuda.amp``) so it is saved
        in and restored from checkpoints; returns it unchanged. Once only.

        As in Determined, use it as in plain PyTorch: ``context.backward(scaler.scale(loss))``,
        ``context.step_optimizer(opt, scaler=scaler)``, then ``scaler.update()`` once per
        batch.
        """
        if self.scaler is not None:
            raise RuntimeError("wrap_scaler() was already called; call it once")
        for method in ("scale", "step", "update", "state_dict", "load_state_dict"):
            if not callable(getattr(scaler, method, None)):
                raise TypeError(f"wrap_scaler needs a GradScaler, not {type(scaler).__name__}")
        self.scaler = scaler
        return scaler

    def wrap_reducer(
        self, reducer: MetricReducer, name: str | None = None, for_training: bool = False
    ) -> MetricReducer:
        """Register a :class:`MetricReducer`; its result joins the validation metrics
        (or the training metrics, with ``for_training``) as ``name``, or as the dict it
        returns when ``name`` is None."""
        if not isinstance(reducer, MetricReducer):
            raise TypeError(f"wrap_reducer needs a MetricReducer, not {type(reducer).__name__}")
        self.reducers.append(WrappedReducer(reducer, name, for_training))
        return reducer

    # Training steps ------------------------------------------------------------------

    def backward(
        self,
        loss: torch.Tensor,
        gradient: torch.Tensor | None = None,
        retain_graph: bool = False,
        create_graph: bool = False,
    ) -> None:
        """``loss.backward()``, scaled by ``1/aggregation_frequency`` when gradients of
        several batches are accumulated (so they average, as one larger batch would)."""
        if self._aggregation_frequency > 1 and self._average_aggregated_gradients:
            loss = loss / self._aggregation_frequency
        loss.backward(  # type: ignore[no-untyped-call]
            gradient=gradient, retain_graph=retain_graph, create_graph=create_graph
        )

    def step_optimizer(
        self,
        optimizer: torch.optim.Optimizer,
        clip_grads: ClipGrads | None = None,
        auto_zero_grads: bool = True,
        scaler: Any = None,
    ) -> None:
        """Step ``optimizer`` on the last batch of each ``aggregation_frequency`` batches
        (a no-op on the others); ``clip_grads(params)`` runs first, e.g.
        ``lambda params: torch.nn.utils.clip_grad_norm_(params, 1.0)``."""
        if not self._should_communicate_and_update():
            return
        if clip_grads is not None:
            clip_grads(_parameters(optimizer))
        if scaler is not None:
            scaler.step(optimizer)
        else:
            optimizer.step()
        if auto_zero_grads:
            optimizer.zero_grad()
        self._step_schedulers(
            LRScheduler.StepMode.STEP_EVERY_OPTIMIZER_STEP, self._optimizer_steps()
        )

    def to_device(self, data: Any) -> Any:
        """``data`` (a tensor, or dicts/lists/tuples of them) on this rank's device."""
        from hpcdet.pytorch._data import to_device

        return to_device(data, self.device)

    # Configuration -------------------------------------------------------------------

    def get_hparams(self) -> dict[str, Any]:
        """The trial's hyperparameters."""
        return dict(self._hparams)

    def get_hparam(self, name: str) -> Any:
        """Hyperparameter ``name``; KeyError naming the ones there are if it is missing."""
        hparams = self._hparams
        if name not in hparams:
            known = ", ".join(sorted(hparams)) or "none"
            raise KeyError(f"hyperparameter {name!r} is not set (the trial has: {known})")
        return hparams[name]

    def get_global_batch_size(self) -> int:
        """The ``global_batch_size`` hyperparameter: records per batch over all ranks."""
        value = self.get_hparam("global_batch_size")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"hyperparameter global_batch_size must be an int >= 1, not {value!r}")
        return value

    def get_per_slot_batch_size(self) -> int:
        """``global_batch_size // slots`` (the remainder is dropped)."""
        per_slot = self.get_global_batch_size() // self.distributed.size
        if per_slot < 1:
            raise ValueError(
                f"global_batch_size {self.get_global_batch_size()} is smaller than the "
                f"{self.distributed.size} slots of the trial"
            )
        return per_slot

    def get_experiment_config(self) -> dict[str, Any]:
        return dict(self._exp_conf)

    def get_data_config(self) -> dict[str, Any]:
        """The experiment config's free-form ``data`` section ({} when absent)."""
        return dict(self.get_experiment_config().get("data") or {})

    def get_trial_id(self) -> int | None:
        return self._core.info.trial_id

    def get_experiment_id(self) -> int | None:
        return self._core.info.experiment_id

    def get_trial_seed(self) -> int:
        return self._core.info.trial_seed

    # Progress ------------------------------------------------------------------------

    def current_train_epoch(self) -> int:
        """The epoch being trained (0-based)."""
        return self._position.epoch

    def current_train_batch(self) -> int:
        """The batch being trained: batches trained before it in the whole trial."""
        return self._position.batches_trained

    def is_epoch_start(self) -> bool:
        """Whether the batch being trained is the first of its epoch."""
        return self._position.batches_trained % self._position.batches_per_epoch == 0

    def is_epoch_end(self) -> bool:
        """Whether the batch being trained is the last of its epoch."""
        position = self._position
        return (position.batches_trained + 1) % position.batches_per_epoch == 0

    def set_stop_requested(self, stop_requested: bool) -> None:
        """Ask the trainer to stop (after a checkpoint) at its next stop check, as if the
        searcher had ended the trial; any rank may ask."""
        if not isinstance(stop_requested, bool):
            raise TypeError(f"set_stop_requested takes a bool, not {stop_requested!r}")
        self._stop_requested = stop_requested

    def get_stop_requested(self) -> bool:
        return self._stop_requested

    def get_enable_tensorboard_logging(self) -> bool:
        return False

    # For the trainer -----------------------------------------------------------------

    def _should_communicate_and_update(self) -> bool:
        return (self._position.batches_trained + 1) % self._aggregation_frequency == 0

    def _optimizer_steps(self) -> int:
        return (self._position.batches_trained + 1) // self._aggregation_frequency

    def _step_schedulers(self, mode: LRScheduler.StepMode, count: int) -> None:
        """Step the schedulers of ``mode`` whose frequency divides ``count``."""
        for scheduler in self.lr_schedulers:
            if scheduler.step_mode is mode and count % scheduler.frequency == 0:
                scheduler.step()

    def _set_grad_sync(self) -> None:
        """Let DDP all-reduce only on the batch whose optimizer step is due."""
        if self._aggregation_frequency == 1:
            return
        sync = self._should_communicate_and_update()
        for model in self.models:
            if isinstance(model, nn.parallel.DistributedDataParallel):
                model.require_backward_grad_sync = sync


def default_device(local_rank: int) -> torch.device:
    """This rank's GPU when the process group uses NCCL, or off-cluster with CUDA; else CPU."""
    if torch_dist.is_available() and torch_dist.is_initialized():
        if torch_dist.get_backend() == "nccl":
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda", local_rank % torch.cuda.device_count())
    return torch.device("cpu")


def _world_size() -> int:
    if torch_dist.is_available() and torch_dist.is_initialized():
        return int(torch_dist.get_world_size())
    return 1


def _parameters(optimizer: torch.optim.Optimizer) -> Iterator[nn.Parameter]:
    for group in optimizer.param_groups:
        yield from group["params"]
