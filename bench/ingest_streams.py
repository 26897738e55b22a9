"""bench/ingest.py as trials report now (stream and seq in every request), PostgreSQL or SQLite.

What is measured
    Exactly what ``bench/ingest.py`` measures (read its docstring), with one change to the
    load: every request carries ``"stream": {"run_id": 1, "requeue": 0, "rank": 0}``, the
    ``seq`` of its first report and ``resumed_from``, as the harness's reporter sends them,
    so the master runs its exactly-once path (stream rows locked, duplicates dropped,
    ``last_seq`` moved) for every request. ``--legacy`` sends the old bodies instead (the
    same load as ``bench/ingest.py``). ``--sqlite`` runs the master on a fresh SQLite file
    instead of PostgreSQL (there are no PostgreSQL backends to account for then: the writes
    happen in the gunicorn workers).

How to reproduce
    .venv/bin/python bench/ingest_streams.py                 # PostgreSQL, streams
    .venv/bin/python bench/ingest_streams.py --sqlite        # SQLite, streams
    .venv/bin/python bench/ingest_streams.py --sqlite --legacy --rate 10000
    Every other flag is bench/ingest.py's (--trials, --seconds, --rate, --json, ...).
"""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ingest  # bench/ingest.py: this script's directory is on sys.path
from _common import run_script
from sqlalchemy import create_engine, text


def sqlite_stored_rows(url: str, window: tuple[float, float]) -> dict[str, Any]:
    """bench/ingest.py's ``stored_rows`` for SQLite (naive UTC timestamps as text)."""
    def moment(epoch: float) -> str:
        return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            total = conn.execute(text("SELECT count(*) FROM metrics")).scalar_one()
            in_window = conn.execute(text(
                "SELECT count(*) FROM metrics WHERE reported_at >= :a AND reported_at < :b"),
                {"a": moment(window[0]), "b": moment(window[1])}).scalar_one()
            steps = {int(t): int(s) for t, s in conn.execute(
                text("SELECT id, steps_completed FROM trials"))}
    finally:
        engine.dispose()
    return {"total": int(total), "in_window": int(in_window), "steps": steps}


def use_sqlite(directory: Path) -> None:
    """Point bench/ingest.py at a fresh SQLite file in ``directory``."""
    url = f"sqlite:///{directory / 'bench.sqlite'}"
    ingest.create_database = lambda _admin: ingest.BenchDb(url, created=False)
    ingest.backend_pids = lambda _url: []
    ingest.stored_rows = sqlite_stored_rows
    table = ingest.render_table
    ingest.render_table = lambda result: table(result).replace(", PostgreSQL", ", SQLite", 1)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--sqlite", action="store_true")
    own.add_argument("--legacy", action="store_true")
    mine, rest = own.parse_known_args(argv)
    if "-h" in rest or "--help" in rest:
        print(__doc__)
    flags = [f for f, on in (("--sqlite", mine.sqlite), ("--legacy", mine.legacy)) if on]
    command = ingest.reproduce_command
    ingest.reproduce_command = lambda args: command(args).replace(
        "bench/ingest.py", "bench/ingest_streams.py " + " ".join(map(shlex.quote, flags)), 1)
    if not mine.legacy:
        rest.append("--streams")  # bench/ingest.py's Reporter sends the harness's bodies
    with tempfile.TemporaryDirectory(prefix="hpcdet-bench-sqlite-") as tmp:
        if mine.sqlite:
            use_sqlite(Path(tmp))
        return ingest.main(rest)


if __name__ == "__main__":
    run_script(main)
