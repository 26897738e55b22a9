"""Training metrics: kept as tensors on the device batch after batch, reduced over the
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
    """The training metrics of each batch since the last report, on ``device``."""

    def __init__(self, device: torch.device) -> None:
        self._device = device
        self._rows: list[dict[str, torch.Tensor]] = []

    @property
    def batches(self) -> int:
        """Batches added since the last report."""
        return len(self._rows)

    def add(self, metrics: Mapping[str, Any]) -> None:
        """Add one batch's metrics (tensors are detached; no host sync)."""
        self._rows.append(
            {name: _scalar(name, value, self._device) for name, value in metrics.items()}
        )

    def reduce(
        self, dist: DistributedContext, average_across_ranks: bool
    ) -> tuple[dict[str, float], list[dict[str, float]]]:
        """The mean of each metric over the batches that returned it, and each batch's
        metrics (averaged over the ranks when ``average_across_ranks``, else this rank's),
        as Determined reports ``metrics`` and ``batch_metrics``; then start over.

        One all-reduce and one host sync for the whole report.
        """
        names = sorted({name for row in self._rows for name in row})
        if not names:
            self._rows = []
            return {}, []
        if average_across_ranks and dist.size > 1:
            _check_same_names(dist, names)
        zero = torch.zeros((), dtype=torch.float64, device=self._device)
        values = torch.stack([torch.stack([row.get(n, zero) for n in names]) for row in self._rows])
        present = torch.tensor(
            [[float(n in row) for n in names] for row in self._rows],
            dtype=torch.float64, device=self._device,
        )
        both = torch.stack([values, present])
        if average_across_ranks and dist.size > 1:
            torch_dist.all_reduce(both)
        sums, counts = both.tolist()
        self._rows = []
        return _means(names, sums, counts), _per_batch(names, sums, counts)


def _means(
    names: list[str], sums: list[list[float]], counts: list[list[float]]
) -> dict[str, float]:
    means: dict[str, float] = {}
    for column, name in enumerate(names):
        count = sum(row[column] for row in counts)
        means[name] = sum(row[column] for row in sums) / count
    return means


def _per_batch(
    names: list[str], sums: list[list[float]], counts: list[list[float]]
) -> list[dict[str, float]]:
    return [
        {name: total[c] / count[c] for c, name in enumerate(names) if count[c]}
        for total, count in zip(sums, counts, strict=True)
    ]


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
