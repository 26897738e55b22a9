"""Grid points, matching Determined's ``master/pkg/searcher/grid.go``.

Axes are the hyperparameter leaves in sorted-key order (nested maps give
one axis per leaf); the grid is their Cartesian product with the first axis
varying slowest, exactly like Go's recursive ``cartesianProduct``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from hpcdet.searcher.sampling import HParams, hp_kind

Path = tuple[str, ...]


def go_round(value: float) -> int:
    """Round half away from zero, like Go's ``math.Round``."""
    return int(math.floor(abs(value) + 0.5)) * (1 if value >= 0 else -1)


def _int_axis(spec: dict[str, Any]) -> list[Any]:
    """Evenly spaced integers, count clamped to the size of the range."""
    lo, hi = int(spec["minval"]), int(spec["maxval"])
    count = min(int(spec["count"]), hi - lo + 1)
    if count == 1:
        return [go_round((lo + hi) / 2.0)]
    return [go_round(lo + (i * (hi - lo)) / (count - 1)) for i in range(count)]


def _float_points(spec: dict[str, Any]) -> list[float]:
    """Evenly spaced floats over ``[minval, maxval]`` (midpoint for count 1)."""
    lo, hi, count = float(spec["minval"]), float(spec["maxval"]), int(spec["count"])
    if count == 1:
        return [(lo + hi) / 2.0]
    return [lo + float(i) * (hi - lo) / float(count - 1) for i in range(count)]


def grid_axis(spec: Any) -> list[Any]:
    """Return the values of one (non-nested) hyperparameter axis."""
    kind = hp_kind(spec)
    if kind == "const":
        return [spec["val"] if isinstance(spec, dict) else spec]
    if kind == "int":
        return _int_axis(spec)
    if kind == "double":
        return list(_float_points(spec))
    if kind == "log":
        base = float(spec.get("base", 10.0))
        return [math.pow(base, e) for e in _float_points(spec)]
    if kind == "categorical":
        return list(spec["vals"])
    raise ValueError(f"unknown hyperparameter type {kind!r}")


def _axes(hparams: HParams, prefix: Path = ()) -> list[tuple[Path, list[Any]]]:
    """Flatten hyperparameters into ``(path, values)`` axes in sorted key order."""
    axes: list[tuple[Path, list[Any]]] = []
    for name in sorted(hparams):
        spec, path = hparams[name], (*prefix, name)
        if hp_kind(spec) == "nested" and spec:
            axes.extend(_axes(spec, path))
        elif hp_kind(spec) == "nested":
            axes.append((path, [{}]))
        else:
            axes.append((path, grid_axis(spec)))
    return axes


def _assign(point: HParams, path: Path, value: Any) -> None:
    """Set ``value`` at ``path`` inside the nested dict ``point``."""
    for name in path[:-1]:
        point = point.setdefault(name, {})
    point[path[-1]] = value


def grid_points(hparams: HParams) -> list[HParams]:
    """Return every grid point in Determined's order (first key slowest)."""
    axes = _axes(hparams)
    if not axes:
        return []
    points: list[HParams] = []
    for combo in itertools.product(*(values for _, values in axes)):
        point: HParams = {}
        for (path, _), value in zip(axes, combo, strict=True):
            _assign(point, path, value)
        points.append(point)
    return points
