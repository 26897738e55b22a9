"""Training metrics: summed as tensors on the device batch after batch, reduced over the
ranks only when reported (one all-reduce per report, one host sync)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.distributed as torch_dist

from hpcdet.core import DistributedContext


def as_metrics(output: Any) -> Mapping[str, Any]:
    """``train_batch``'s answer as a dict: a bare loss tensor becomes ``{"loss": it}``."""
    if isinstance(output, torch.Tensor):
        return {"loss": output}
    if isinstance(output, Mapping):
        return output
    raise TypeError(f"train_batch must return a loss tensor or a dict of metrics, not {output!r}")


class TrainingMetrics:
    """The sums of the training metrics since the last report, on ``device``."""

    def __init__(self, device: torch.device) -> None:
        self._device = device
        self._sums: dict[str, torch.Tensor] = {}
        self._batches = 0

    @property
    def batches(self) -> int:
        """Batches added since the last report."""
        return self._batches

    def add(self, metrics: Mapping[str, Any]) -> None:
        """Add one batch's metrics (tensors are detached; no host sync)."""
        self._batches += 1
        for name, value in metrics.items():
            number = _scalar(name, value, self._device)
            total = self._sums.get(name)
            self._sums[name] = number if total is None else total + number

    def reduce(self, dist: DistributedContext, average_across_ranks: bool) -> dict[str, float]:
        """The mean of each metric per batch (over all ranks' batches when
        ``average_across_ranks``, else this rank's), then start over."""
        names = sorted(self._sums)
        if average_across_ranks and dist.size > 1:
            _check_same_names(dist, names)
        sums = torch.stack([self._sums[name] for name in names]) if names else None
        ranks = 1
        if sums is not None and average_across_ranks and dist.size > 1:
            torch_dist.all_reduce(sums)
            ranks = dist.size
        values = [] if sums is None else (sums / (self._batches * ranks)).tolist()
        self._sums, self._batches = {}, 0
        return dict(zip(names, values, strict=True))


def _scalar(name: str, value: Any, device: torch.device) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(
                f"training metric {name!r} must be a single number, not shape {tuple(value.shape)}"
            )
        return value.detach().reshape(()).to(device=device, dtype=torch.float64)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"training metric {name!r} must be a number or a tensor, not {value!r}")
    return torch.tensor(float(value), dtype=torch.float64, device=device)


def _check_same_names(dist: DistributedContext, names: list[str]) -> None:
    per_rank = dist.allgather(names)
    if any(other != names for other in per_rank):
        raise ValueError(
            f"train_batch returned different metric names on different ranks: {per_rank}"
        )
