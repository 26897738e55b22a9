"""The experiment config sections the trainer reads, in batches."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

UNITS = ("batches", "records", "epochs")
DEFAULT_SCHEDULING_UNIT = 100


@dataclasses.dataclass(frozen=True)
class Length:
    """A training length such as ``{epochs: 3}``."""

    unit: str
    value: int

    def to_batches(self, batches_per_epoch: int, global_batch_size: int) -> int:
        """In batches: epochs times the epoch length, records rounded up to whole batches."""
        if self.unit == "epochs":
            return self.value * batches_per_epoch
        if self.unit == "records":
            return -(-self.value // global_batch_size)
        return self.value


def parse_length(raw: Any, where: str) -> Length:
    """``{batches|records|epochs: n}`` (n an int >= 0); ValueError naming ``where``."""
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise ValueError(f"{where} must be one of {{batches|records|epochs: N}}, not {raw!r}")
    ((unit, value),) = raw.items()
    if unit not in UNITS:
        raise ValueError(f"{where}: unit must be batches, records or epochs, not {unit!r}")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where}.{unit} must be an int >= 0, not {value!r}")
    return Length(unit, value)


@dataclasses.dataclass(frozen=True)
class TrainerConfig:
    """What the trainer takes from the experiment config."""

    max_length: Length
    validation_period: Length
    checkpoint_period: Length
    scheduling_unit: int = DEFAULT_SCHEDULING_UNIT
    average_training_metrics: bool = True
    aggregation_frequency: int = 1
    perform_initial_validation: bool = False
    profiling: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    # Which validations also checkpoint: best (beats the experiment's best), all, none.
    checkpoint_policy: str = "best"
    searcher_metric: str | None = None
    smaller_is_better: bool = True

    @classmethod
    def from_experiment_config(cls, config: Mapping[str, Any]) -> TrainerConfig:
        """Read ``searcher``, the periods, ``scheduling_unit`` and ``optimizations``."""
        optimizations = config.get("optimizations") or {}
        searcher = config.get("searcher") or {}
        return cls(
            max_length=training_length(config.get("searcher") or {}),
            validation_period=_period(config, "min_validation_period"),
            checkpoint_period=_period(config, "min_checkpoint_period"),
            scheduling_unit=_positive_int(config, "scheduling_unit", DEFAULT_SCHEDULING_UNIT),
            average_training_metrics=bool(optimizations.get("average_training_metrics", True)),
            aggregation_frequency=_positive_int(optimizations, "aggregation_frequency", 1),
            perform_initial_validation=bool(config.get("perform_initial_validation", False)),
            profiling=dict(config.get("profiling") or {}),
            checkpoint_policy=_checkpoint_policy(config),
            searcher_metric=searcher.get("metric"),
            smaller_is_better=searcher.get("smaller_is_better") is not False,
        )


def training_length(searcher: Mapping[str, Any]) -> Length:
    """``searcher.max_length``, or ``max_time`` counted in ``time_metric`` (batches,
    records or epochs)."""
    if searcher.get("max_time") is not None:
        unit = searcher.get("time_metric") or "batches"
        if unit not in UNITS:
            raise ValueError(
                f"searcher.time_metric must be batches, records or epochs for a PyTorchTrial, "
                f"not {unit!r}"
            )
        return parse_length({unit: searcher["max_time"]}, "searcher.max_time")
    if searcher.get("max_length") is not None:
        return parse_length(searcher["max_length"], "searcher.max_length")
    raise ValueError(
        "the experiment config says nothing of how long to train: set searcher.max_length "
        "({batches|records|epochs: N}), or searcher.max_time with time_metric"
    )


def _period(config: Mapping[str, Any], key: str) -> Length:
    raw = config.get(key)
    return Length("batches", 0) if raw is None else parse_length(raw, key)


def _positive_int(section: Mapping[str, Any], key: str, default: int) -> int:
    value = section.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{key} must be an int >= 1, not {value!r}")
    return value


def _checkpoint_policy(config: Mapping[str, Any]) -> str:
    policy = config.get("checkpoint_policy") or "best"
    if policy not in ("best", "all", "none"):
        raise ValueError(f"checkpoint_policy must be best, all or none, not {policy!r}")
    return str(policy)
