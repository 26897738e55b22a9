"""What ``det trial describe --profile`` shows: the trial's ``profiling`` metric group.

The profiler (:mod:`hpcdet.core._profiler`) reports, per report window,
``timing.<stage>.{count,mean_ms,max_ms}`` and node metrics ``system.*`` / ``gpu.<i>.*``;
in a multi-process trial the names end in ``@rank<r>`` (timings) or ``@<node>`` (system
metrics of a multi-node trial). Timings are summed over every window and rank; system
metrics are shown per node, latest value and mean over the windows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hpcdet.cli.output import format_size, render_table

# The trainer's stages, in the order a batch goes through them.
STAGES = ("dataloader_next", "to_device", "train_batch", "step_lr_schedulers", "from_device",
          "reduce_metrics")
_TIMING_FIELDS = ("count", "mean_ms", "max_ms")


@dataclass
class _Stage:
    count: float = 0.0
    total_ms: float = 0.0
    max_ms: float = 0.0


def profile_text(series: Sequence[Mapping[str, Any]]) -> str:
    """The two tables of ``det trial describe --profile`` for the reports ``series``."""
    timings, system = _split(series)
    sections = ["Profiling timings (all ranks):\n" + (_timings_table(timings) or "  none"),
                "Profiling system metrics:\n" + (_system_table(system) or "  none")]
    return "\n\n".join(sections)


def _split(series: Sequence[Mapping[str, Any]]) -> tuple[
        list[dict[str, float]], list[dict[str, float]]]:
    """Each report's timing metrics and system metrics, in the order reported."""
    timings, system = [], []
    for report in series:
        metrics = report.get("metrics") or {}
        timings.append({k: v for k, v in metrics.items() if k.startswith("timing.")})
        system.append({k: v for k, v in metrics.items() if not k.startswith("timing.")})
    return timings, system


def _timings_table(reports: Sequence[Mapping[str, float]]) -> str | None:
    stages = _stage_totals(reports)
    if not stages:
        return None
    order = [s for s in STAGES if s in stages] + sorted(set(stages) - set(STAGES))
    rows = [[name, int(stages[name].count), _ms(stages[name].total_ms / stages[name].count),
             _ms(stages[name].max_ms)] for name in order if stages[name].count]
    return render_table(["Stage", "Count", "Mean ms", "Max ms"], rows)


def _stage_totals(reports: Sequence[Mapping[str, float]]) -> dict[str, _Stage]:
    """Per stage: count, total and max over every report window of every rank."""
    stages: dict[str, _Stage] = {}
    for metrics in reports:
        for (stage, _rank), fields in _timing_windows(metrics).items():
            totals = stages.setdefault(stage, _Stage())
            count = fields.get("count", 0.0)
            totals.count += count
            totals.total_ms += count * fields.get("mean_ms", 0.0)
            totals.max_ms = max(totals.max_ms, fields.get("max_ms", 0.0))
    return stages


def _timing_windows(metrics: Mapping[str, float]) -> dict[tuple[str, str], dict[str, float]]:
    """``{(stage, rank label): {count, mean_ms, max_ms}}`` of one report."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for key, value in metrics.items():
        name, _, where = key.partition("@")
        stage, _, field = name.removeprefix("timing.").rpartition(".")
        if stage and field in _TIMING_FIELDS:
            out.setdefault((stage, where), {})[field] = float(value)
    return out


def _system_table(reports: Sequence[Mapping[str, float]]) -> str | None:
    values: dict[tuple[str, str], list[float]] = {}
    for metrics in reports:
        for key, value in metrics.items():
            name, _, node = key.partition("@")
            values.setdefault((node, name), []).append(float(value))
    if not values:
        return None
    rows = [[node or "-", name, _human(name, series[-1]), _human(name, sum(series) / len(series))]
            for (node, name), series in sorted(values.items())]
    return render_table(["Node", "Metric", "Latest", "Mean"], rows)


def _ms(value: float) -> str:
    return f"{value:.3f}"


def _human(name: str, value: float) -> str:
    """A value in the unit its name ends with."""
    if name.endswith("_pct"):
        return f"{value:.1f}%"
    if name.endswith("_bytes_per_s"):
        return f"{format_size(value)}/s"
    if name.endswith("_bytes"):
        return format_size(value)
    return f"{value:.6g}"
