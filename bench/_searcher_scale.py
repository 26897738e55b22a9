"""``bench/searcher.py scale``: the master's ASHA search step with 10,000 trials, before vs after.

What is measured
    The master's real search step (:class:`~hpcdet.master.experiments.searching.SearchDriver`)
    running an ``adaptive_asha`` search of ``--trials`` trials (default 10,000) with
    ``max_concurrent_trials: --concurrent`` (default 500), ``max_time: 16`` epochs,
    ``divisor: 4``, standard mode, on a fresh database. The benchmark plays the trials' side
    between steps (not timed): each round, ``K`` validations from the live trials in turn
    (each a trial's next epoch, a noisy loss fixed by its quality), trials at ``max_time``
    end COMPLETED, trials the searcher stopped end COMPLETED one round later; the searcher
    then refills from its budget, as on a cluster. Timed: each search step (its
    transaction, commit included).

    1. Steady state: the search is driven in rounds of 1,000 validations until
       ``--steady-at`` of the trials exist (default 90 %: the budget still refills), then
       ``--cycles`` steps each with 10, 100 and 1,000 validations; the median step and
       its validations/s are reported.
    2. Overall: the search is driven on to its end in rounds of 1,000; validations consumed
       over the seconds of every step, the steady ones included.

    Both designs on the same database engine, each on a fresh database: ``after`` (the
    master: the searcher kept in memory between steps, its inputs saved as journal entries,
    a snapshot once per as many inputs as trials) and ``before`` (the searcher restored
    from the database and its whole state saved at every step:
    ``SearcherStore(keep_in_memory=False, fold_every_cycle=True)``; the steps load only
    the trials they name in both, which the design before did not: see
    docs/performance.md for that one's figure).

    Target: a steady step costs O(its validations), not O(trials).

    How to reproduce
        .venv/bin/python bench/searcher.py scale                      # SQLite and PostgreSQL
        .venv/bin/python bench/searcher.py scale --trials 1000 --database sqlite --json
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from _searcher_throughput import asha_config, database
from sqlalchemy import func, insert, select, update

from hpcdet.master.db import make_engine, make_session_factory, session_scope
from hpcdet.master.experiments.searcher_store import SearcherStore
from hpcdet.master.experiments.searching import SearchDriver
from hpcdet.master.models import Experiment, SearcherEvent, Trial, utcnow
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.transitions import transition
from hpcdet.states import State

MAX_TIME = 16
DRIVE_ROUND = 1_000
STEADY_SIZES = (10, 100, 1_000)
DESIGNS = {"after": SearcherStore, "before": lambda: SearcherStore(keep_in_memory=False,
                                                                   fold_every_cycle=True)}


@dataclass
class SteadyCycle:
    """Steps of ``events`` validations (fewer when fewer trials are live): the median step,
    and the validations they consumed over their seconds."""

    events: int
    trials: int
    median_ms: float
    events_per_second: float


@dataclass
class ScaleResult:
    """One design on one database."""

    design: str
    database: str
    trials: int
    concurrent: int
    events: int = 0
    seconds: float = 0.0
    events_per_second: float = 0.0
    steady: list[SteadyCycle] = field(default_factory=list)


class World:
    """The trials' side: validations from the live trials, endings."""

    def __init__(self, url: str, trials: int, concurrent: int, design: str) -> None:
        self.sessions = make_session_factory(make_engine(url))
        self.driver = SearchDriver(MasterSettings(db_url=url), DESIGNS[design]())
        self.rng = random.Random(0)
        self.epochs: dict[int, int] = {}
        self.quality: dict[int, float] = {}
        self.turn = 0
        config = asha_config(trials)
        config["searcher"]["max_concurrent_trials"] = concurrent
        with session_scope(self.sessions) as session:
            exp = Experiment(name="bench", owner="bench", config=config, original_config="",
                             context=b"", searcher_name="adaptive_asha")
            session.add(exp)
            transition(session, exp, State.ACTIVE, cause="benchmark")
            session.flush()
            self.exp_id = exp.id

    def step(self) -> tuple[int, float]:
        """One timed search step: (validations consumed, seconds)."""
        started = time.perf_counter()
        with session_scope(self.sessions) as session:
            report = self.driver.step(session)
        return report.events_consumed, time.perf_counter() - started

    def play(self, count: int) -> bool:
        """Queue ``count`` validations from the live trials in turn; end what must end.

        Trials are moved with bulk updates, not transitions: their history rows are not
        what is measured. False when no trial is live (the search is over).
        """
        with session_scope(self.sessions) as session:
            stopping = select(Trial.id).where(Trial.experiment_id == self.exp_id,
                                              Trial.state == State.STOPPING_COMPLETED.value)
            self._end(session, list(session.scalars(stopping)))
            live = list(session.scalars(select(Trial.id).where(
                Trial.experiment_id == self.exp_id,
                Trial.state.in_((State.QUEUED.value, State.RUNNING.value))).order_by(Trial.id)))
            if not live:
                return False
            rows, done = [], set()
            for _ in range(count):
                trial_id = live[self.turn % len(live)]
                self.turn += 1
                if trial_id in done:
                    continue
                rows.append(self._validation(trial_id))
                if self.epochs[trial_id] >= MAX_TIME:
                    done.add(trial_id)
            session.execute(insert(SearcherEvent), rows)
            session.execute(update(Trial).where(Trial.id.in_(live), Trial.id.not_in(done))
                            .values(state=State.RUNNING.value))
            self._end(session, sorted(done))
        return True

    def _validation(self, trial_id: int) -> dict[str, Any]:
        epoch = self.epochs[trial_id] = self.epochs.get(trial_id, 0) + 1
        quality = self.quality.setdefault(trial_id, self.rng.random())
        return {"experiment_id": self.exp_id, "trial_id": trial_id, "steps_completed": epoch,
                "metrics": {"loss": quality / epoch + self.rng.gauss(0, 0.01),
                            "epochs": epoch}, "processed": False}

    @staticmethod
    def _end(session: Any, trial_ids: list[int]) -> None:
        if trial_ids:
            session.execute(update(Trial).where(Trial.id.in_(trial_ids))
                            .values(state=State.COMPLETED.value, ended_at=utcnow()))

    def trial_count(self) -> int:
        with self.sessions() as session:
            return session.scalar(select(func.count(Trial.id))) or 0


def measure(kind: str, design: str, trials: int, concurrent: int, steady_at: float,
            cycles: int) -> ScaleResult:
    """Drive one search on a fresh database: steady cycles at ``steady_at``, then the rest."""
    result = ScaleResult(design, kind, trials, concurrent)
    with database(kind) as url:
        world = World(url, trials, concurrent, design)
        _add(result, world.step())
        while world.trial_count() < steady_at * trials and world.play(DRIVE_ROUND):
            _add(result, world.step())
        for size in STEADY_SIZES:
            steps = []
            for _ in range(cycles):
                if not world.play(size):
                    break
                steps.append(world.step())
                _add(result, steps[-1])
            if steps:
                median = statistics.median(seconds for _, seconds in steps)
                rate = sum(events for events, _ in steps) / sum(s for _, s in steps)
                result.steady.append(SteadyCycle(size, world.trial_count(),
                                                 round(median * 1000, 2), round(rate, 1)))
        while world.play(DRIVE_ROUND):
            _add(result, world.step())
        _add(result, world.step())  # the last endings reach the searcher
    result.seconds = round(result.seconds, 3)
    result.events_per_second = round(result.events / result.seconds, 1)
    return result


def _add(result: ScaleResult, step: tuple[int, float]) -> float:
    result.events += step[0]
    result.seconds += step[1]
    return step[1]


def add_parser(subparsers: Any) -> None:
    """Register the ``scale`` subcommand."""
    parser = subparsers.add_parser("scale", help="the master's ASHA search step at 10,000 "
                                   "trials: steady steps of 10/100/1,000 validations and the "
                                   "whole search, the searcher kept in memory vs restored")
    parser.add_argument("--trials", type=int, default=10_000,
                        help="ASHA max_trials (default 10000)")
    parser.add_argument("--concurrent", type=int, default=500,
                        help="max_concurrent_trials (default 500)")
    parser.add_argument("--steady-at", type=float, default=0.9,
                        help="fraction of the trials created before the steady steps "
                        "(default 0.9)")
    parser.add_argument("--cycles", type=int, default=5,
                        help="steady steps per size (default 5)")
    parser.add_argument("--design", choices=("after", "before", "both"), default="both")
    parser.add_argument("--database", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run, render=render)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure the chosen designs on the chosen databases."""
    kinds = ("sqlite", "postgresql") if args.database == "both" else (args.database,)
    designs = ("after", "before") if args.design == "both" else (args.design,)
    rows = [measure(kind, design, args.trials, args.concurrent, args.steady_at, args.cycles)
            for kind in kinds for design in designs]
    return {"rows": [asdict(r) for r in rows]}


def render(result: dict[str, Any]) -> str:
    """Two tables: the whole search, then the steady steps side by side."""
    lines = [f"{'database':<11} {'design':<7} {'trials':>6} {'conc.':>5} {'events':>7} "
             f"{'step s':>8} {'events/s':>10}"]
    for r in result["rows"]:
        lines.append(f"{r['database']:<11} {r['design']:<7} {r['trials']:>6} "
                     f"{r['concurrent']:>5} {r['events']:>7} {r['seconds']:>8.3f} "
                     f"{r['events_per_second']:>10,.0f}")
    lines += ["", f"{'database':<11} {'design':<7} {'events':>6} {'trials':>6} "
              f"{'median ms':>10} {'events/s':>10} {'before/after':>12}"]
    after = {(r["database"], s["events"]): s["median_ms"] for r in result["rows"]
             if r["design"] == "after" for s in r["steady"]}
    for r in result["rows"]:
        for s in r["steady"]:
            base = after.get((r["database"], s["events"]))
            ratio = f"{s['median_ms'] / base:.1f}x" if base and r["design"] == "before" else ""
            lines.append(f"{r['database']:<11} {r['design']:<7} {s['events']:>6} "
                         f"{s['trials']:>6} {s['median_ms']:>10.2f} "
                         f"{s['events_per_second']:>10,.0f} {ratio:>12}")
    return "\n".join(lines)
