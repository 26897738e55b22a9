"""Validation: evaluate every rank's shard, then reduce the metrics over all ranks."""

from __future__ import annotations

import inspect
from typing import Any

import torch

from hpcdet.pytorch._context import PyTorchTrialContext
from hpcdet.pytorch._data import DataLoader, StridedBatchSampler
from hpcdet.pytorch._reducer import check_reducers, combine_summaries
from hpcdet.pytorch._trial import PyTorchTrial, defines


def validate(trial: PyTorchTrial, context: PyTorchTrialContext, spec: DataLoader) -> dict[str, Any]:
    """The trial's validation metrics, the same on every rank; models back in train mode."""
    for wrapped in context.reducers:
        wrapped.reducer.reset()
    modes = [model.training for model in context.models]
    for model in context.models:
        model.eval()
    try:
        with torch.no_grad():
            if defines(trial, "evaluate_batch"):
                metrics = _by_batch(trial, context, spec)
            elif defines(trial, "evaluate_full_dataset"):
                metrics = _full_dataset(trial, context, spec)
            else:
                raise NotImplementedError(
                    f"{type(trial).__name__} must define evaluate_batch() or "
                    "evaluate_full_dataset()"
                )
    finally:
        for model, mode in zip(context.models, modes, strict=True):
            model.train(mode)
    metrics.update(reduce_custom(context, for_training=False))
    return metrics


def _by_batch(
    trial: PyTorchTrial, context: PyTorchTrialContext, spec: DataLoader
) -> dict[str, Any]:
    dist = context.distributed
    sampler = StridedBatchSampler(
        spec, rank=dist.rank, ranks=dist.size, seed=context.get_trial_seed()
    )
    loader = spec.build(sampler, _generator(context.get_trial_seed()))
    takes_index = len(inspect.signature(trial.evaluate_batch).parameters) >= 2
    values: dict[str, list[Any]] = {}
    for index, batch in enumerate(loader):
        batch = context.to_device(batch)
        out = trial.evaluate_batch(batch, index) if takes_index else trial.evaluate_batch(batch)  # type: ignore[call-arg]
        for name, value in _check_dict(out).items():
            values.setdefault(name, []).append(value)
    stats = {name: _stats(name, batch_values) for name, batch_values in values.items()}
    per_rank = dist.allgather(stats) if dist.size > 1 else [stats]
    return dict(combine_summaries(per_rank, check_reducers(trial.evaluation_reducer())))


def _stats(name: str, values: list[Any]) -> list[float]:
    """[sum, count, max, min] of one metric's batch values, with one host sync."""
    numbers = torch.tensor([_as_number(name, v) for v in values], dtype=torch.float64)
    return [float(numbers.sum()), float(len(values)), float(numbers.max()), float(numbers.min())]


def _as_number(name: str, value: Any) -> float:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(
                f"validation metric {name!r} must be a single number, not shape "
                f"{tuple(value.shape)}; use a MetricReducer for anything else"
            )
        return float(value.detach().reshape(()).item())
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"validation metric {name!r} must be a number, not {value!r}")
    return float(value)


def _full_dataset(
    trial: PyTorchTrial, context: PyTorchTrialContext, spec: DataLoader
) -> dict[str, Any]:
    dist = context.distributed
    metrics: dict[str, Any] | None = None
    if dist.is_chief:
        sampler = StridedBatchSampler(spec, rank=0, ranks=1, seed=context.get_trial_seed())
        loader = spec.build(sampler, _generator(context.get_trial_seed()))
        metrics = _check_dict(trial.evaluate_full_dataset(loader))
    result = dist.broadcast(metrics) if dist.size > 1 else metrics
    assert result is not None
    return dict(result)


def reduce_custom(context: PyTorchTrialContext, *, for_training: bool) -> dict[str, Any]:
    """The results of the wrapped MetricReducers (a collective when there are any)."""
    dist = context.distributed
    metrics: dict[str, Any] = {}
    for wrapped in context.reducers:
        if wrapped.for_training != for_training:
            continue
        partial = wrapped.reducer.per_slot_reduce()
        per_rank = dist.allgather(partial) if dist.size > 1 else [partial]
        value = wrapped.reducer.cross_slot_reduce(per_rank)
        if wrapped.name is None:
            metrics.update(_check_dict(value))
        else:
            metrics[wrapped.name] = value
    return metrics


def _check_dict(out: Any) -> dict[str, Any]:
    if not isinstance(out, dict):
        raise TypeError(f"validation must return a dict of metrics, not {out!r}")
    return out


def _generator(seed: int) -> torch.Generator:
    generator = torch.Generator()
    generator.manual_seed(seed)
    return generator
