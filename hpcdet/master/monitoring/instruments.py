"""The metrics counted where things happen, in whichever process they happen.

Gauges of what a process holds now (connections) sum over live processes (``livesum``) in
multiprocess mode. Histograms use bucket bounds fitted to what they time: a scheduler
command takes milliseconds to a minute, an ingest batch milliseconds.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics
from sqlalchemy import Engine, event

# Seconds: 5 ms to 2 minutes (sbatch under a loaded slurmctld, a reconcile cycle).
_SLOW_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                 120.0)
# Seconds: 1 ms to 5 s (a group commit of metric reports).
_FAST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

# No *_created series: multiprocess mode has none, so one process alone shows none either.
disable_created_metrics()  # type: ignore[no-untyped-call]

RECONCILER_CYCLES = Counter(
    "hpcdet_reconciler_cycles", "Reconciler cycles run (failed ones included).")
RECONCILER_FAILURES = Counter(
    "hpcdet_reconciler_cycle_failures",
    "Reconciler cycles that failed, by reason (scheduler, unreachable, internal).",
    ["reason"])
RECONCILER_SECONDS = Histogram(
    "hpcdet_reconciler_cycle_duration_seconds", "Time one reconciler cycle took.",
    buckets=_SLOW_BUCKETS)
SCHEDULER_COMMANDS = Counter(
    "hpcdet_scheduler_commands",
    "Scheduler commands the master ran (sbatch, squeue, sacct, qsub, ...), by command "
    "and outcome (ok, error).", ["command", "outcome"])
SCHEDULER_SECONDS = Histogram(
    "hpcdet_scheduler_command_duration_seconds",
    "Time one scheduler command took, by command.", ["command"], buckets=_SLOW_BUCKETS)
INGEST_ROWS = Counter(
    "hpcdet_ingest_metric_rows", "Metric values stored from trials' reports (rate(): rows/s).")
INGEST_BATCHES = Counter(
    "hpcdet_ingest_batches", "Group commits of trials' metric reports, by outcome.",
    ["outcome"])
INGEST_SECONDS = Histogram(
    "hpcdet_ingest_batch_duration_seconds", "Time one group commit of reports took.",
    buckets=_FAST_BUCKETS)
PROXY_OPEN = Gauge(
    "hpcdet_proxy_connections_open", "Connections through the master's proxy open now, by kind "
    "(http, websocket).", ["kind"], multiprocess_mode="livesum")
PROXY_TOTAL = Counter(
    "hpcdet_proxy_connections", "Connections through the master's proxy, by kind.", ["kind"])
DB_IN_USE = Gauge(
    "hpcdet_db_pool_connections_in_use",
    "Database connections checked out of the master's pools now.",
    multiprocess_mode="livesum")
DB_OPEN = Gauge(
    "hpcdet_db_pool_connections_open", "Database connections the master's pools hold open.",
    multiprocess_mode="livesum")

# A command label is a program's base name; anything else is "other" (bounded labels).
_COMMAND = re.compile(r"[A-Za-z0-9_.+-]{1,32}\Z")


def command_name(argv: Sequence[str]) -> str:
    """The label of a scheduler command: its program's base name (``sbatch``), or ``other``."""
    name = os.path.basename(argv[0]) if argv else ""
    return name if _COMMAND.match(name) else "other"


def observe_command(argv: Sequence[str], seconds: float, ok: bool) -> None:
    """Count one scheduler command (the dispatcher's runner calls this; see
    :func:`hpcdet.dispatcher.commands.add_observer`)."""
    name = command_name(argv)
    SCHEDULER_COMMANDS.labels(name, "ok" if ok else "error").inc()
    SCHEDULER_SECONDS.labels(name).observe(seconds)


def observe_cycle(seconds: float, failure: str | None) -> None:
    """Count one reconciler cycle and, when it failed, why."""
    RECONCILER_CYCLES.inc()
    RECONCILER_SECONDS.observe(seconds)
    if failure is not None:
        RECONCILER_FAILURES.labels(failure).inc()


def observe_ingest(rows: int, seconds: float, ok: bool) -> None:
    """Count one group commit of metric reports and the values it stored."""
    INGEST_BATCHES.labels("ok" if ok else "error").inc()
    INGEST_SECONDS.observe(seconds)
    if ok:
        INGEST_ROWS.inc(rows)


@contextmanager
def proxy_connection(kind: str) -> Iterator[None]:
    """Count a connection through the proxy while it is open."""
    PROXY_TOTAL.labels(kind).inc()
    gauge = PROXY_OPEN.labels(kind)
    gauge.inc()
    try:
        yield
    finally:
        gauge.dec()


def watch_pool(engine: Engine) -> None:
    """Keep the pool gauges of ``engine`` (connections open and checked out) up to date."""
    event.listen(engine, "connect", lambda *_: DB_OPEN.inc())
    event.listen(engine, "close", lambda *_: DB_OPEN.dec())
    event.listen(engine, "checkout", lambda *_: DB_IN_USE.inc())
    event.listen(engine, "checkin", lambda *_: DB_IN_USE.dec())


def install_command_observer() -> None:
    """Have the dispatcher's command runner report to :func:`observe_command` (once)."""
    from hpcdet.dispatcher.commands import add_observer

    add_observer(observe_command)

