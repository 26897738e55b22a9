"""The database and the master of bench/ingest.py: create, seed, count, start, stop."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import log
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from hpcdet import expconf
from hpcdet.master.db import make_engine, make_session_factory, session_scope
from hpcdet.master.experiments.searcher_store import build_searcher
from hpcdet.master.models import Experiment, Trial
from hpcdet.master.security.tokens import hash_token
from hpcdet.master.transitions import transition
from hpcdet.states import State

REPO = Path(__file__).resolve().parent.parent

# ---- database ----------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchDb:
    url: str
    created: bool  # dropped at the end only if this run created it


def create_database(admin_url: str) -> BenchDb:
    name = f"hpcdet_bench_{secrets.token_hex(4)}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        admin.dispose()
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    return BenchDb(url, created=True)


def drop_database(admin_url: str, db: BenchDb) -> None:
    if not db.created:
        return
    name = make_url(db.url).database
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        log(f"dropped database {name}")
    finally:
        admin.dispose()


# A complete config (the master's defaults filled in), as a stored experiment has.
SEEDED_CONFIG = expconf.with_defaults({
    "name": "bench-ingest", "entrypoint": "true", "reproducibility": {"experiment_seed": 1},
    "searcher": {"name": "single", "metric": "loss", "smaller_is_better": True,
                 "max_length": {"batches": 1}}})


def seed_trials(url: str, count: int) -> list[tuple[int, str]]:
    """One ACTIVE experiment with ``count`` RUNNING trials; returns (trial id, token) pairs."""
    engine = make_engine(url)
    try:
        with session_scope(make_session_factory(engine)) as session:
            if session.scalar(select(func.count()).select_from(Experiment)):
                raise SystemExit(f"{url}: the database is not empty; give an empty one")
            exp = Experiment(name="bench-ingest", owner="bench", original_config="",
                             config=SEEDED_CONFIG, context=b"", searcher_name="single",
                             # Started already: the master's search step must not start it
                             # again (it would submit a trial) or fail on it every cycle.
                             searcher_state=build_searcher(SEEDED_CONFIG).to_state())
            session.add(exp)
            transition(session, exp, State.ACTIVE, cause="bench/ingest.py")
            plain = [secrets.token_urlsafe(32) for _ in range(count)]
            trials = [_running_trial(session, exp.id, token) for token in plain]
            session.flush()
            return [(t.id, token) for t, token in zip(trials, plain, strict=True)]
    finally:
        engine.dispose()


def _running_trial(session: Session, experiment_id: int, token: str) -> Trial:
    """A RUNNING trial whose token is ``token`` (the database keeps only its hash)."""
    trial = Trial(experiment_id=experiment_id, hparams={}, seed=0, token=hash_token(token))
    session.add(trial)
    transition(session, trial, State.QUEUED, cause="bench/ingest.py")
    transition(session, trial, State.RUNNING, cause="bench/ingest.py")
    return trial


def stored_rows(url: str, window: tuple[float, float]) -> dict[str, Any]:
    """Rows in the database, in the window (server clock), and each trial's progress."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            total = conn.execute(text("SELECT count(*) FROM metrics")).scalar_one()
            in_window = conn.execute(text(
                "SELECT count(*) FROM metrics WHERE reported_at >= to_timestamp(:a) "
                "AND reported_at < to_timestamp(:b)"), {"a": window[0], "b": window[1]}
            ).scalar_one()
            steps = {int(trial_id): int(done) for trial_id, done in conn.execute(
                text("SELECT id, steps_completed FROM trials"))}
    finally:
        engine.dispose()
    return {"total": int(total), "in_window": int(in_window), "steps": steps}


def backend_pids(url: str) -> list[int]:
    """PostgreSQL backend pids connected to the bench database (but not this query's)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [int(p) for p in conn.execute(text(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()")).scalars()]
    finally:
        engine.dispose()


# ---- the master --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_master_yaml(workdir: Path, db_url: str, port: int, args: argparse.Namespace) -> Path:
    config = {
        "host": "127.0.0.1", "port": port, "db": {"url": db_url},
        "webserver": {"workers": args.workers, "threads": args.threads},
        "reconciler": {"interval_seconds": 5}, "state_dir": str(workdir / "state"),
        "auth": {"mode": "open"},  # only trial tokens are used here
        "resource_manager": {"job_storage_root": str(workdir / "jobs"),
                             "master_host": "127.0.0.1"},
    }  # fmt: skip
    path = workdir / "master.yaml"
    path.write_text(json.dumps(config, indent=2))  # JSON is YAML
    return path


def start_master(config: Path, log_path: Path, pythonpath: str) -> subprocess.Popen[bytes]:
    """det-master of the tree(s) on ``pythonpath`` (the editable install would take main's)."""
    env = {**os.environ, "PYTHONPATH": pythonpath}
    with log_path.open("wb") as out:
        return subprocess.Popen([str(REPO / ".venv" / "bin" / "det-master"), "--config",
                                 str(config)], stdout=out, stderr=subprocess.STDOUT,
                                cwd=config.parent, start_new_session=True, env=env)


def wait_ready(proc: subprocess.Popen[bytes], port: int, log_path: Path,
               timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"det-master exited with {proc.returncode}:\n{tail(log_path)}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/api/v1/master")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"det-master did not answer within {timeout:.0f} s:\n{tail(log_path)}")


def stop_master(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the master (gunicorn stops its workers, serve.py the reconciler), then KILL."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the session it was started in: anything left
    except ProcessLookupError:
        pass
    log("stopped det-master")


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
