"""How long ``det-master backup`` and ``det-master restore --force`` take on a database with
``--rows`` metric rows (one experiment, one trial), SQLite or (``--postgres``) PostgreSQL.

Each command runs as an admin runs it (``det-master --db-url URL ...``, a subprocess); the
times include the interpreter's start. The PostgreSQL database is made for the run on
``HPCDET_TEST_POSTGRES_URL`` (tests/conftest.py's default) and dropped afterwards.

Target (mine): a million metric rows back up and restore in under a minute each on the
2-core dev VM.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_main, log, reproduce_with, run_script  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PG = "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
TARGET_S = 60.0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


def fill(url: str, rows: int) -> None:
    """The newest schema, one experiment and trial, ``rows`` training metric rows."""
    from hpcdet.master.db import make_engine, make_session_factory, migrate
    from hpcdet.master.models import Experiment, Metric, Trial
    from hpcdet.master.transitions import transition
    from hpcdet.states import State

    migrate(url)
    engine = make_engine(url)
    with make_session_factory(engine).begin() as session:
        experiment = Experiment(name="bench", owner="alice", config={}, original_config="",
                                context=b"", searcher_name="single")
        session.add(experiment)
        transition(session, experiment, State.ACTIVE, cause="bench")
        trial = Trial(experiment_id=experiment.id, hparams={}, seed=0, token="t")
        session.add(trial)
        transition(session, trial, State.QUEUED, cause="bench")
        session.flush()
        for start in range(0, rows, 50_000):
            session.execute(sa.insert(Metric), [
                {"trial_id": trial.id, "group": "training", "steps_completed": step,
                 "name": "loss", "value": 1.0 / (step + 1)}
                for step in range(start, min(rows, start + 50_000))])
    engine.dispose()


def timed(url: str, *args: str) -> float:
    """Seconds one det-master command takes."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hpcdet.master.serve", "--db-url", url, *args],
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def run(args: argparse.Namespace) -> dict[str, Any]:
    admin_url = os.environ.get("HPCDET_TEST_POSTGRES_URL", DEFAULT_PG)
    name = f"hpcdet_bench_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with tempfile.TemporaryDirectory(prefix="hpcdet-bench-backup-") as temp:
        url = f"sqlite:///{temp}/master.sqlite"
        if args.postgres:
            with admin.connect() as conn:
                conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
            url = admin_url.rsplit("/", 1)[0] + f"/{name}"
        try:
            log(f"filling {args.rows:,} metric rows")
            fill(url, args.rows)
            backup = Path(temp) / "master.backup"
            backup_s = timed(url, "backup", str(backup))
            restore_s = timed(url, "restore", "--force", str(backup))
            size = backup.stat().st_size
        finally:
            if args.postgres:
                with admin.connect() as conn:
                    conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()
    return {"database": "postgresql" if args.postgres else "sqlite", "rows": args.rows,
            "backup_bytes": size, "backup_s": round(backup_s, 2),
            "restore_s": round(restore_s, 2),
            "target_met": backup_s < TARGET_S and restore_s < TARGET_S}


def render_table(result: dict[str, Any]) -> str:
    return (f"{result['database']}: {result['rows']:,} metric rows, backup "
            f"{result['backup_bytes'] / 2**20:.1f} MiB in {result['backup_s']} s, restore "
            f"in {result['restore_s']} s (target < {TARGET_S:.0f} s each: "
            f"{'met' if result['target_met'] else 'NOT met'})")


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args=parse_args, run=run, render_table=render_table,
                      reproduce_command=lambda a: reproduce_with("bench/backup.py", a,
                                                                 parse_args([])))


if __name__ == "__main__":
    run_script(main)
