"""What the experiments page ``/`` and ``GET /api/v1/experiments`` cost with 1,000 experiments.

What is measured
    A fresh, migrated database (a temporary SQLite file; with ``--db-url`` also a new
    PostgreSQL database created through that server URL and dropped at the end) is filled
    with N (default 1,000) experiments: varied states (mostly ended, some running), 8 owners,
    0 to 3 of 10 labels, a tenth of the ended ones archived, the effective config of
    ``examples/digits/asha.yaml`` (metric ``validation_loss``, or ``accuracy`` with
    ``smaller_is_better: false`` for a third of them) and T (default 4) trials each with a
    ``best_validation``. The master's Flask app is built on it and each request below is
    issued W (default 3) times untimed, then R (default 30) times timed with Flask's test
    client: median, nearest-rank p95 and max wall time, and the SQL statements each request
    ran (SQLAlchemy's ``before_cursor_execute``; the same for every run, or the range is
    shown). The rows of every answer are counted and checked against the database.

    Target: the median of every request under 300 ms, with a number of statements that does
    not depend on N (3: the count, the page of experiments, their trials).

How to reproduce
    .venv/bin/python bench/web_experiments.py                       # SQLite
    .venv/bin/python bench/web_experiments.py \\
        --db-url postgresql+psycopg2://postgres@127.0.0.1:5432/postgres   # and PostgreSQL
    .venv/bin/python bench/web_experiments.py --json                # one JSON object
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import random
import re
import shlex
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # its sibling modules, also when loaded by path

import yaml  # noqa: E402
from _common import bench_main, log, run_script  # noqa: E402
from flask import Flask  # noqa: E402
from sqlalchemy import create_engine, event, insert, select, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from hpcdet import expconf  # noqa: E402
from hpcdet.dispatcher.slurm.backend import SlurmBackend  # noqa: E402
from hpcdet.master.app import create_app  # noqa: E402
from hpcdet.master.db import migrate, session_scope  # noqa: E402
from hpcdet.master.models import Experiment, Trial  # noqa: E402
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings  # noqa: E402

TARGET_MS = 300.0
EXAMPLE = REPO / "examples" / "digits" / "asha.yaml"
OWNERS = [f"user{i}" for i in range(8)]
LABELS = ["cnn", "mlp", "nlp", "vision", "baseline", "ablation", "sweep", "prod", "debug",
          "paper"]
# Weights of the states among the seeded experiments: most ended, some still going.
STATES = {"COMPLETED": 55, "CANCELED": 12, "ERROR": 8, "ACTIVE": 15, "PAUSED": 6,
          "STOPPING_COMPLETED": 2, "STOPPING_CANCELED": 2}
ENDED = {"COMPLETED", "CANCELED", "ERROR"}
# The requests timed, in this order; expected_rows knows what each must list.
REQUESTS = ["/", "/?per_page=500", "/?page=10", "/?state=COMPLETED", "/?owner=user3",
            "/?label=nlp", "/?state=COMPLETED&owner=user3&label=nlp&archived=true",
            "/api/v1/experiments", "/api/v1/experiments?limit=500",
            "/api/v1/experiments?label=nlp&limit=50",
            # Sorting and name search (issue 19); best is ordered in Python over all matches.
            "/?sort=name&order=asc", "/?sort=best", "/?name=digits-1",
            "/api/v1/experiments?sort=best&limit=50"]


# ---- results -----------------------------------------------------------------------------


def timing(walls: Sequence[float]) -> dict[str, float]:
    """Median, nearest-rank p95, min and max of ``walls`` (seconds)."""
    ordered = sorted(walls)
    p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
    return {"median_s": statistics.median(ordered), "p95_s": p95, "min_s": ordered[0],
            "max_s": ordered[-1]}


@dataclass
class RequestStats:
    """R timed runs of one request on one database."""

    database: str
    path: str
    status: int
    rows: int
    expected_rows: int
    total: int
    bytes: int
    statements: list[int]
    wall_s: list[float]

    @property
    def target_met(self) -> bool:
        return (self.status == 200 and self.rows == self.expected_rows
                and statistics.median(self.wall_s) * 1e3 < TARGET_MS)

    def summary(self) -> dict[str, Any]:
        return {**asdict(self), "wall": timing(self.wall_s), "target_met": self.target_met,
                "statements_min": min(self.statements),
                "statements_max": max(self.statements)}


# ---- the database ------------------------------------------------------------------------


@contextmanager
def sqlite_database(tmp: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp / 'master.db'}"
    migrate(url)
    yield url


@contextmanager
def postgres_database(server_url: str) -> Iterator[str]:
    """A new database on the server of ``server_url``, dropped at the end."""
    name = f"hpcdet_bench_web_{uuid.uuid4().hex[:8]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    try:
        migrate(url)
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def example_config() -> tuple[str, dict[str, Any]]:
    """The digits ASHA example: its YAML text and its effective config."""
    raw = EXAMPLE.read_text()
    return raw, expconf.with_defaults(yaml.safe_load(raw))


def experiment_rows(count: int, rng: random.Random) -> list[dict[str, Any]]:
    """``count`` experiments' columns, oldest first (varied states, owners, labels)."""
    raw, config = example_config()
    states = rng.choices(list(STATES), weights=list(STATES.values()), k=count)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    rows = []
    for i, state in enumerate(states):
        labels = rng.sample(LABELS, rng.randint(0, 3))
        accuracy = i % 3 == 0
        searcher = {**config["searcher"], "metric": "accuracy" if accuracy else
                    "validation_loss", "smaller_is_better": not accuracy}
        rows.append({"name": f"digits-{i}", "description": "", "labels": labels,
                     "owner": rng.choice(OWNERS), "state": state,
                     "config": {**config, "name": f"digits-{i}", "labels": labels,
                                "searcher": searcher},
                     "original_config": raw, "context": b"\0" * 2048,
                     "searcher_name": searcher["name"], "resource_pool": None,
                     "archived": state in ENDED and rng.random() < 0.1,
                     "searcher_state": {"trials": {str(t): {"rung": 1, "metric": 0.5}
                                                   for t in range(20)}},
                     "progress": 1.0 if state in ENDED else rng.random(),
                     "created_at": start + dt.timedelta(minutes=i)})
    return rows


def trial_rows(exp_ids: Sequence[int], per_experiment: int,
               rng: random.Random) -> list[dict[str, Any]]:
    """Trials with a best validation of both metrics."""
    return [{"experiment_id": exp_id, "state": "COMPLETED", "hparams": {"lr": rng.random()},
             "seed": rng.randrange(2**31), "token": uuid.uuid4().hex,
             "best_validation": {"steps_completed": 32, "metrics": {
                 "validation_loss": rng.random(), "accuracy": rng.random(), "epochs": 32}}}
            for exp_id in exp_ids for _ in range(per_experiment)]


def seed_database(app: Flask, experiments: int, trials: int) -> list[dict[str, Any]]:
    """Insert the experiments and their trials; returns the experiments' filter columns."""
    rng = random.Random(7)
    rows = experiment_rows(experiments, rng)
    with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
        session.execute(insert(Experiment), rows)
        ids = list(session.scalars(select(Experiment.id).order_by(Experiment.id)))
        session.execute(insert(Trial), trial_rows(ids, trials, rng))
    return [{"id": exp_id, "name": row["name"], "state": row["state"], "owner": row["owner"],
             "labels": row["labels"], "archived": row["archived"]}
            for exp_id, row in zip(ids, rows, strict=True)]


def expected_rows(path: str, seeded: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """(rows on the page, rows matching in all) that ``path`` must answer with."""
    query = dict(part.split("=", 1) for part in path.partition("?")[2].split("&") if part)
    match = [e for e in seeded
             if (query.get("archived") == "true" or not e["archived"])
             and query.get("state", e["state"]) == e["state"]
             and query.get("owner", e["owner"]) == e["owner"]
             and ("label" not in query or query["label"] in e["labels"])
             and ("name" not in query or query["name"].lower() in e["name"].lower())]
    api = path.startswith("/api/")
    limit = int(query.get("limit" if api else "per_page", 100 if api else 50))
    offset = int(query.get("offset", 0)) if api else (int(query.get("page", 1)) - 1) * limit
    return max(0, min(limit, len(match) - offset)), len(match)


# ---- measuring ---------------------------------------------------------------------------


@contextmanager
def counting_statements(app: Flask) -> Iterator[list[int]]:
    """Count the SQL statements the app's engine runs inside the block."""
    count = [0]

    def before(*_args: Any) -> None:
        count[0] += 1

    engine = app.config["HPCDET_ENGINE"]
    event.listen(engine, "before_cursor_execute", before)
    try:
        yield count
    finally:
        event.remove(engine, "before_cursor_execute", before)


def rows_in(path: str, body: bytes) -> int:
    if path.startswith("/api/"):
        return len(json.loads(body)["experiments"])
    return len(re.findall(rb"<tr data-experiment-id=", body))


def measure(app: Flask, database: str, path: str, seeded: Sequence[dict[str, Any]],
            warmup: int, runs: int) -> RequestStats:
    """``warmup`` untimed and ``runs`` timed GETs of ``path``."""
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
    expected, total = expected_rows(path, seeded)
    return RequestStats(database, path, response.status_code, rows_in(path, response.data),
                        expected, total, len(response.data), statements, walls)


def build_app(url: str, tmp: Path) -> Flask:
    rm = replace(ResourceManagerSettings(), job_storage_root=str(tmp / "jobs"),
                 cluster_name="bench-web")
    app = create_app(MasterSettings(db_url=url, resource_manager=rm, state_dir=str(tmp)),
                     backend=SlurmBackend())
    app.config["TESTING"] = True
    return app


def run_on(database: str, url: str, args: argparse.Namespace, tmp: Path) -> list[RequestStats]:
    app = build_app(url, tmp)
    try:
        log(f"{database}: seeding {args.experiments} experiments x {args.trials} trials")
        seeded = seed_database(app, args.experiments, args.trials)
        stats = []
        for path in REQUESTS:
            log(f"{database}: GET {path} ({args.warmup} + {args.runs} runs)")
            stats.append(measure(app, database, path, seeded, args.warmup, args.runs))
        return stats
    finally:
        app.config["HPCDET_ENGINE"].dispose()


def run(args: argparse.Namespace) -> dict[str, Any]:
    stats: list[RequestStats] = []
    with tempfile.TemporaryDirectory(prefix="hpcdet-bench-web-") as tmp:
        with sqlite_database(Path(tmp)) as url:
            stats += run_on("sqlite", url, args, Path(tmp))
        if args.db_url:
            with postgres_database(args.db_url) as url:
                stats += run_on("postgresql", url, args, Path(tmp))
    return {"reproduce": reproduce_command(args), "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()), "experiments": args.experiments,
            "trials_per_experiment": args.trials, "runs": args.runs,
            "requests": [s.summary() for s in stats],
            "target_met": all(s.target_met for s in stats)}


def reproduce_command(args: argparse.Namespace) -> str:
    flags = [f"--experiments={args.experiments}", f"--trials={args.trials}",
             f"--runs={args.runs}", f"--warmup={args.warmup}"]
    flags += [f"--db-url={shlex.quote(args.db_url)}"] if args.db_url else []
    flags += ["--json"] if args.json else []
    return f".venv/bin/python bench/web_experiments.py {' '.join(flags)}"


# ---- output ------------------------------------------------------------------------------



def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def statements_text(s: dict[str, Any]) -> str:
    low, high = s["statements_min"], s["statements_max"]
    return str(low) if low == high else f"{low}-{high}"


def render_table(result: dict[str, Any]) -> str:
    header = (f"{'db':<10} {'request':<58} {'rows':>9} {'KiB':>6} {'SQL':>4} "
              f"{'median ms':>9} {'p95 ms':>7} {'max ms':>7}  target")
    lines = [f"# reproduce: {result['reproduce']}", "",
             f"{result['experiments']:,} experiments x {result['trials_per_experiment']} "
             f"trials; {result['runs']} timed runs each (Flask test client); target: median "
             f"< {TARGET_MS:.0f} ms", header, "-" * len(header)]
    for s in result["requests"]:
        rows = f"{s['rows']}/{s['total']}"
        check = "" if s["rows"] == s["expected_rows"] else f" (expected {s['expected_rows']})"
        lines.append(f"{s['database']:<10} {'GET ' + s['path']:<58} {rows:>9} "
                     f"{s['bytes'] / 1024:>6.0f} {statements_text(s):>4} "
                     f"{ms(s['wall']['median_s']):>9} {ms(s['wall']['p95_s']):>7} "
                     f"{ms(s['wall']['max_s']):>7}  "
                     f"{'met' if s['target_met'] else 'MISSED'}{check}")
    verdict = "target met" if result["target_met"] else "TARGET MISSED"
    lines += ["", f"Verdict: {verdict} (every median under {TARGET_MS:.0f} ms, every answer "
              "listing the expected rows)"]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiments", type=int, default=1000,
                        help="experiments to create (1000)")
    parser.add_argument("--trials", type=int, default=4, help="trials per experiment (4)")
    parser.add_argument("--runs", type=int, default=30, help="timed runs per request (30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs first (3)")
    parser.add_argument("--db-url", default=None,
                        help="a PostgreSQL server URL allowed to create databases: measure "
                             "there too (in a new database, dropped at the end)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if min(args.experiments, args.runs) < 1 or min(args.trials, args.warmup) < 0:
        parser.error("--experiments and --runs must be >= 1, --trials and --warmup >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args=parse_args, run=run, render_table=render_table,
                      reproduce_command=reproduce_command)


if __name__ == "__main__":
    run_script(main)
