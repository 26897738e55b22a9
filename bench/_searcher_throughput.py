"""``bench/searcher.py throughput``: validations per second through the master's ASHA searcher.

What is measured
    The master's real search step (:class:`~hpcdet.master.experiments.searching.SearchDriver`)
    consuming
    validation events from the database: an ``adaptive_asha`` experiment with ``--trials``
    trials (all created up front) and ``--events`` validation events already queued in
    ``searcher_events`` (each trial reporting epoch 1, 2, ... with a noisy loss), as the
    metrics route queues them. Timed: the reconcile passes (restore the searcher, apply every
    event in order, stop trials, save the state, mark the events consumed, commit) until the
    queue is empty. Side by side in the same run, the *per-event* design, one transaction
    that restores and saves the searcher for each event (``EVENT_BATCH = 1``), is timed over
    ``--naive-events`` events and its rate reported (and labelled as a sample).

    Target: >= 10,000 validations/s for the batched design.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import create_engine, insert, select, text

import hpcdet.master.experiments.searching as searching
from hpcdet.master.db import make_engine, make_session_factory, migrate, session_scope
from hpcdet.master.models import Experiment, SearcherEvent, Trial
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.transitions import transition
from hpcdet.states import State

MAX_TIME = 16


@dataclass
class ThroughputResult:
    """One design's measurement."""

    design: str
    database: str
    trials: int
    events: int
    seconds: float
    events_per_second: float
    trials_stopped: int


def asha_config(trials: int) -> dict[str, Any]:
    """An effective config for an ASHA search with every trial created at once."""
    return {
        "name": "bench-searcher", "entrypoint": "python3 train.py",
        "hyperparameters": {"lr": {"type": "double", "minval": 1e-4, "maxval": 1e-1}},
        "searcher": {"name": "adaptive_asha", "metric": "loss", "smaller_is_better": True,
                     "time_metric": "epochs", "max_time": MAX_TIME, "max_trials": trials,
                     "max_concurrent_trials": trials, "divisor": 4, "max_rungs": 5,
                     "mode": "standard"},
        "reproducibility": {"experiment_seed": 7},
        "resources": {"slots_per_trial": 1},
    }


@contextmanager
def database(kind: str) -> Iterator[str]:
    """A fresh, migrated database URL (a temporary SQLite file, or a new PostgreSQL db)."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{tmp}/bench.db"
            migrate(url)
            yield url
        return
    admin = create_engine(os.environ.get("HPCDET_BENCH_PG", "postgresql+psycopg2://postgres@"
                                         "127.0.0.1:5432/postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text("DROP DATABASE IF EXISTS hpcdet_bench_searcher"))
        conn.execute(text("CREATE DATABASE hpcdet_bench_searcher"))
    url = admin.url.set(database="hpcdet_bench_searcher").render_as_string(hide_password=False)
    migrate(url)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text("DROP DATABASE IF EXISTS hpcdet_bench_searcher WITH (FORCE)"))
        admin.dispose()


def setup_experiment(url: str, trials: int, events: int) -> None:
    """Create the experiment and its trials (real search step), then queue the events."""
    sessions = make_session_factory(make_engine(url))
    driver = searching.SearchDriver(MasterSettings(db_url=url))
    with session_scope(sessions) as session:
        exp = Experiment(name="bench", owner="bench", config=asha_config(trials),
                         original_config="", context=b"", searcher_name="adaptive_asha")
        session.add(exp)
        transition(session, exp, State.ACTIVE, cause="benchmark")
    with session_scope(sessions) as session:
        driver.step(session)
    with session_scope(sessions) as session:
        trial_ids = list(session.scalars(select(Trial.id).order_by(Trial.id)))
        session.execute(insert(SearcherEvent), list(_events(exp.id, trial_ids, events)))


def _events(exp_id: int, trial_ids: list[int], count: int) -> Iterator[dict[str, Any]]:
    rng = random.Random(0)
    quality = {t: rng.random() for t in trial_ids}
    made = 0
    for epoch in range(1, 10 * MAX_TIME):
        for trial_id in trial_ids:
            if made == count:
                return
            loss = quality[trial_id] / epoch + rng.gauss(0, 0.01)
            yield {"experiment_id": exp_id, "trial_id": trial_id, "steps_completed": epoch,
                   "metrics": {"loss": loss, "epochs": min(epoch, MAX_TIME)},
                   "processed": False}
            made += 1


def drain(url: str, batch: int, limit: int | None) -> tuple[int, float, int]:
    """Run search steps until the queue is empty (or ``limit`` events); time them."""
    sessions = make_session_factory(make_engine(url))
    driver = searching.SearchDriver(MasterSettings(db_url=url))
    consumed, stopped = 0, 0
    previous, searching.EVENT_BATCH = searching.EVENT_BATCH, batch
    try:
        started = time.perf_counter()
        while limit is None or consumed < limit:
            with session_scope(sessions) as session:
                report = driver.step(session)
            if report.events_consumed == 0:
                break
            consumed, stopped = consumed + report.events_consumed, stopped + report.trials_stopped
        return consumed, time.perf_counter() - started, stopped
    finally:
        searching.EVENT_BATCH = previous


def measure(kind: str, design: str, trials: int, events: int) -> ThroughputResult:
    """One design on a fresh database."""
    with database(kind) as url:
        setup_experiment(url, trials, events)
        batch, limit = (searching.EVENT_BATCH, None) if design == "batched" else (1, events)
        consumed, seconds, stopped = drain(url, batch, limit)
    return ThroughputResult(design, kind, trials, consumed, round(seconds, 3),
                            round(consumed / seconds, 1), stopped)


def add_parser(subparsers: Any) -> None:
    """Register the ``throughput`` subcommand."""
    parser = subparsers.add_parser("throughput", help="validations per second through the "
                                   "master's ASHA searcher (target >= 10,000/s)")
    parser.add_argument("--trials", type=int, default=1000, help="ASHA trials (default 1000)")
    parser.add_argument("--events", type=int, default=20_000,
                        help="validations queued for the batched design (default 20000)")
    parser.add_argument("--naive-events", type=int, default=500,
                        help="validations timed for the per-event design (default 500)")
    parser.add_argument("--database", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run, render=render)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure both designs on the chosen databases."""
    kinds = ("sqlite", "postgresql") if args.database == "both" else (args.database,)
    rows = []
    for kind in kinds:
        rows.append(measure(kind, "batched", args.trials, args.events))
        rows.append(measure(kind, "per-event", args.trials, args.naive_events))
    return {"rows": [asdict(r) for r in rows], "ratios": _ratios(rows)}


def _ratios(rows: list[ThroughputResult]) -> dict[str, float]:
    by = {(r.database, r.design): r.events_per_second for r in rows}
    return {kind: round(by[(kind, "batched")] / by[(kind, "per-event")], 1)
            for kind, design in by if design == "batched"}


def render(result: dict[str, Any]) -> str:
    """A table for people."""
    lines = [f"{'database':<11} {'design':<10} {'trials':>6} {'events':>7} {'seconds':>8} "
             f"{'events/s':>10} {'stopped':>8}"]
    for r in result["rows"]:
        lines.append(f"{r['database']:<11} {r['design']:<10} {r['trials']:>6} {r['events']:>7} "
                     f"{r['seconds']:>8.3f} {r['events_per_second']:>10,.0f} "
                     f"{r['trials_stopped']:>8}")
    for kind, ratio in result["ratios"].items():
        lines.append(f"{kind}: batched is {ratio}x the per-event rate (per-event is a sample)")
    return "\n".join(lines)
