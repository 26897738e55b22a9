"""``det master info`` shows the master's health, and ``det`` commands warn (one line on
stderr) when an answer carries ``X-Hpcdet-Health: degraded; ...``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

FakeMasterTransport = Any  # conftest.FakeMasterTransport (conftest is not importable)

DEGRADED = {"status": "degraded", "problems": [
    "scheduler unreachable since 2026-11-26 11:00:00 UTC: squeue exited with 1: fatal"],
    "scheduler_failing_since": "2026-11-26T11:00:00+00:00", "cycle_seconds": 60.2,
    "cycle_completed_at": None, "db_seconds": 0.004}
HEADER = {"X-Hpcdet-Health": "degraded; scheduler unreachable since 2026-11-26 11:00:00 UTC"}


def test_master_info_prints_the_health_and_its_problems(
        det: Callable[..., Any], fake_master: FakeMasterTransport) -> None:
    fake_master.add("GET", "/master", httpx.Response(200, headers=HEADER, json={
        "version": "1", "cluster_name": "c", "database": "sqlite", "resource_manager": "slurm",
        "url": "http://m", "auth_mode": "open", "health": DEGRADED}))
    result = det("master", "info")
    assert result.exit_code == 0, result.output
    assert "Health: degraded" in result.stdout
    assert "  - scheduler unreachable since 2026-11-26 11:00:00 UTC" in result.stdout
    assert "Cycle seconds: 60.2" in result.stdout and "Last cycle completed" not in result.stdout
    assert result.stderr.count("warning: the master reports itself degraded") == 1


def test_a_listing_warns_once_on_stderr_and_not_when_healthy(
        det: Callable[..., Any], fake_master: FakeMasterTransport) -> None:
    fake_master.add("GET", "/experiments", httpx.Response(200, headers=HEADER, json={
        "experiments": [], "total": 0, "offset": 0, "limit": 100}))
    result = det("experiment", "list")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: the master reports itself degraded (scheduler unreachable "
                        "since 2026-11-26 11:00:00 UTC); states shown may be stale "
                        "(det master info)"]
    assert "warning" not in result.stdout


def test_no_warning_without_the_header(det: Callable[..., Any],
                                       fake_master: FakeMasterTransport) -> None:
    fake_master.add("GET", "/experiments", {"experiments": [], "total": 0, "offset": 0,
                                            "limit": 100})
    result = det("experiment", "list")
    assert result.exit_code == 0 and "warning" not in result.stderr
