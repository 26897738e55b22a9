"""Profiling: timings of the training loop's stages and system metrics, sent to the master.

``core_context.profiler`` is a :class:`ProfilerContext`. Off (the default), ``timing(name)``
returns one shared no-op context manager and no thread runs, so wrapping every stage of
every batch costs nothing. On, each rank accumulates its timings in memory (count, total
and max per name), and a background thread samples the node's system metrics (only on the
node's local rank 0: one sampler per node) every ``sampling_interval`` seconds. Every
``samples_per_report`` samples the thread sends one report to the master's ``profiling``
metric group: per stage ``timing.<name>.{count,mean_ms,max_ms}`` since the last report,
and per system metric its mean over the samples (see :mod:`hpcdet.core._sysmetrics`).
Its ``steps_completed`` is the batch the trainer last announced with :meth:`set_batch`.

In a multi-process trial, names carry where they come from: ``@rank<r>`` for timings,
``@<node>`` for system metrics of a multi-node trial (``timing.train_batch.mean_ms@rank3``,
``system.cpu_util_pct@node07``).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

from hpcdet.core._reporter import MetricsReporter
from hpcdet.core._sysmetrics import SystemSampler

GROUP = "profiling"
_NULL_TIMING: AbstractContextManager[None] = contextlib.nullcontext()


class ProfileSink(Protocol):
    """Where profiling reports go: the master, or stderr outside a job."""

    def report(self, steps_completed: int, metrics: dict[str, float]) -> None:
        """Send one report (may block; never called from the training loop)."""

    def close(self) -> None:
        """Ship what is queued and release what the sink holds."""


class Sampler(Protocol):
    """Takes samples of system metrics (:class:`SystemSampler`)."""

    def sample(self) -> dict[str, float]:
        """The metrics now."""

    def close(self) -> None:
        """Release what the sampler holds."""


class LogSink:
    """Profiling reports of a run outside a hpcdet job, printed to stderr."""

    def report(self, steps_completed: int, metrics: dict[str, float]) -> None:
        values = " ".join(f"{k}={v:.6g}" for k, v in sorted(metrics.items()))
        print(f"hpcdet core (dummy): {GROUP} steps_completed={steps_completed} {values}",
              file=sys.stderr, flush=True)

    def close(self) -> None:
        return None


class ReporterSink:
    """Sends reports through a :class:`MetricsReporter` (batched, retried, in the background).

    ``close`` is passed on only to what the sink owns: the chief shares the train
    context's reporter, which the context closes itself.
    """

    def __init__(self, reporter: MetricsReporter,
                 on_close: Callable[[], None] | None = None) -> None:
        self._reporter = reporter
        self._on_close = on_close

    def report(self, steps_completed: int, metrics: dict[str, float]) -> None:
        self._reporter.report(GROUP, steps_completed, metrics)

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()


@dataclass(frozen=True)
class ProfilerScope:
    """What this rank profiles and how its names are labelled."""

    sample_system: bool = True  # local rank 0: one system sampler per node
    rank_label: str = ""  # "@rank3" in a multi-process trial
    node_label: str = ""  # "@node07" in a multi-node trial

    @classmethod
    def of_rank(cls, rank: int, size: int, local_rank: int, nodes: int,
                node: str) -> ProfilerScope:
        """The scope of ``rank`` among ``size`` ranks on ``nodes`` nodes, on node ``node``."""
        return cls(sample_system=local_rank == 0,
                   rank_label=f"@rank{rank}" if size > 1 else "",
                   node_label=f"@{node}" if nodes > 1 else "")


class _Timing:
    """Times one ``with`` block and adds it to the profiler's totals."""

    __slots__ = ("_name", "_profiler", "_start")

    def __init__(self, profiler: ProfilerContext, name: str) -> None:
        self._profiler = profiler
        self._name = name
        self._start = 0.0

    def __enter__(self) -> None:
        self._start = time.perf_counter()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._profiler._record(self._name, time.perf_counter() - self._start)


class ProfilerContext:
    """Times named stages of the training loop and samples system metrics when on.

    Example::

        core_context.profiler.on(sampling_interval=1.0, samples_per_report=5)
        for batch_idx, batch in enumerate(loader):
            core_context.profiler.set_batch(batch_idx)
            with core_context.profiler.timing("train_batch"):
                loss = train_step(batch)
        core_context.profiler.off()

    Arguments:
        open_sink: makes the sink reports go to, on the first :meth:`on`; stderr if None.
        scope: what this rank samples and how it labels names (one process if None).
        sampler: makes the system sampler of this node (:class:`SystemSampler`).
    """

    def __init__(self, open_sink: Callable[[], ProfileSink] | None = None, *,
                 scope: ProfilerScope | None = None,
                 sampler: Callable[[], Sampler] = SystemSampler) -> None:
        self._open_sink = open_sink or LogSink
        self._sink: ProfileSink | None = None
        self._scope = scope or ProfilerScope()
        self._make_sampler = sampler
        self._enabled = False
        self._active = False  # enabled and within the batch window
        self._batch = 0
        self._begin = 0
        self._end: int | None = None
        self._lock = threading.Lock()
        self._timings: dict[str, list[float]] = {}  # name -> [count, total s, max s]
        self._thread: _SamplerThread | None = None

    @property
    def enabled(self) -> bool:
        """Whether profiling is on (it may still wait for ``begin_on_batch``)."""
        return self._enabled

    def on(self, sampling_interval: float = 1.0, samples_per_report: int = 5, *,
           begin_on_batch: int = 0, end_after_batch: int | None = None) -> None:
        """Start profiling: sample every ``sampling_interval`` s, report every N samples.

        Only batches ``begin_on_batch`` to ``end_after_batch`` (both included, counted
        from 0 as :meth:`set_batch` is told) are profiled; after the last, profiling
        turns itself off. Calling ``on`` while on changes nothing.
        """
        _check_settings(sampling_interval, samples_per_report, begin_on_batch, end_after_batch)
        if self._enabled:
            return
        self._begin, self._end = begin_on_batch, end_after_batch
        self._sink = self._sink or self._open_sink()
        sampler = self._make_sampler() if self._scope.sample_system else None
        self._thread = _SamplerThread(self, sampler, sampling_interval, samples_per_report)
        self._enabled = True
        self._update_active()
        self._thread.start()

    def on_from_config(self, profiling: Mapping[str, Any] | None) -> bool:
        """:meth:`on` as an experiment config's ``profiling`` section says; True if on."""
        if not profiling or not profiling.get("enabled"):
            return False
        self.on(begin_on_batch=int(profiling.get("begin_on_batch") or 0),
                end_after_batch=profiling.get("end_after_batch"))
        return True

    def off(self) -> None:
        """Stop profiling and send what was gathered since the last report."""
        if not self._enabled:
            return
        was_active = self._active
        self._enabled = self._active = False
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop(last_sample=was_active)

    def set_batch(self, batch_idx: int) -> None:
        """Tell the profiler the index (from 0) of the batch about to be trained.

        That is the number of batches trained so far; reports carry it as their
        ``steps_completed``. Cheap: call it every batch.
        """
        self._batch = batch_idx
        if self._enabled:
            if self._end is not None and batch_idx > self._end:
                self.off()
            else:
                self._update_active()

    def timing(self, name: str) -> AbstractContextManager[None]:
        """A context manager timing the stage ``name``; a shared no-op when not profiling."""
        if not self._active:
            return _NULL_TIMING
        return _Timing(self, name)

    def close(self) -> None:
        """Stop profiling and ship what is left; the core context calls it."""
        self.off()
        sink, self._sink = self._sink, None
        if sink is None:
            return
        try:
            sink.close()
        except Exception as exc:  # lost profiling reports must not fail the trial
            _log(f"profiling reports were lost: {exc}")

    def _update_active(self) -> None:
        self._active = self._enabled and self._batch >= self._begin

    def _record(self, name: str, seconds: float) -> None:
        with self._lock:
            totals = self._timings.get(name)
            if totals is None:
                self._timings[name] = [1, seconds, seconds]
                return
            totals[0] += 1
            totals[1] += seconds
            if seconds > totals[2]:
                totals[2] = seconds

    def _take_timings(self) -> dict[str, float]:
        """The timing metrics since the last call, labelled with this rank."""
        with self._lock:
            timings, self._timings = self._timings, {}
        label, out = self._scope.rank_label, {}
        for name, (count, total, longest) in timings.items():
            out[f"timing.{name}.count{label}"] = count
            out[f"timing.{name}.mean_ms{label}"] = 1000.0 * total / count
            out[f"timing.{name}.max_ms{label}"] = 1000.0 * longest
        return out

    def _send(self, system: list[dict[str, float]]) -> None:
        """Report the timings so far and the mean of the ``system`` samples."""
        label = self._scope.node_label
        metrics = {f"{name}{label}": value for name, value in _means(system).items()}
        metrics.update(self._take_timings())
        if metrics and self._sink is not None:
            self._sink.report(self._batch, metrics)


class _SamplerThread:
    """Samples system metrics on a timer and sends a report every N samples."""

    def __init__(self, profiler: ProfilerContext, sampler: Sampler | None, interval: float,
                 samples_per_report: int) -> None:
        self._profiler = profiler
        self._sampler = sampler
        self._interval = interval
        self._per_report = samples_per_report
        self._stopped = threading.Event()
        self._window: list[dict[str, float]] = []
        self._thread = threading.Thread(target=self._run, name="hpcdet-profiler", daemon=True)

    def start(self) -> None:
        if self._sampler is not None:
            self._sampler.sample()  # the first sample only sets the base of the rates
        self._thread.start()

    def stop(self, *, last_sample: bool) -> None:
        """Stop the thread, then send the last, partial window from the caller.

        With ``last_sample``, a sample covering the time since the last one is added.
        """
        self._stopped.set()
        self._thread.join()
        try:
            if last_sample and self._sampler is not None:
                self._window.append(self._sampler.sample())
            self._profiler._send(self._window)
        except Exception as exc:  # as in the thread: never stop training over profiling
            _log(f"the last profiling report was lost: {exc}")
        finally:
            if self._sampler is not None:
                self._sampler.close()

    def _run(self) -> None:
        try:
            while not self._stopped.wait(self._interval):
                self._tick()
        except Exception as exc:  # profiling must never stop training: log and give up
            _log(f"profiling stopped: {exc}")

    def _tick(self) -> None:
        sample = self._sampler.sample() if self._sampler is not None else {}
        if not self._profiler._active:
            return
        self._window.append(sample)
        if len(self._window) >= self._per_report:
            window, self._window = self._window, []
            self._profiler._send(window)


def _means(samples: list[dict[str, float]]) -> dict[str, float]:
    """Each metric's mean over the samples that have it."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for sample in samples:
        for name, value in sample.items():
            sums[name] = sums.get(name, 0.0) + value
            counts[name] = counts.get(name, 0) + 1
    return {name: total / counts[name] for name, total in sums.items()}


def _check_settings(interval: float, per_report: int, begin: int, end: int | None) -> None:
    if not interval > 0:
        raise ValueError(f"sampling_interval must be > 0 seconds, not {interval!r}")
    if isinstance(per_report, bool) or not isinstance(per_report, int) or per_report < 1:
        raise ValueError(f"samples_per_report must be an integer >= 1, not {per_report!r}")
    if begin < 0 or (end is not None and end < begin):
        raise ValueError(f"the batch window [{begin}, {end}] must have 0 <= begin <= end")


def _log(message: str) -> None:
    print(f"hpcdet core: {message}", file=sys.stderr, flush=True)
