"""Priority bands, nice, fair-share accounts and wckeys of a job (queue/placement.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from hpcdet.errors import ConfigError
from hpcdet.master.queue.placement import JobOwner, account_name, place
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings
from hpcdet.master.settings.pools import FairShareSettings, PriorityBand, PriorityPolicy

BANDS = (PriorityBand(1, 20, "high"), PriorityBand(21, 60, "normal"),
         PriorityBand(61, 99, "low", "scavenger"))


@dataclass(frozen=True)
class _Pool:
    name: str = "batch"
    partition: str = "batch"
    priority_bands: tuple[PriorityBand, ...] | None = None


def _settings(**rm: object) -> MasterSettings:
    base = ResourceManagerSettings(priority=PriorityPolicy(BANDS, nice_step=100))
    return MasterSettings(resource_manager=replace(base, **rm))  # type: ignore[arg-type]


def test_priority_picks_the_band_and_orders_inside_it() -> None:
    settings, owner = _settings(), JobOwner("ann")
    placements = {p: place(settings, _Pool(), owner, priority=p) for p in (5, 20, 42, 80)}
    assert [(x.qos, x.partition) for x in placements.values()] == [
        ("high", "batch"), ("high", "batch"), ("normal", "batch"), ("low", "scavenger")]
    assert placements[5].nice < placements[20].nice
    assert placements[42].nice == 100 * (42 - 21) + 50  # default weight 1: half a step


def test_weight_breaks_ties_but_never_beats_priority() -> None:
    settings, owner = _settings(), JobOwner("ann")
    heavy = place(settings, _Pool(), owner, priority=30, weight=10).nice
    light = place(settings, _Pool(), owner, priority=30, weight=0.1).nice
    better = place(settings, _Pool(), owner, priority=29, weight=0.1).nice
    assert heavy < light and better < heavy and min(heavy, light, better) >= 0


def test_a_pool_may_have_its_own_bands_and_none_means_nice_only() -> None:
    own = _Pool(priority_bands=(PriorityBand(1, 99, "gpu"),))
    assert place(_settings(), own, JobOwner("ann"), priority=80).qos == "gpu"
    bare = place(_settings(priority=PriorityPolicy()), _Pool(), JobOwner("ann"))
    assert (bare.qos, bare.partition, bare.nice) == (None, "batch", 100 * 41 + 50)


def test_priority_out_of_range_is_refused() -> None:
    with pytest.raises(ConfigError, match="resources.priority: must be from 1 to 99, got 0"):
        place(_settings(), _Pool(), JobOwner("ann"), priority=0)


def test_fair_share_account_by_workspace_or_user() -> None:
    owner = JobOwner("Bob", workspace="Team A/vision")
    assert place(_settings(), _Pool(), owner).account is None
    by_ws = _settings(fair_share=FairShareSettings())
    assert place(by_ws, _Pool(), owner).account == "det-team_a_vision"
    assert place(by_ws, _Pool(), JobOwner("bob")).account == "det-uncategorized"
    by_user = _settings(fair_share=FairShareSettings(account_source="user", account_prefix=""))
    assert place(by_user, _Pool(), owner).account == "bob"
    assert account_name("x-", "///") == "x-_"


def test_wckey_follows_job_project_source() -> None:
    owner = JobOwner("ann", workspace="ws", project="proj", labels=("team-nlp", "x", "team-a"))
    assert place(_settings(), _Pool(), owner).wckey == "proj"
    assert place(_settings(job_project_source="workspace"), _Pool(), owner).wckey == "ws"
    assert place(_settings(job_project_source="label:team-"), _Pool(), owner).wckey == "nlp,a"
    assert place(_settings(job_project_source="label"), _Pool(), owner).wckey == "team-nlp,x,team-a"
