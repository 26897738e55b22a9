"""What the pages' reads cost when the metrics table holds 10^7 to 10^8 rows (PostgreSQL).

What is measured
    A PostgreSQL database migrated to the master's real schema is filled server-side
    (``INSERT ... SELECT`` over ``generate_series``, one statement per experiment, the
    metrics table's secondary indexes dropped during the load and rebuilt after, then
    ``VACUUM ANALYZE``) with E (default 100) finished searches of T (default 100) trials.
    Every trial reports training steps of ``loss`` and ``accuracy`` and the counters
    ``batches``, ``epochs`` and ``records`` (5 rows a step) and a ``validation_loss`` every
    100 steps; the first trial of the first search is a long one with L (default 10 % of N,
    at most 20,000,000) of the N rows, the rest are shared evenly. Rows are dated over the
    last D (default 180) days, oldest search first, so that a retention policy has work.
    Each trial has three checkpoints, the newest without its validation on the row (the
    checkpoint GC then reads the metrics table, as for a checkpoint registered before its
    validation arrived).

    The master's Flask app is built on the database and every read the pages and ``det``
    make is issued W (default 2) times untimed, then R (default 10) times timed with
    Flask's test client (median, nearest-rank p90, max), and the checkpoint GC decision of
    one search (``doomed_checkpoints``) is timed the same way. For each read whose median
    is over the target, the slowest SQL statement it ran is re-run under ``EXPLAIN
    (ANALYZE, BUFFERS)`` and the plan is kept in the output (``--json``, or
    ``--plans FILE``).

    The fill and the reads are separate steps when wanted: ``--keep`` leaves the filled
    database (its name is printed), ``--reuse NAME`` measures an existing one without
    filling it. Without either, the database is new and dropped at the end.

    ``--partition-check P`` also copies the table into P hash partitions by ``trial_id``
    and times the pages' SQL on both tables (bench/_metrics_partitions.py).

    Target (issue 20): every read's median under 100 ms at 10^8 rows.

How to reproduce
    .venv/bin/python bench/metrics_scale.py --rows=1000000               # quick
    .venv/bin/python bench/metrics_scale.py --rows=10000000 --keep       # fill and keep
    .venv/bin/python bench/metrics_scale.py --reuse=hpcdet_bench_metrics # reads only
    .venv/bin/python bench/metrics_scale.py --reuse=NAME --partition-check=16
    .venv/bin/python bench/metrics_scale.py --rows=100000000 --keep      # ~20 GB of disk
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shlex
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # its sibling modules, also when loaded by path

from _common import bench_main, log, run_script  # noqa: E402
from _metrics_partitions import partition_check, render  # noqa: E402
from flask import Flask  # noqa: E402
from sqlalchemy import Engine, create_engine, event, insert, select, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402
from web_experiments import build_app  # noqa: E402

from hpcdet.master.db import migrate, session_scope  # noqa: E402
from hpcdet.master.models import Experiment, Trial  # noqa: E402
from hpcdet.master.reports.checkpoint_gc import GcPolicy, doomed_checkpoints  # noqa: E402

TARGET_MS = 100.0
DEFAULT_SERVER = "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
TRAINING_NAMES = ("loss", "accuracy", "batches", "epochs", "records")
VALIDATION_EVERY = 100
# Heap and the three indexes of a metrics row, measured at 10^7 and 10^8 rows (~199 bytes).
BYTES_PER_ROW = 200
META_TABLE = "hpcdet_bench_meta"
CONFIG: dict[str, Any] = {
    "name": "bench search",
    "searcher": {"name": "random", "metric": "validation_loss", "smaller_is_better": True},
    "hyperparameters": {"lr": {"type": "log", "base": 10, "minval": -4, "maxval": -1}},
    "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp/hpcdet-bench",
                           "save_experiment_best": 0, "save_trial_best": 1,
                           "save_trial_latest": 1},
}


@dataclass
class ReadStats:
    """R timed runs of one read."""

    name: str
    path: str
    status: int
    bytes: int
    wall_s: list[float]
    statements: int = 0
    plan: list[str] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.wall_s) * 1e3

    @property
    def target_met(self) -> bool:
        return self.status == 200 and self.median_ms < TARGET_MS

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.wall_s)
        return {**asdict(self), "median_ms": self.median_ms,
                "p90_ms": ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)] * 1e3,
                "max_ms": ordered[-1] * 1e3, "target_met": self.target_met}


# ---- the database ------------------------------------------------------------------------


@contextmanager
def bench_database(args: argparse.Namespace) -> Iterator[str]:
    """The database's URL: the reused one, or a new one (dropped at the end unless --keep)."""
    name = args.reuse or args.database or f"hpcdet_bench_metrics_{uuid.uuid4().hex[:8]}"
    url = make_url(args.db_url).set(database=name).render_as_string(hide_password=False)
    if args.reuse:
        migrate(url)  # a database kept by an older tree: the master's schema moves on
        yield url
        return
    admin = create_engine(args.db_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        migrate(url)
        yield url
    finally:
        if args.keep:
            log(f"kept database {name} (reads again: --reuse={name}; drop: "
                f"psql -c 'DROP DATABASE \"{name}\"')")
        else:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def layout(args: argparse.Namespace) -> dict[str, int]:
    """How N rows are shared: the long trial's steps and every other trial's steps."""
    per_step = len(TRAINING_NAMES) + 1 / VALIDATION_EVERY
    long_rows = args.long_rows if args.long_rows is not None else min(args.rows // 10,
                                                                       20_000_000)
    trials = args.experiments * args.trials
    steps = max(VALIDATION_EVERY, int((args.rows - long_rows) / (trials * per_step)))
    long_steps = max(steps, int(long_rows / per_step))
    return {"experiments": args.experiments, "trials_per_experiment": args.trials,
            "steps": steps, "long_steps": long_steps, "days": args.days}


_METRICS_SQL = """
INSERT INTO metrics (trial_id, "group", steps_completed, name, value, run_id, requeue,
                     archived, reported_at)
SELECT t.id, 'training', s, n.name,
       CASE n.name WHEN 'loss' THEN 2.0 * exp(-s / :decay) + random() * 0.05
                   WHEN 'accuracy' THEN 1 - exp(-s / :decay) + random() * 0.05
                   WHEN 'batches' THEN s WHEN 'epochs' THEN s / 1000 ELSE s * 64 END,
       0, 0, false, :start + s * :seconds * interval '1 second'
FROM trials t CROSS JOIN generate_series(1, :steps) AS s
     CROSS JOIN (VALUES ('loss'), ('accuracy'), ('batches'), ('epochs'), ('records')) AS n(name)
WHERE t.id = ANY(:trials)
UNION ALL
SELECT t.id, 'validation', s, 'validation_loss', 1.0 / s + random() * 0.1, 0, 0, false,
       :start + s * :seconds * interval '1 second'
FROM trials t CROSS JOIN generate_series(:every, :steps, :every) AS s
WHERE t.id = ANY(:trials)
"""


def fill(engine: Engine, shape: dict[str, int]) -> dict[str, Any]:
    """Searches, trials, checkpoints and metrics; returns the fill's figures."""
    started = time.perf_counter()
    with engine.begin() as conn:
        indexes = list(conn.execute(text(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'metrics' "
            "AND indexname NOT IN (SELECT conname FROM pg_constraint)")))
        for index_name, _ in indexes:
            conn.execute(text(f'DROP INDEX "{index_name}"'))
    total_steps = ((shape["experiments"] * shape["trials_per_experiment"] - 1) * shape["steps"]
                   + shape["long_steps"])
    now = time.time()
    done_steps = 0
    for exp_index in range(shape["experiments"]):
        # Oldest first, spread over the last `days` days; a trial's steps 1 s apart.
        start = now - shape["days"] * 86400 * (1 - exp_index / shape["experiments"])
        with engine.begin() as conn:
            exp_id, trial_ids = _search(conn, exp_index, shape["trials_per_experiment"], start)
            long_trial = trial_ids[:1] if exp_index == 0 else []
            for ids, steps in ((long_trial, shape["long_steps"]),
                               ([t for t in trial_ids if t not in long_trial], shape["steps"])):
                if ids:
                    conn.execute(text(_METRICS_SQL), {
                        "trials": ids, "steps": steps, "every": VALIDATION_EVERY,
                        "decay": steps / 3, "seconds": 1,
                        "start": _timestamp(start)})
                    _checkpoints(conn, ids, steps, start)
                    done_steps += len(ids) * steps
        elapsed = time.perf_counter() - started
        log(f"search {exp_index + 1}/{shape['experiments']} (id {exp_id}): "
            f"{done_steps / total_steps:6.1%} of the rows in {elapsed:.0f} s, "
            f"about {elapsed * (total_steps / done_steps - 1):.0f} s to go")
    loaded = time.perf_counter()
    with engine.begin() as conn:
        for index_name, definition in indexes:
            log(f"rebuilding {index_name}")
            conn.execute(text(definition))
    indexed = time.perf_counter()
    with engine.connect() as conn:
        log("VACUUM ANALYZE")
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE"))
    return {"load_s": loaded - started, "index_s": indexed - loaded,
            "vacuum_s": time.perf_counter() - indexed, "fill_s": time.perf_counter() - started}


def _timestamp(epoch: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc)


def _search(conn: Any, index: int, trials: int, start: float) -> tuple[int, list[int]]:
    at = _timestamp(start)
    exp_id = conn.scalar(insert(Experiment).returning(Experiment.id), {
        "name": f"bench search {index}", "owner": "bench", "state": "COMPLETED",
        "config": CONFIG, "original_config": "", "context": b"", "searcher_name": "random",
        "created_at": at, "ended_at": at, "progress": 1.0})
    conn.execute(insert(Trial), [
        {"experiment_id": exp_id, "state": "COMPLETED", "seed": i, "token": "t",
         "hparams": {"lr": 10 ** -(1 + (i % 30) / 10)}, "created_at": at, "ended_at": at,
         "best_validation": {"steps_completed": 100,
                             "metrics": {"validation_loss": 1.0 / (1 + i)}}}
        for i in range(trials)])
    ids = conn.scalars(select(Trial.id).where(Trial.experiment_id == exp_id))
    return exp_id, sorted(ids)


def _checkpoints(conn: Any, trial_ids: list[int], steps: int, start: float) -> None:
    """Three per trial; the newest has no validation on its row (the GC reads metrics)."""
    conn.execute(text(
        "INSERT INTO checkpoints (uuid, trial_id, steps_completed, metadata, resources, "
        "validation_metrics, state, reported_at) "
        "SELECT md5(t || '-' || k), t, k * :every, '{}', '{}', "
        "CASE WHEN k < 3 THEN jsonb_build_object('validation_loss', random()) END, "
        "'ACTIVE', :at "
        "FROM unnest(CAST(:trials AS bigint[])) t CROSS JOIN generate_series(1, 3) k"),
        {"trials": trial_ids, "every": max(VALIDATION_EVERY, steps // 300 * 100),
         "at": _timestamp(start)})


def meta(engine: Engine, shape: dict[str, Any] | None = None) -> dict[str, Any]:
    """The bench's own note of what it filled (written with ``shape``, read without)."""
    with engine.begin() as conn:
        if shape is not None:
            conn.execute(text(f"CREATE TABLE IF NOT EXISTS {META_TABLE} (doc jsonb)"))
            conn.execute(text(f"DELETE FROM {META_TABLE}"))
            conn.execute(text(f"INSERT INTO {META_TABLE} VALUES (CAST(:doc AS jsonb))"),
                         {"doc": json.dumps(shape)})
            return shape
        doc = conn.scalar(text(f"SELECT doc FROM {META_TABLE}"))
        return dict(doc)


def sizes(engine: Engine) -> dict[str, Any]:
    with engine.connect() as conn:
        rows = conn.scalar(text("SELECT reltuples::bigint FROM pg_class WHERE relname = 'metrics'"))
        total = conn.scalar(text("SELECT pg_total_relation_size('metrics')"))
        heap = conn.scalar(text("SELECT pg_relation_size('metrics')"))
    return {"metric_rows_estimate": int(rows or 0), "metrics_total_bytes": int(total or 0),
            "metrics_heap_bytes": int(heap or 0)}


# ---- the reads ---------------------------------------------------------------------------


def ids_of(engine: Engine) -> dict[str, int]:
    """The long trial, a typical trial, the newest search and the one holding the long
    trial."""
    with engine.connect() as conn:
        first_exp, last_exp = conn.execute(text(
            "SELECT min(id), max(id) FROM experiments WHERE name LIKE 'bench search%'")).one()
        long_trial = conn.scalar(text("SELECT min(id) FROM trials WHERE experiment_id = :e"),
                                 {"e": first_exp})
        typical = conn.scalar(text("SELECT max(id) FROM trials WHERE experiment_id = :e"),
                              {"e": last_exp})
    return {"first_exp": first_exp, "last_exp": last_exp, "long_trial": long_trial,
            "typical_trial": typical}


def reads(ids: dict[str, int]) -> list[tuple[str, str]]:
    """(name, path) of every read timed: what the pages and ``det`` request."""
    long_t, typ, exp = ids["long_trial"], ids["typical_trial"], ids["last_exp"]
    series = "/metrics/series?max_points=500&group="
    return [
        ("trial page (long trial)", f"/trials/{long_t}"),
        ("series loss (long)", f"/api/v1/trials/{long_t}{series}training&name=loss"),
        ("series validation (long)",
         f"/api/v1/trials/{long_t}{series}validation&name=validation_loss"),
        ("metric names (long)", f"/api/v1/trials/{long_t}{series}training"),
        ("trial describe (long)", f"/api/v1/trials/{long_t}"),
        ("describe validations (long)",
         f"/api/v1/trials/{long_t}/metrics?group=validation&latest=1"),
        ("trial page (typical)", f"/trials/{typ}"),
        ("series loss (typical)", f"/api/v1/trials/{typ}{series}training&name=loss"),
        ("experiment page", f"/experiments/{exp}"),
        ("experiment page (long's)", f"/experiments/{ids['first_exp']}"),
        ("experiment series", f"/api/v1/experiments/{exp}/metrics"),
        ("experiment describe", f"/api/v1/experiments/{exp}"),
        ("experiments list (API)", "/api/v1/experiments?limit=50"),
        ("experiments list (page)", "/"),
        ("experiments by best (API)", "/api/v1/experiments?sort=best&limit=50"),
    ]


class StatementLog:
    """The SQL statements (text, parameters, seconds) the engine runs while enabled."""

    def __init__(self, engine: Engine) -> None:
        self.entries: list[tuple[str, Any, float]] = []
        self.enabled = False
        started: list[float] = []

        @event.listens_for(engine, "before_cursor_execute")
        def before(*_: Any) -> None:
            started.append(time.perf_counter())

        @event.listens_for(engine, "after_cursor_execute")
        def after(_conn: Any, _cursor: Any, statement: str, parameters: Any,
                  *_: Any) -> None:
            took = time.perf_counter() - started.pop()
            if self.enabled:
                self.entries.append((statement, parameters, took))


def timed(call: Callable[[], tuple[int, int]], warmup: int, runs: int,
          statements: StatementLog) -> tuple[int, int, list[float], int]:
    for _ in range(warmup):
        call()
    walls = []
    status = size = 0
    for _ in range(runs):
        statements.entries.clear()
        statements.enabled = True
        started = time.perf_counter()
        status, size = call()
        walls.append(time.perf_counter() - started)
        statements.enabled = False
    return status, size, walls, len(statements.entries)


def explain(engine: Engine, statements: StatementLog) -> list[str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the slowest statement of the last run."""
    if not statements.entries:
        return []
    statement, parameters, _ = max(statements.entries, key=lambda entry: entry[2])
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
        plan = [str(row[0]) for row in cursor.fetchall()]
        raw.rollback()
    finally:
        raw.close()
    return [statement.strip(), *plan]


def measure(app: Flask, ids: dict[str, int], args: argparse.Namespace) -> list[ReadStats]:
    engine: Engine = app.config["HPCDET_ENGINE"]
    statements = StatementLog(engine)
    client = app.test_client()
    out = []

    def get(path: str) -> Callable[[], tuple[int, int]]:
        def call() -> tuple[int, int]:
            response = client.get(path)
            return response.status_code, len(response.data)
        return call

    def gc_decision() -> tuple[int, int]:
        with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
            doomed = doomed_checkpoints(session, ids["last_exp"], CONFIG,
                                        GcPolicy.from_config(CONFIG))
        return 200, len(doomed)

    calls = [(name, path, get(path)) for name, path in reads(ids)]
    calls.append(("checkpoint GC decision", f"doomed_checkpoints(experiment {ids['last_exp']})",
                  gc_decision))
    for name, path, call in calls:
        log(f"{name}: {path} ({args.warmup} + {args.runs} runs)")
        status, size, walls, count = timed(call, args.warmup, args.runs, statements)
        stats = ReadStats(name, path, status, size, walls, count)
        if not stats.target_met or args.explain_all:
            stats.plan = explain(engine, statements)
        out.append(stats)
    return out


# ---- running -----------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"reproduce": reproduce_command(args), "cpus": os.cpu_count()}
    with bench_database(args) as url, tempfile.TemporaryDirectory(
            prefix="hpcdet-bench-metrics-") as tmp:
        engine = create_engine(url)
        try:
            if args.reuse:
                shape = meta(engine)
            else:
                shape = {**layout(args), "rows_asked": args.rows}
                log(f"filling {args.rows:,} rows (about "
                    f"{args.rows * BYTES_PER_ROW / 1e9:.1f} GB with indexes): {shape}")
                shape = meta(engine, {**shape, **fill(engine, shape)})
            result.update(shape=shape, **sizes(engine))
            log(f"metrics: {result['metric_rows_estimate']:,} rows, "
                f"{result['metrics_total_bytes'] / 1e9:.2f} GB")
        finally:
            engine.dispose()
        app = build_app(url, Path(tmp))
        try:
            ids = ids_of(app.config["HPCDET_ENGINE"])
            stats = measure(app, ids, args)
            if args.partition_check:
                result["partition_check"] = partition_check(
                    app.config["HPCDET_ENGINE"], ids, args.partition_check, log)
        finally:
            app.config["HPCDET_ENGINE"].dispose()
    result["load_average"] = list(os.getloadavg())
    result["reads"] = [s.summary() for s in stats]
    result["target_met"] = all(s.target_met for s in stats)
    return result


def reproduce_command(args: argparse.Namespace) -> str:
    if args.reuse:
        flags = [f"--reuse={shlex.quote(args.reuse)}"]
    else:
        flags = [f"--rows={args.rows}", f"--experiments={args.experiments}",
                 f"--trials={args.trials}", f"--days={args.days}"]
        flags += [f"--long-rows={args.long_rows}"] if args.long_rows is not None else []
        flags += ["--keep"] if args.keep else []
        flags += [f"--database={shlex.quote(args.database)}"] if args.database else []
    flags += [f"--runs={args.runs}", f"--warmup={args.warmup}"]
    flags += [f"--partition-check={args.partition_check}"] if args.partition_check else []
    flags += [f"--db-url={shlex.quote(args.db_url)}"] if args.db_url != DEFAULT_SERVER else []
    flags += ["--json"] if args.json else []
    return f".venv/bin/python bench/metrics_scale.py {' '.join(flags)}"


def render_table(result: dict[str, Any]) -> str:
    shape = result["shape"]
    header = (f"{'read':<28} {'KiB':>7} {'SQL':>4} {'median ms':>9} {'p90 ms':>7} "
              f"{'max ms':>7}  target")
    lines = [f"# reproduce: {result['reproduce']}", "",
             f"metrics: {result['metric_rows_estimate']:,} rows, "
             f"{result['metrics_total_bytes'] / 1e9:.2f} GB with indexes "
             f"(heap {result['metrics_heap_bytes'] / 1e9:.2f} GB); "
             f"{shape['experiments']} searches x {shape['trials_per_experiment']} trials x "
             f"{shape['steps']:,} steps, a long trial of {shape['long_steps']:,} steps",
             f"fill: {shape.get('fill_s', 0):.0f} s (load {shape.get('load_s', 0):.0f} s, "
             f"indexes {shape.get('index_s', 0):.0f} s, vacuum "
             f"{shape.get('vacuum_s', 0):.0f} s); load average "
             f"{', '.join(f'{x:.1f}' for x in result['load_average'])}; "
             f"target: median < {TARGET_MS:.0f} ms", "", header, "-" * len(header)]
    for s in result["reads"]:
        verdict = "met" if s["target_met"] else ("MISSED" if s["status"] == 200
                                                 else f"FAILED ({s['status']})")
        lines.append(f"{s['name']:<28} {s['bytes'] / 1024:>7.1f} {s['statements']:>4} "
                     f"{s['median_ms']:>9.1f} {s['p90_ms']:>7.1f} {s['max_ms']:>7.1f}  "
                     f"{verdict}")
    for s in result["reads"]:
        if s["plan"]:
            lines += ["", f"## {s['name']}: its slowest statement", *s["plan"]]
    if "partition_check" in result:
        lines += render(result["partition_check"])
    lines += ["", "Verdict: " + ("target met" if result["target_met"] else "TARGET MISSED")]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="metric rows (1000000)")
    parser.add_argument("--experiments", type=int, default=100, help="searches (100)")
    parser.add_argument("--trials", type=int, default=100, help="trials per search (100)")
    parser.add_argument("--long-rows", type=int, default=None,
                        help="rows of the long trial (10%% of --rows, at most 20000000)")
    parser.add_argument("--days", type=int, default=180,
                        help="the rows' dates span the last DAYS days (180)")
    parser.add_argument("--runs", type=int, default=10, help="timed runs per read (10)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs first (2)")
    parser.add_argument("--db-url", default=DEFAULT_SERVER,
                        help="the PostgreSQL server (a URL allowed to create databases)")
    parser.add_argument("--database", default=None, help="name of the new database")
    parser.add_argument("--keep", action="store_true", help="keep the filled database")
    parser.add_argument("--reuse", default=None, metavar="NAME",
                        help="measure this database, filled by an earlier --keep run")
    parser.add_argument("--explain-all", action="store_true",
                        help="keep the plan of every read, not only of the slow ones")
    parser.add_argument("--partition-check", type=int, default=0, metavar="P",
                        help="also copy metrics into P hash partitions by trial_id and time "
                             "the pages' SQL on both (the copy is dropped after)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if min(args.rows, args.experiments, args.trials, args.runs, args.days) < 1 \
            or args.warmup < 0:
        parser.error("--rows, --experiments, --trials, --days and --runs must be >= 1")
    if make_url(args.db_url).get_backend_name() != "postgresql":
        parser.error("--db-url: a PostgreSQL server URL")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args=parse_args, run=run, render_table=render_table,
                      reproduce_command=reproduce_command)


if __name__ == "__main__":
    run_script(main)
