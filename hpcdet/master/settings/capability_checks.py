"""Refuse, when the master's config is read, what its scheduler cannot do.

A policy the scheduler cannot honour would otherwise be found at the first submission (a
priority band's QOS on PBS) or in the fair-share sync's log (``manage_accounts: true`` where
hpcdet manages no accounts): the plug-in's capabilities say so up front, with their reason.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from hpcdet.dispatcher.plugin import SchedulerPlugin
from hpcdet.master.settings.pools import (
    CustomPool,
    FairShareSettings,
    PartitionOverride,
    PriorityBand,
    PriorityPolicy,
)


def refuse_unsupported(plugin: SchedulerPlugin, where: str, *, priority: PriorityPolicy,
                       overrides: Mapping[str, PartitionOverride], pools: Sequence[CustomPool],
                       fair_share: FairShareSettings | None, errors: list[str]) -> None:
    """Append one line per setting that ``plugin``'s scheduler cannot honour."""
    for place, band in _bands(where, priority, overrides, pools):
        if band.qos and (line := plugin.refusal("qos", f"{place}.qos")):
            errors.append(line)
    if fair_share is not None and fair_share.manage_accounts == "true":
        line = plugin.refusal("fair_share_accounts", f"{where}.fair_share.manage_accounts")
        if line:
            errors.append(f"{line} (set it to false or auto)")


def _bands(where: str, priority: PriorityPolicy, overrides: Mapping[str, PartitionOverride],
           pools: Sequence[CustomPool]) -> Iterator[tuple[str, PriorityBand]]:
    """Every priority band in the config, with where it stands."""
    for i, band in enumerate(priority.bands):
        yield f"{where}.priority.bands[{i}]", band
    for name, override in overrides.items():
        for i, band in enumerate(override.priority_bands or ()):
            yield f"{where}.partition_overrides.{name}.priority_bands[{i}]", band
    for p, pool in enumerate(pools):
        for i, band in enumerate(pool.priority_bands or ()):
            yield f"{where}.resource_pools[{p}].priority_bands[{i}]", band
