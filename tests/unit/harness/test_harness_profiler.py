"""The profiler: system sampling on this machine, timings, the batch window, reporting."""

from __future__ import annotations

import os
import pathlib
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

import pytest
from hang_guard import wait_until
from harness_fakes import FakeMaster

import hpcdet.core
from hpcdet.core import _context, _profiler
from hpcdet.core._distributed import DistributedContext, LocalCollectives
from hpcdet.core._profiler import ProfilerContext, ProfilerScope
from hpcdet.core._sysmetrics import GpuSampler, SystemSampler
from hpcdet.job.trial_info import load_trial_info


class ListSink:
    """Keeps the reports it is given."""

    def __init__(self) -> None:
        self.reports: list[tuple[int, dict[str, float]]] = []
        self.closed = False

    def report(self, steps_completed: int, metrics: dict[str, float]) -> None:
        self.reports.append((steps_completed, metrics))

    def close(self) -> None:
        self.closed = True


class CountingSampler:
    """A sampler whose n-th sample is ``{"system.cpu_util_pct": n}``."""

    def __init__(self) -> None:
        self.calls = 0
        self.closed = False

    def sample(self) -> dict[str, float]:
        self.calls += 1
        return {"system.cpu_util_pct": float(self.calls)}

    def close(self) -> None:
        self.closed = True


class FakeClock:
    """Stands in for the ``time`` module in the profiler: each reading moves on a step."""

    def __init__(self, steps_s: list[float]) -> None:
        self._steps = iter(steps_s)
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += next(self._steps)
        return self.now


def _profiler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "hpcdet-profiler"]


def _wait_until(condition: Callable[[], bool]) -> None:
    wait_until(condition, "the profiler's step")


# --- system metrics -------------------------------------------------------------------


def test_sampling_this_machine_gives_sane_values() -> None:
    sampler = SystemSampler()
    first = sampler.sample()
    threading.Event().wait(0.3)  # let the CPU counters move (no assertion on time)
    second = sampler.sample()
    sampler.close()
    assert "system.cpu_util_pct" not in first  # a rate needs two samples
    assert 0.0 <= second["system.cpu_util_pct"] <= 100.0 * (os.cpu_count() or 1)
    assert 0 < second["system.memory_used_bytes"] <= second["system.memory_total_bytes"]
    for name in ("net_sent", "net_recv", "disk_read", "disk_write"):
        assert second[f"system.{name}_bytes_per_s"] >= 0.0


def _fake_proc(root: pathlib.Path, cpu: tuple[int, ...], lo_bytes: int, eth_bytes: int,
               sectors: int) -> pathlib.Path:
    (root / "net").mkdir(parents=True, exist_ok=True)
    (root / "stat").write_text("cpu  " + " ".join(map(str, cpu)) + "\ncpu0 1 2 3 4\n")
    (root / "meminfo").write_text("MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 400 kB\n")
    header = "Inter-|   Receive\n face |bytes packets\n"
    row = "{}: {} 0 0 0 0 0 0 0 {} 0 0 0 0 0 0 0\n"
    (root / "net" / "dev").write_text(header + row.format("lo", lo_bytes, lo_bytes)
                                      + row.format("eth0", eth_bytes, 2 * eth_bytes))
    (root / "diskstats").write_text(f"8 0 sda 1 0 {sectors} 0 1 0 {sectors} 0 0 0 0\n"
                                    f"8 1 sda1 1 0 {sectors} 0 1 0 {sectors} 0 0 0 0\n")
    return root


def test_proc_counters_become_rates_of_physical_disks_and_real_interfaces(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML: GPU metrics left out
    (tmp_path / "block" / "sda" / "device").mkdir(parents=True)
    proc = _fake_proc(tmp_path / "proc", (100, 0, 100, 800, 0, 0, 0, 0), 5, 1000, 10)
    sampler = SystemSampler(proc, tmp_path / "block")
    assert sampler.sample() == {"system.memory_used_bytes": 600 * 1024.0,
                                "system.memory_total_bytes": 1000 * 1024.0}
    # 300 busy jiffies of 400: 75 %; sda1 is a partition of sda and lo is loopback.
    _fake_proc(proc, (300, 0, 200, 900, 0, 0, 0, 0), 10**9, 3000, 30)
    metrics = sampler.sample()
    seconds = 2000 / metrics["system.net_recv_bytes_per_s"]
    assert metrics["system.cpu_util_pct"] == 75.0
    assert metrics["system.net_sent_bytes_per_s"] * seconds == pytest.approx(4000)
    assert metrics["system.disk_read_bytes_per_s"] * seconds == pytest.approx(20 * 512)
    assert not any(name.startswith("gpu.") for name in metrics)


def test_no_gpu_metrics_without_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert GpuSampler.open() is None


def _fake_pynvml() -> types.ModuleType:
    """A FAKE ``pynvml`` module with two GPUs, for the NVML-present path."""
    fake = types.ModuleType("pynvml")
    state = {"shutdown": False}
    fake.state = state  # type: ignore[attr-defined]
    fake.nvmlInit = lambda: None  # type: ignore[attr-defined]
    fake.nvmlShutdown = lambda: state.update(shutdown=True)  # type: ignore[attr-defined]
    fake.nvmlDeviceGetCount = lambda: 2  # type: ignore[attr-defined]
    fake.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    fake.nvmlDeviceGetUtilizationRates = (  # type: ignore[attr-defined]
        lambda h: types.SimpleNamespace(gpu=40 + h))
    fake.nvmlDeviceGetMemoryInfo = (  # type: ignore[attr-defined]
        lambda h: types.SimpleNamespace(used=(h + 1) * 2**30))
    return fake


def test_gpu_metrics_with_a_fake_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    sampler = SystemSampler()
    metrics = sampler.sample()
    sampler.close()
    assert {k: v for k, v in metrics.items() if k.startswith("gpu.")} == {
        "gpu.0.util_pct": 40.0, "gpu.0.memory_used_bytes": 2.0**30,
        "gpu.1.util_pct": 41.0, "gpu.1.memory_used_bytes": 2.0**31}
    assert fake.state["shutdown"] is True  # type: ignore[attr-defined]


# --- the profiler ---------------------------------------------------------------------


@pytest.mark.usefixtures("off_cluster")
def test_off_costs_nothing_the_shared_nullcontext_and_no_thread() -> None:
    with hpcdet.core.init() as core:
        assert isinstance(core.profiler, hpcdet.core.ProfilerContext)
        assert core.profiler.enabled is False
        core.profiler.set_batch(3)
        assert core.profiler.timing("train_batch") is _profiler._NULL_TIMING
        assert core.profiler.timing("to_device") is _profiler._NULL_TIMING
        assert _profiler_threads() == []


def test_timings_are_counted_averaged_and_maxed(monkeypatch: pytest.MonkeyPatch) -> None:
    # enter/exit pairs of 1, 3 and 5 ms for train_batch, then 2 ms for to_device
    clock = FakeClock([0.0, 0.001, 0.0, 0.003, 0.0, 0.005, 0.0, 0.002])
    monkeypatch.setattr(_profiler, "time", clock)
    sink, sampler = ListSink(), CountingSampler()
    profiler = ProfilerContext(lambda: sink, sampler=lambda: sampler)
    profiler.on(sampling_interval=3600)
    for batch in range(3):
        profiler.set_batch(batch)
        with profiler.timing("train_batch"):
            pass
    with profiler.timing("to_device"):
        pass
    profiler.close()
    assert sink.reports == [(2, {
        "system.cpu_util_pct": 2.0,  # the last sample, taken when profiling stops
        "timing.train_batch.count": 3, "timing.train_batch.mean_ms": pytest.approx(3.0),
        "timing.train_batch.max_ms": pytest.approx(5.0),
        "timing.to_device.count": 1, "timing.to_device.mean_ms": pytest.approx(2.0),
        "timing.to_device.max_ms": pytest.approx(2.0)})]
    assert sink.closed and sampler.closed and _profiler_threads() == []


def test_only_the_batch_window_is_profiled_and_profiling_ends_after_it() -> None:
    sink = ListSink()
    profiler = ProfilerContext(lambda: sink, sampler=CountingSampler)
    profiler.on_from_config({"enabled": True, "begin_on_batch": 2, "end_after_batch": 3})
    timed = []
    for batch in range(6):
        profiler.set_batch(batch)
        with profiler.timing("train_batch"):
            timed.append(profiler.timing("x") is not _profiler._NULL_TIMING)
    assert timed == [False, False, True, True, False, False]
    assert profiler.enabled is False and _profiler_threads() == []
    assert [(steps, m["timing.train_batch.count"]) for steps, m in sink.reports] == [(4, 2)]


def test_the_thread_reports_every_n_samples_with_the_nodes_label() -> None:
    sink = ListSink()
    scope = ProfilerScope.of_rank(rank=0, size=4, local_rank=0, nodes=2, node="n1")
    profiler = ProfilerContext(lambda: sink, scope=scope, sampler=CountingSampler)
    profiler.on(sampling_interval=0.01, samples_per_report=2)
    profiler.set_batch(7)
    with profiler.timing("dataloader_next"):
        pass
    _wait_until(lambda: len(sink.reports) >= 2)
    profiler.off()
    steps, first = sink.reports[0]
    # samples 2 and 3 (sample 1 only set the base of the rates): mean 2.5
    assert first["system.cpu_util_pct@n1"] == 2.5
    assert all(name.endswith(("@n1", "@rank0")) for _, m in sink.reports for name in m)
    assert sum(m.get("timing.dataloader_next.count@rank0", 0) for _, m in sink.reports) == 1


def test_scope_of_ranks() -> None:
    assert ProfilerScope.of_rank(0, 1, 0, 1, "n1") == ProfilerScope(True, "", "")
    assert ProfilerScope.of_rank(3, 4, 1, 2, "n2") == ProfilerScope(False, "@rank3", "@n2")


@pytest.mark.parametrize(("settings", "message"), [
    ({"sampling_interval": 0}, "sampling_interval"),
    ({"samples_per_report": 0}, "samples_per_report"),
    ({"begin_on_batch": 5, "end_after_batch": 4}, "batch window"),
])
def test_bad_settings_are_refused(settings: dict[str, Any], message: str) -> None:
    profiler = ProfilerContext(ListSink)
    with pytest.raises(ValueError, match=message):
        profiler.on(**settings)
    assert profiler.enabled is False and _profiler_threads() == []


def test_a_failing_sink_never_reaches_the_training_loop(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class FailingSink(ListSink):
        def report(self, steps_completed: int, metrics: dict[str, float]) -> None:
            raise RuntimeError("master gone")

    profiler = ProfilerContext(FailingSink, sampler=CountingSampler)
    profiler.on(sampling_interval=0.01, samples_per_report=1)
    _wait_until(lambda: "profiling stopped: master gone" in capsys.readouterr().err)
    with profiler.timing("train_batch"):
        pass
    profiler.close()  # the last report fails too: logged, not raised
    assert "the last profiling report was lost: master gone" in capsys.readouterr().err


# --- in a job -------------------------------------------------------------------------


@pytest.mark.usefixtures("in_job")
def test_the_chief_reports_through_the_train_reporter(fake_master: FakeMaster) -> None:
    with hpcdet.core.init() as core:
        core.profiler.on(sampling_interval=3600)
        core.profiler.set_batch(5)
        with core.profiler.timing("train_batch"):
            pass
        core.train.report_training_metrics(5, {"loss": 1.0})
    [report] = fake_master.reports("profiling")
    assert report["steps_completed"] == 5
    assert report["metrics"]["timing.train_batch.count"] == 1
    assert report["metrics"]["system.memory_used_bytes"] > 0
    assert len(fake_master.reports("training")) == 1


def test_another_rank_opens_a_reporter_of_its_own(
    job_dir: pathlib.Path, fake_master: FakeMaster
) -> None:
    trial = load_trial_info({"DET_TRIAL_INFO": str(job_dir / "trial.json")})
    # never called: the profiler uses no collectives
    rank1 = DistributedContext(rank=1, size=2, local_rank=1, local_size=2, cross_rank=0,
                               cross_size=1, collectives=LocalCollectives())
    profiler = _context._profiler(trial, rank1, None,
                                  lambda timeout: _context.trial_client(trial, timeout=timeout))
    profiler.on(sampling_interval=3600)
    with profiler.timing("from_device"):
        pass
    profiler.close()
    [report] = fake_master.reports("profiling")
    assert set(report["metrics"]) == {"timing.from_device.count@rank1",
                                      "timing.from_device.mean_ms@rank1",
                                      "timing.from_device.max_ms@rank1"}

