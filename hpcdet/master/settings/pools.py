"""The scheduling parts of ``resource_manager:``: pools, priority bands and fair-share.

Keys follow Determined's where it has them (``partition_overrides``, ``resource_pools``
with ``provider: {type: hpc, partition}``, ``task_container_defaults.slurm``); the priority
bands and the fair-share accounts are hpcdet's own (Determined ignores both on Slurm).
See docs/admin/slurm.md for a worked example.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hpcdet.dispatcher import registry
from hpcdet.dispatcher.batch_args import check_args
from hpcdet.errors import ConfigError
from hpcdet.master.settings.read import Getter, unknown_keys

SLOT_TYPES = ("cpu", "cuda", "rocm")
PRIORITY_RANGE = (1, 99)
ACCOUNT_SOURCES = ("workspace", "user")
MANAGE_ACCOUNTS = ("auto", "true", "false")
_BAND_TEXT = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")


@dataclass(frozen=True)
class SlurmDefaults:
    """``task_container_defaults.slurm`` and ``.pbs``: a pool's extra batch options (sbatch's
    and qsub's; the master uses those of its resource manager) and its GPU type."""

    sbatch_args: tuple[str, ...] = ()
    gpu_type: str | None = None
    pbsbatch_args: tuple[str, ...] = ()

    def then(self, more: SlurmDefaults) -> SlurmDefaults:
        """These defaults refined by ``more``: lists append, scalars override."""
        return SlurmDefaults(sbatch_args=(*self.sbatch_args, *more.sbatch_args),
                             gpu_type=more.gpu_type or self.gpu_type,
                             pbsbatch_args=(*self.pbsbatch_args, *more.pbsbatch_args))

    def batch_args(self, scheduler: str) -> tuple[str, ...]:
        """The options for ``scheduler``'s submit command (its plug-in's ``args_key``)."""
        args: tuple[str, ...] = getattr(self, registry.scheduler(scheduler).args_key)
        return args


@dataclass(frozen=True)
class PriorityBand:
    """Priorities ``low..high`` (inclusive) map to this QOS and, optionally, partition."""

    low: int
    high: int
    qos: str | None = None
    partition: str | None = None

    def holds(self, priority: int) -> bool:
        return self.low <= priority <= self.high


@dataclass(frozen=True)
class PriorityPolicy:
    """``priority:``: the bands every pool uses unless it has its own, and the nice step."""

    bands: tuple[PriorityBand, ...] = ()
    nice_step: int = 100


@dataclass(frozen=True)
class PartitionOverride:
    """``partition_overrides.<partition>``: what the site says about one partition."""

    description: str | None = None
    slot_type: str | None = None
    slurm: SlurmDefaults = field(default_factory=SlurmDefaults)
    priority_bands: tuple[PriorityBand, ...] | None = None


@dataclass(frozen=True)
class CustomPool:
    """``resource_pools[]``: a pool carved out of a partition with its own defaults."""

    pool_name: str
    partition: str
    description: str | None = None
    slurm: SlurmDefaults = field(default_factory=SlurmDefaults)
    priority_bands: tuple[PriorityBand, ...] | None = None


@dataclass(frozen=True)
class FairShareSettings:
    """``fair_share:``: each workspace (or user) is an account; its fairshare is its weight."""

    account_source: str = "workspace"
    account_prefix: str = "det-"
    parent_account: str | None = None
    default_weight: float = 1.0
    weights: Mapping[str, float] = field(default_factory=dict)
    manage_accounts: str = "auto"

    def weight_of(self, name: str) -> float:
        return float(self.weights.get(name, self.default_weight))


def build_slurm_defaults(doc: Mapping[str, Any], where: str, errors: list[str]) -> SlurmDefaults:
    """Read a ``task_container_defaults`` mapping (its ``slurm:`` and ``pbs:`` blocks)."""
    unknown_keys(doc, {"slurm", "pbs"}, where, errors)
    slurm = Getter(doc, where, errors).section("slurm")
    pbs = Getter(doc, where, errors).section("pbs")
    unknown_keys(slurm, {"sbatch_args", "gpu_type"}, f"{where}.slurm", errors)
    unknown_keys(pbs, {"pbsbatch_args", "gpu_type"}, f"{where}.pbs", errors)
    gpu_type = (Getter(slurm, f"{where}.slurm", errors).opt_text("gpu_type")
                or Getter(pbs, f"{where}.pbs", errors).opt_text("gpu_type"))
    return SlurmDefaults(
        sbatch_args=_batch_args("slurm", slurm.get("sbatch_args"),
                                f"{where}.slurm.sbatch_args", errors),
        gpu_type=gpu_type,
        pbsbatch_args=_batch_args("pbs", pbs.get("pbsbatch_args"),
                                  f"{where}.pbs.pbsbatch_args", errors))


def _batch_args(scheduler: str, value: Any, where: str, errors: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        command = registry.scheduler(scheduler).submit_command
        errors.append(f"{where}: must be a list of {command} options, got {value!r}")
        return ()
    try:
        check_args(scheduler, value, where)
    except ConfigError as exc:
        errors.extend(exc.errors)
        return ()
    return tuple(value)


def build_priority(doc: Mapping[str, Any], where: str, errors: list[str]) -> PriorityPolicy:
    """Read ``priority: {bands: [...], nice_step: N}``."""
    unknown_keys(doc, {"bands", "nice_step"}, where, errors)
    get = Getter(doc, where, errors)
    return PriorityPolicy(bands=build_bands(doc.get("bands"), f"{where}.bands", errors) or (),
                          nice_step=get.integer("nice_step", 100, lo=1, hi=10_000_000))


def build_bands(value: Any, where: str, errors: list[str]) -> tuple[PriorityBand, ...] | None:
    """A list of ``{priorities: "1-20", qos: high, partition: p}`` that covers 1..99 once."""
    if value is None:
        return None
    if not isinstance(value, list):
        errors.append(f"{where}: must be a list of bands, got {value!r}")
        return None
    bands = [_band(item, f"{where}[{i}]", errors) for i, item in enumerate(value)]
    found = tuple(band for band in bands if band is not None)
    if len(found) == len(bands) and found:
        _check_coverage(found, where, errors)
    return found


def _band(item: Any, where: str, errors: list[str]) -> PriorityBand | None:
    if not isinstance(item, dict):
        errors.append(f"{where}: must be a mapping like {{priorities: 1-20, qos: high}}")
        return None
    unknown_keys(item, {"priorities", "qos", "partition"}, where, errors)
    span = _span(item.get("priorities"))
    if span is None:
        errors.append(f"{where}.priorities: must be a range like 1-20 within 1-99, "
                      f"got {item.get('priorities')!r}")
        return None
    get = Getter(item, where, errors)
    return PriorityBand(span[0], span[1], qos=get.opt_text("qos"),
                        partition=get.opt_text("partition"))


def _span(value: Any) -> tuple[int, int] | None:
    if isinstance(value, int) and not isinstance(value, bool):
        low = high = value
    elif isinstance(value, str) and (match := _BAND_TEXT.match(value)):
        low, high = int(match.group(1)), int(match.group(2))
    else:
        return None
    lo, hi = PRIORITY_RANGE
    return (low, high) if lo <= low <= high <= hi else None


def _check_coverage(bands: tuple[PriorityBand, ...], where: str, errors: list[str]) -> None:
    owners: dict[int, int] = {}
    for index, band in enumerate(bands):
        for priority in range(band.low, band.high + 1):
            if priority in owners:
                errors.append(f"{where}[{index}]: priority {priority} is already in "
                              f"{where}[{owners[priority]}]")
                return
            owners[priority] = index
    missing = [p for p in range(PRIORITY_RANGE[0], PRIORITY_RANGE[1] + 1) if p not in owners]
    if missing:
        errors.append(f"{where}: the bands must cover priorities 1-99; missing {_ranges(missing)}")


def _ranges(numbers: list[int]) -> str:
    spans: list[list[int]] = []
    for n in numbers:
        if spans and spans[-1][1] == n - 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


def build_partition_overrides(doc: Mapping[str, Any], where: str,
                              errors: list[str]) -> dict[str, PartitionOverride]:
    """``partition_overrides``, keyed by lower-cased partition name (matched case-insensitively)."""
    overrides: dict[str, PartitionOverride] = {}
    for name, item in doc.items():
        here = f"{where}.{name}"
        if not isinstance(item, dict):
            errors.append(f"{here}: must be a mapping")
            continue
        unknown_keys(item, {"description", "slot_type", "task_container_defaults",
                            "priority_bands"}, here, errors)
        get = Getter(item, here, errors)
        overrides[str(name).lower()] = PartitionOverride(
            description=get.opt_text("description"),
            slot_type=get.opt_choice("slot_type", SLOT_TYPES),
            slurm=build_slurm_defaults(get.section("task_container_defaults"),
                                       f"{here}.task_container_defaults", errors),
            priority_bands=build_bands(item.get("priority_bands"), f"{here}.priority_bands",
                                       errors))
    return overrides


def build_resource_pools(value: Any, where: str, errors: list[str]) -> tuple[CustomPool, ...]:
    """``resource_pools``: a list of custom pools, each backed by one partition."""
    if value is None:
        return ()
    if not isinstance(value, list):
        errors.append(f"{where}: must be a list of pools")
        return ()
    pools = [_custom_pool(item, f"{where}[{i}]", errors) for i, item in enumerate(value)]
    seen: set[str] = set()
    for i, pool in enumerate(pools):
        if pool is not None and pool.pool_name in seen:
            errors.append(f"{where}[{i}].pool_name: {pool.pool_name!r} is defined twice")
        if pool is not None:
            seen.add(pool.pool_name)
    return tuple(pool for pool in pools if pool is not None)


def _custom_pool(item: Any, where: str, errors: list[str]) -> CustomPool | None:
    if not isinstance(item, dict):
        errors.append(f"{where}: must be a mapping")
        return None
    unknown_keys(item, {"pool_name", "description", "provider", "task_container_defaults",
                        "priority_bands"}, where, errors)
    get = Getter(item, where, errors)
    provider = get.section("provider")
    unknown_keys(provider, {"type", "partition"}, f"{where}.provider", errors)
    provided = Getter(provider, f"{where}.provider", errors)
    provided.choice("type", "hpc", ("hpc",))
    name, partition = get.opt_text("pool_name"), provided.opt_text("partition")
    if not name or not partition:
        missing = "pool_name" if not name else "provider.partition"
        errors.append(f"{where}.{missing}: is required")
        return None
    return CustomPool(pool_name=name, partition=partition, description=get.opt_text("description"),
                      slurm=build_slurm_defaults(get.section("task_container_defaults"),
                                                 f"{where}.task_container_defaults", errors),
                      priority_bands=build_bands(item.get("priority_bands"),
                                                 f"{where}.priority_bands", errors))


def build_fair_share(value: Any, where: str, errors: list[str]) -> FairShareSettings | None:
    """``fair_share:`` (absent: jobs run under the submitting user's default account)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        errors.append(f"{where}: must be a mapping")
        return None
    unknown_keys(value, {"account_source", "account_prefix", "parent_account", "default_weight",
                         "weights", "manage_accounts"}, where, errors)
    get = Getter(value, where, errors)
    return FairShareSettings(
        account_source=get.choice("account_source", "workspace", ACCOUNT_SOURCES),
        account_prefix=_prefix(value.get("account_prefix", "det-"), where, errors),
        parent_account=get.opt_text("parent_account"),
        default_weight=_weight(value.get("default_weight", 1), f"{where}.default_weight", errors),
        weights=_weights(get.section("weights"), f"{where}.weights", errors),
        manage_accounts=_manage(value.get("manage_accounts", "auto"), where, errors))


def _prefix(value: Any, where: str, errors: list[str]) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[a-z0-9_.-]*", value):
        errors.append(f"{where}.account_prefix: must be lower-case letters, digits, '_', '.' or "
                      f"'-' (Slurm account names are lower-case), got {value!r}")
        return "det-"
    return value


def _weight(value: Any, where: str, errors: list[str]) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        errors.append(f"{where}: must be a number > 0, got {value!r}")
        return 1.0
    return float(value)


def _weights(doc: Mapping[str, Any], where: str, errors: list[str]) -> dict[str, float]:
    return {str(name): _weight(weight, f"{where}.{name}", errors) for name, weight in doc.items()}


def _manage(value: Any, where: str, errors: list[str]) -> str:
    text = str(value).lower() if isinstance(value, bool | str) else ""
    if text not in MANAGE_ACCOUNTS:
        errors.append(f"{where}.manage_accounts: must be auto, true or false, got {value!r}")
        return "auto"
    return text
