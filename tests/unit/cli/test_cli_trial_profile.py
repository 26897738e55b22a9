"""``det trial describe --profile`` against a fake master."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from click.testing import Result

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)

TRIAL = {"trial": {"id": 7, "experiment_id": 5, "state": "RUNNING", "history": [], "jobs": []},
         "checkpoints": []}
# Two report windows of a two-rank, two-node trial.
PROFILE = {"metrics": [
    {"group": "profiling", "steps_completed": 10, "reported_at": "2024-05-01T12:00:00+00:00",
     "metrics": {"timing.train_batch.count@rank0": 10, "timing.train_batch.mean_ms@rank0": 4.0,
                 "timing.train_batch.max_ms@rank0": 9.0,
                 "timing.train_batch.count@rank1": 10, "timing.train_batch.mean_ms@rank1": 6.0,
                 "timing.train_batch.max_ms@rank1": 7.0,
                 "timing.dataloader_next.count@rank0": 10,
                 "timing.dataloader_next.mean_ms@rank0": 1.0,
                 "timing.dataloader_next.max_ms@rank0": 2.0,
                 "system.cpu_util_pct@n1": 50.0, "system.cpu_util_pct@n2": 10.0,
                 "system.memory_used_bytes@n1": 2 * 2**30,
                 "gpu.0.util_pct@n1": 90.0}},
    {"group": "profiling", "steps_completed": 20, "reported_at": "2024-05-01T12:00:05+00:00",
     "metrics": {"timing.train_batch.count@rank0": 20, "timing.train_batch.mean_ms@rank0": 5.0,
                 "timing.train_batch.max_ms@rank0": 8.0,
                 "system.cpu_util_pct@n1": 70.0,
                 "system.net_sent_bytes_per_s@n1": 3 * 2**20}},
]}


def _lines(out: str) -> list[str]:
    return [" ".join(line.split()) for line in out.splitlines()]


def test_profile_shows_timings_over_all_ranks_and_system_metrics_per_node(
    det: Det, fake_master: FakeMaster
) -> None:
    fake_master.add("GET", "/trials/7", TRIAL)
    fake_master.add("GET", "/trials/7/metrics",
                    lambda r: PROFILE if r.url.params["group"] == "profiling" else {"metrics": []})
    result = det("trial", "describe", "7", "--profile")
    assert result.exit_code == 0, result.output
    lines = _lines(result.stdout)
    assert result.stdout.startswith("Trial 7 of experiment 5: RUNNING\n")
    timings = lines.index("Profiling timings (all ranks):")
    # dataloader_next comes first, as in a batch; train_batch: (40 + 60 + 100) / 40 = 5 ms
    assert lines[timings + 1:timings + 5] == [
        "Stage Count Mean ms Max ms", "--------------- ----- ------- ------",
        "dataloader_next 10 1.000 2.000", "train_batch 40 5.000 9.000"]
    assert "n1 system.cpu_util_pct 70.0% 60.0%" in lines
    assert "n2 system.cpu_util_pct 10.0% 10.0%" in lines
    assert "n1 system.memory_used_bytes 2.0 GiB 2.0 GiB" in lines
    assert "n1 system.net_sent_bytes_per_s 3.0 MiB/s 3.0 MiB/s" in lines
    assert "n1 gpu.0.util_pct 90.0% 90.0%" in lines
    groups = [r.url.params["group"] for r in fake_master.sent("GET", "/trials/7/metrics")]
    assert groups == ["validation", "profiling"]


def test_profile_of_a_trial_without_profiling(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7", TRIAL)
    fake_master.add("GET", "/trials/7/metrics", {"metrics": []})
    out = det("trial", "describe", "7", "--profile").stdout
    assert "Profiling timings (all ranks):\n  none" in out
    assert "Profiling system metrics:\n  none" in out


def test_profile_json_prints_the_raw_series(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7/metrics", PROFILE)
    result = det("trial", "describe", "7", "--profile", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == PROFILE
    [sent] = fake_master.sent("GET", "/trials/7/metrics")
    assert sent.url.params["group"] == "profiling"
    assert fake_master.sent("GET", "/trials/7") == []


def test_single_process_names_have_no_node(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7", TRIAL)
    fake_master.add("GET", "/trials/7/metrics", {"metrics": [
        {"group": "profiling", "steps_completed": 3, "reported_at": None,
         "metrics": {"timing.to_device.count": 3, "timing.to_device.mean_ms": 0.5,
                     "timing.to_device.max_ms": 0.75, "system.disk_read_bytes_per_s": 100.0}}]})
    lines = _lines(det("trial", "describe", "7", "--profile").stdout)
    assert "to_device 3 0.500 0.750" in lines
    assert "- system.disk_read_bytes_per_s 100 B/s 100 B/s" in lines
