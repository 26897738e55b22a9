"""What the trial page of a long trial and the experiment page of a large search cost.

What is measured
    A fresh, migrated database (a temporary SQLite file; with ``--db-url`` also a new
    PostgreSQL database created through that server URL and dropped at the end) is filled
    with one finished search of T (default 1,000) trials, each with hyperparameters (``lr``,
    ``hidden``, ``optimizer``), a ``best_validation`` and V (default 10) validations of
    ``validation_loss``; its first trial also reported S (default 200,000) training steps of
    ``loss`` and ``accuracy`` and the trainer's counters ``batches``, ``epochs`` and
    ``records``: 5 x S = 1,000,000 training metric rows by default. The master's Flask app
    is built on it and each request below is issued W (default 3) times untimed, then R
    (default 20) times timed with Flask's test client: median, nearest-rank p95 and max
    wall time, the answer's size (what the page transfers) and the SQL statements each
    request ran. On PostgreSQL the seeding ends with ``VACUUM ANALYZE metrics``, which
    autovacuum does by itself soon after such a bulk load. Every answer is checked: status
    200, and a chart's series at most ``max_points`` points with the series' first and last
    step.

    The requests: the trial page ``/trials/<id>`` (it embeds the charts' first series), the
    downsampled series its training and validation charts fetch, the full-resolution
    ``GET .../metrics?group=validation`` for comparison, the experiment page
    ``/experiments/<id>`` of the 1,000-trial search, the validation series it polls and a
    three-trial comparison.

    Target: the median of the trial page, its chart request and the experiment page under
    300 ms each.

How to reproduce
    .venv/bin/python bench/web_trial_metrics.py                       # SQLite
    .venv/bin/python bench/web_trial_metrics.py \\
        --db-url postgresql+psycopg2://postgres@127.0.0.1:5432/postgres   # and PostgreSQL
    .venv/bin/python bench/web_trial_metrics.py --json                # one JSON object
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # its sibling modules, also when loaded by path

from _common import bench_main, log, run_script  # noqa: E402
from flask import Flask  # noqa: E402
from sqlalchemy import insert, select, text  # noqa: E402
from web_experiments import (  # noqa: E402
    build_app,
    counting_statements,
    ms,
    postgres_database,
    sqlite_database,
    statements_text,
    timing,
)

from hpcdet.master.db import session_scope  # noqa: E402
from hpcdet.master.models import Experiment, Metric, Trial  # noqa: E402

TARGET_MS = 300.0
MAX_POINTS = 500
START = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
CONFIG: dict[str, Any] = {
    "name": "bench search",
    "searcher": {"name": "random", "metric": "validation_loss", "smaller_is_better": True},
    "hyperparameters": {"lr": {"type": "log", "base": 10, "minval": -4, "maxval": -1},
                        "hidden": {"type": "int", "minval": 16, "maxval": 512},
                        "optimizer": {"type": "categorical", "vals": ["adam", "sgd"]}},
}
CHUNK = 50_000


@dataclass
class RequestStats:
    """R timed runs of one request on one database."""

    database: str
    name: str
    path: str
    status: int
    checked: str
    bytes: int
    statements: list[int]
    wall_s: list[float]
    targeted: bool

    @property
    def target_met(self) -> bool:
        return (self.status == 200 and self.checked == "ok"
                and (not self.targeted or statistics.median(self.wall_s) * 1e3 < TARGET_MS))

    def summary(self) -> dict[str, Any]:
        return {**asdict(self), "wall": timing(self.wall_s), "target_met": self.target_met,
                "statements_min": min(self.statements),
                "statements_max": max(self.statements)}


# ---- the database ------------------------------------------------------------------------


def training_rows(trial_id: int, steps: int) -> Iterator[dict[str, Any]]:
    rng = random.Random(3)
    for step in range(1, steps + 1):
        at = START + dt.timedelta(seconds=step * 0.2)
        loss = 2.0 * 0.99998 ** step + rng.random() * 0.05
        for name, value in (("loss", loss), ("accuracy", 1 - loss / 2),
                            ("batches", float(step)), ("epochs", float(step // 1000)),
                            ("records", step * 64.0)):
            yield {"trial_id": trial_id, "group": "training", "steps_completed": step,
                   "name": name, "value": value, "reported_at": at}


def chunks(rows: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= CHUNK:
            yield batch
            batch = []
    if batch:
        yield batch


def seed_database(app: Flask, trials: int, validations: int, steps: int) -> dict[str, Any]:
    """The search, its trials and metrics; returns the ids the requests use."""
    rng = random.Random(7)
    factory = app.config["HPCDET_SESSION_FACTORY"]
    with session_scope(factory) as session:
        exp = Experiment(name="bench search", owner="bench", state="COMPLETED", config=CONFIG,
                         original_config="", context=b"", searcher_name="random",
                         ended_at=START)
        session.add(exp)
        session.flush()
        exp_id = exp.id
        session.execute(insert(Trial), [
            {"experiment_id": exp_id, "state": "COMPLETED", "seed": i, "token": "t",
             "hparams": {"lr": 10 ** rng.uniform(-4, -1), "hidden": rng.randint(16, 512),
                         "optimizer": rng.choice(["adam", "sgd"])},
             "steps_completed": validations * 100, "ended_at": START,
             "best_validation": {"steps_completed": validations * 100,
                                 "metrics": {"validation_loss": rng.uniform(0.1, 1.0)}}}
            for i in range(trials)])
        ids = list(session.scalars(select(Trial.id).where(Trial.experiment_id == exp_id)
                                   .order_by(Trial.id)))
        session.execute(insert(Metric), [
            {"trial_id": trial_id, "group": "validation", "steps_completed": k * 100,
             "name": "validation_loss", "value": 1.0 / k + rng.random() * 0.1,
             "reported_at": START}
            for trial_id in ids for k in range(1, validations + 1)])
    for batch in chunks(training_rows(ids[0], steps)):
        with session_scope(factory) as session:
            session.execute(insert(Metric), batch)
    if app.config["HPCDET_ENGINE"].dialect.name == "postgresql":
        # What autovacuum does within a minute of such a bulk load: statistics for the
        # planner and the visibility map that lets the covering index answer alone.
        with app.config["HPCDET_ENGINE"].connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(
                text("VACUUM ANALYZE metrics"))
    return {"experiment_id": exp_id, "trial_id": ids[0], "picked": ids[:3], "page": ids[:100]}


# ---- measuring ---------------------------------------------------------------------------


def check(name: str, body: bytes, steps: int) -> str:
    """"ok" when a series answer holds at most MAX_POINTS points from the first to the last
    step (the pages need no check: status 200 is checked with it)."""
    if not name.startswith("series"):
        return "ok"
    answer = json.loads(body)
    points = answer["series"][0]["points"]
    last = steps if "training" in name else None
    if len(points) > MAX_POINTS or points[0]["batches"] != (1 if last else 100):
        return f"{len(points)} points from step {points[0]['batches']}"
    if last is not None and points[-1]["batches"] != last:
        return f"ends at step {points[-1]['batches']}"
    return "ok"


def measure(app: Flask, database: str, name: str, path: str, targeted: bool, steps: int,
            warmup: int, runs: int) -> RequestStats:
    client = app.test_client()
    for _ in range(warmup):
        client.get(path)
    walls: list[float] = []
    statements: list[int] = []
    for _ in range(runs):
        with counting_statements(app) as count:
            started = time.perf_counter()
            response = client.get(path)
            walls.append(time.perf_counter() - started)
        statements.append(count[0])
    checked = check(name, response.data, steps) if response.status_code == 200 else "failed"
    return RequestStats(database, name, path, response.status_code, checked,
                        len(response.data), statements, walls, targeted)


def requests(ids: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(name, path, whether the 300 ms target applies) of every request timed."""
    trial, exp = ids["trial_id"], ids["experiment_id"]
    series = f"/api/v1/trials/{trial}/metrics/series?max_points={MAX_POINTS}"
    picked = "".join(f"&trial_id={t}" for t in ids["picked"])
    return [
        ("trial page", f"/trials/{trial}", True),
        ("series training loss", f"{series}&group=training&name=loss", True),
        ("series validation", f"{series}&group=validation&name=validation_loss", True),
        ("full validation metrics", f"/api/v1/trials/{trial}/metrics?group=validation", False),
        ("experiment page", f"/experiments/{exp}", True),
        # What the page polls: the experiment (counts, no trials), its page of trials and
        # their series (the 100 best; their ids are the first 100 only roughly: same cost).
        ("experiment API", f"/api/v1/experiments/{exp}", True),
        ("trials page API", f"/api/v1/experiments/{exp}/trials?sortBy=best_validation_metric"
                            "&limit=100", True),
        ("trials by id, page 50", f"/api/v1/experiments/{exp}/trials?offset=4900&limit=100",
         False),
        ("page's series", f"/api/v1/experiments/{exp}/metrics?"
                          + "&".join(f"trial_id={t}" for t in ids["page"]), True),
        ("all trials' series", f"/api/v1/experiments/{exp}/metrics", False),
        ("comparison", f"/api/v1/experiments/{exp}/metrics?group=training&name=loss"
                       f"&max_points=400{picked}", False),
    ]


def run_on(database: str, url: str, args: argparse.Namespace, tmp: Path) -> list[RequestStats]:
    app = build_app(url, tmp)
    try:
        log(f"{database}: seeding {args.trials} trials x {args.validations} validations and "
            f"{args.steps} training steps x 5 names")
        started = time.perf_counter()
        ids = seed_database(app, args.trials, args.validations, args.steps)
        log(f"{database}: seeded in {time.perf_counter() - started:.0f} s")
        stats = []
        for name, path, targeted in requests(ids):
            log(f"{database}: GET {path} ({args.warmup} + {args.runs} runs)")
            stats.append(measure(app, database, name, path, targeted, args.steps,
                                 args.warmup, args.runs))
        return stats
    finally:
        app.config["HPCDET_ENGINE"].dispose()


def run(args: argparse.Namespace) -> dict[str, Any]:
    stats: list[RequestStats] = []
    with tempfile.TemporaryDirectory(prefix="hpcdet-bench-trial-") as tmp:
        with sqlite_database(Path(tmp)) as url:
            stats += run_on("sqlite", url, args, Path(tmp))
        if args.db_url:
            with postgres_database(args.db_url) as url:
                stats += run_on("postgresql", url, args, Path(tmp))
    return {"reproduce": reproduce_command(args), "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()), "trials": args.trials,
            "validations": args.validations, "training_steps": args.steps,
            "training_rows": args.steps * 5, "runs": args.runs,
            "requests": [s.summary() for s in stats],
            "target_met": all(s.target_met for s in stats)}


def reproduce_command(args: argparse.Namespace) -> str:
    flags = [f"--trials={args.trials}", f"--validations={args.validations}",
             f"--steps={args.steps}", f"--runs={args.runs}", f"--warmup={args.warmup}"]
    flags += [f"--db-url={shlex.quote(args.db_url)}"] if args.db_url else []
    flags += ["--json"] if args.json else []
    return f".venv/bin/python bench/web_trial_metrics.py {' '.join(flags)}"


# ---- output ------------------------------------------------------------------------------


def render_table(result: dict[str, Any]) -> str:
    header = (f"{'db':<10} {'request':<24} {'KiB':>7} {'SQL':>4} {'median ms':>9} "
              f"{'p95 ms':>7} {'max ms':>7}  target")
    lines = [f"# reproduce: {result['reproduce']}", "",
             f"{result['trials']:,} trials x {result['validations']} validations; the first "
             f"trial with {result['training_rows']:,} training rows; {result['runs']} timed "
             f"runs each (Flask test client); target: median < {TARGET_MS:.0f} ms "
             "(rows marked *)", header, "-" * len(header)]
    for s in result["requests"]:
        mark = "*" if s["targeted"] else " "
        verdict = ("met" if s["target_met"] else "MISSED") if s["targeted"] else (
            "ok" if s["target_met"] else "FAILED")
        extra = "" if s["checked"] == "ok" else f" ({s['checked']})"
        lines.append(f"{s['database']:<10} {mark}{s['name']:<23} {s['bytes'] / 1024:>7.1f} "
                     f"{statements_text(s):>4} {ms(s['wall']['median_s']):>9} "
                     f"{ms(s['wall']['p95_s']):>7} {ms(s['wall']['max_s']):>7}  "
                     f"{verdict}{extra}")
    lines += ["", "Verdict: " + ("target met" if result["target_met"] else "TARGET MISSED")]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=1000, help="trials of the search (1000)")
    parser.add_argument("--validations", type=int, default=10,
                        help="validations per trial (10)")
    parser.add_argument("--steps", type=int, default=200_000,
                        help="training steps of the first trial, 5 rows each (200000)")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per request (20)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs first (3)")
    parser.add_argument("--db-url", default=None,
                        help="a PostgreSQL server URL allowed to create databases: measure "
                             "there too (in a new database, dropped at the end)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if min(args.trials, args.runs, args.validations, args.steps) < 1 or args.warmup < 0:
        parser.error("--trials, --validations, --steps and --runs must be >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args=parse_args, run=run, render_table=render_table,
                      reproduce_command=reproduce_command)


if __name__ == "__main__":
    run_script(main)
