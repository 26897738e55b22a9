"""A long soak: many short trials through the dev cluster, metric load, and restarts.

What is measured
    A real ``det-master`` on a fresh PostgreSQL database drives the dev Slurm
    cluster for ``--minutes``. Meanwhile:

    * ``--trials`` short Core API trials (``--trials-per-experiment`` per random search,
      ``slots_per_trial: 1``) are created with the real ``det experiment create``, the
      experiments spread evenly over the first 60 % of the run. Each trial sleeps ``--pace``
      seconds per step for ``--steps`` steps, reports 3 training metrics per step and a
      validation every 10 steps: a known number of rows;
    * ``--ingest-trials`` reporter threads add a paced metric load (``--ingest-rate`` rows/s in
      all) to the master's metrics route, as trials would; a batch that fails (the master is
      restarting) is sent again, as the harness does, until it is stored;
    * at 40 % of the run the master is stopped (SIGTERM; ``--master-kill``: SIGKILL of its
      whole process group, a crash) and started again; at 60 % ``slurmctld`` is stopped and
      started again (``scripts/dev-cluster up``).

    Sampled every ``--sample-seconds``: the master's resident memory (RSS of its process tree:
    gunicorn arbiter, workers, reconciler), its open file descriptors, the database's client
    connections, and the trials by state. After the run (and a grace period for the last
    trials): every trial's final state and its metric rows against what it reported (nothing
    lost, nothing stored twice), and the load's rows likewise.

    Verdicts: every trial COMPLETED with exactly its rows; the load's rows exact; RSS, file
    descriptors and connections not growing within each master lifetime (the last quarter of
    a lifetime's samples against its first quarter after a warm-up minute, at most +20 % RSS,
    +16 fds, +4 connections).

How to reproduce
    .venv/bin/python bench/soak.py                         # 200 trials, 30 minutes
    .venv/bin/python bench/soak.py --trials 24 --minutes 4 --steps 20   # a quick look
It needs the dev cluster (``scripts/dev-cluster up``, SLURM_CONF from ``scripts/dev-cluster
env``) and PostgreSQL on 127.0.0.1:5432 (``scripts/ensure-postgres``). It creates the database
``hpcdet_bench_<random>`` and a temporary job root, and removes both at the end (``--keep``
keeps them), cancelling any job it left, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # its sibling modules, also when loaded by path

from _common import log, reproduce_with, run_script, terminate_as_interrupt  # noqa: E402
from _ingest_setup import tail  # noqa: E402
from ingest import (  # noqa: E402
    ADMIN_URL,
    BenchDb,
    create_database,
    descendants,
    drop_database,
    free_port,
    seed_trials,
)
from sqlalchemy import Engine, create_engine, text  # noqa: E402

from hpcdet.master.db import migrate  # noqa: E402

BIN = REPO / ".venv" / "bin"
TRAINING_NAMES = ("loss", "lr", "step_seconds")
VALIDATION_NAMES = ("validation_loss",)
VALIDATION_EVERY = 10
# Growth allowed between the first and the last quarter of a master lifetime's samples.
RSS_GROWTH, FD_GROWTH, CONN_GROWTH = 1.20, 16, 4

TRIAL_CODE = '''\
"""A soak trial: a known number of metric rows, a few seconds of (pretend) training."""
import math
import time

import hpcdet as det

info = det.get_cluster_info()
hparams = info.trial.hparams
with det.core.init() as core:
    for step in range(1, int(hparams["steps"]) + 1):
        started = time.monotonic()
        time.sleep(float(hparams["pace"]))
        loss = math.exp(-step * float(hparams["lr"]))
        core.train.report_training_metrics(steps_completed=step, metrics={
            "loss": loss, "lr": float(hparams["lr"]),
            "step_seconds": time.monotonic() - started})
        if step % EVERY == 0:
            core.train.report_validation_metrics(
                steps_completed=step, metrics={"validation_loss": loss * 1.1})
'''.replace("EVERY", str(VALIDATION_EVERY))


# ---- the master -------------------------------------------------------------------------


@dataclass
class Master:
    """det-master in its own session, restartable; appends to one log."""

    workdir: Path
    db_url: str
    port: int
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    lifetime: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "det-master.log"

    def write_config(self) -> Path:
        config = {
            "host": "127.0.0.1", "port": self.port, "db": {"url": self.db_url},
            "webserver": {"workers": 2, "threads": 8},
            "reconciler": {"interval_seconds": 2}, "state_dir": str(self.workdir / "state"),
            "auth": {"mode": "open"},
            "resource_manager": {"job_storage_root": str(self.workdir / "jobs"),
                                 "master_host": "127.0.0.1", "cluster_name": "soak",
                                 "slot_type": "cpu"},
        }  # fmt: skip
        path = self.workdir / "master.yaml"
        path.write_text(json.dumps(config, indent=2))  # JSON is YAML
        return path

    def start(self) -> None:
        config = self.write_config()
        with self.log_path.open("ab") as out:
            self.process = subprocess.Popen([str(BIN / "det-master"), "--config", str(config)],
                                            stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                            cwd=self.workdir, start_new_session=True)
        self.lifetime += 1
        self._wait_ready()

    def _wait_ready(self, timeout: float = 90) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"det-master exited with {self.process.returncode}:\n"
                                 f"{tail(self.log_path)}")
            with contextlib.suppress(OSError, http.client.HTTPException):
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/api/v1/master")
                if conn.getresponse().status == 200:
                    return
            time.sleep(0.3)
        raise SystemExit(f"det-master did not answer in {timeout:.0f} s:\n{tail(self.log_path)}")

    def stop(self, *, crash: bool = False) -> None:
        """SIGTERM and wait (SIGKILL after 30 s); ``crash``: SIGKILL the whole session."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        if crash:
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # anything left of its session

    def tree(self) -> list[int]:
        if self.process is None or self.process.poll() is not None:
            return []
        return descendants(self.process.pid)


def memory_and_fds(pids: Sequence[int]) -> tuple[int, int, int]:
    """Resident kB, proportional kB and open file descriptors summed over ``pids``.

    RSS counts the pages gunicorn's forked workers share with their arbiter once per process;
    PSS divides each shared page among its sharers, so it sums to what the tree really holds.
    Gone processes count 0.
    """
    rss = pss = fds = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith(("Rss:", "Pss:")):
                    kb = int(line.split()[1])
                    rss, pss = (rss + kb, pss) if line.startswith("Rss:") else (rss, pss + kb)
            fds += len(os.listdir(f"/proc/{pid}/fd"))
    return rss, pss, fds


# ---- the metric load --------------------------------------------------------------------


@dataclass
class LoadReporter:
    """One seeded trial posting a batch every ``interval`` s; a failed batch is resent."""

    trial_id: int
    token: str
    port: int
    interval: float
    batch_steps: int
    acked_steps: int = 0
    retries: int = 0
    errors: list[str] = field(default_factory=list)

    def body(self, first: int) -> bytes:
        reports = [{"steps_completed": first + i,
                    "metrics": {f"load_{k}": random.random() for k in range(5)}}
                   for i in range(self.batch_steps)]
        return json.dumps({"group": "training", "reports": reports}).encode()

    def run(self, stop: threading.Event) -> None:
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"}
        path = f"/api/v1/trials/{self.trial_id}/metrics"
        stop.wait(random.Random(self.trial_id).random() * self.interval)
        while not stop.is_set():
            body = self.body(self.acked_steps + 1)
            while not self._post(path, body, headers):
                self.retries += 1
                if stop.wait(0.5):
                    return  # unsent: not counted as acknowledged
            self.acked_steps += self.batch_steps
            stop.wait(self.interval)

    def _post(self, path: str, body: bytes, headers: dict[str, str]) -> bool:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            conn.request("POST", path, body, headers)
            response = conn.getresponse()
            response.read()
            conn.close()
        except (OSError, http.client.HTTPException) as exc:
            self._note(f"{type(exc).__name__}")
            return False
        if 200 <= response.status < 300:
            return True
        self._note(f"HTTP {response.status}")
        return False

    def _note(self, error: str) -> None:
        if len(self.errors) < 5:
            self.errors.append(error)


# ---- the trials -------------------------------------------------------------------------


def write_experiment(workdir: Path, index: int, args: argparse.Namespace) -> tuple[Path, Path]:
    context = workdir / "context"
    context.mkdir(exist_ok=True)
    (context / "soak_trial.py").write_text(TRIAL_CODE)
    config = {
        "name": f"soak-{index}", "entrypoint": "python3 soak_trial.py",
        "hyperparameters": {"steps": args.steps, "pace": args.pace,
                            "lr": {"type": "double", "minval": 0.01, "maxval": 0.1}},
        "searcher": {"name": "random", "metric": "validation_loss", "smaller_is_better": True,
                     "max_trials": args.trials_per_experiment,
                     "max_length": {"batches": args.steps}},
        "resources": {"slots_per_trial": 1}, "max_restarts": 3,
        "environment": {"environment_variables": ["OMP_NUM_THREADS=1"]},
    }  # fmt: skip
    path = workdir / f"soak-{index}.yaml"
    path.write_text(json.dumps(config, indent=2))
    return path, context


def create_experiment(master: Master, config: Path, context: Path) -> int:
    result = subprocess.run([str(BIN / "det"), "-m", master.url, "experiment", "create",
                             str(config), str(context)], env=master.env, capture_output=True,
                            text=True, timeout=120)
    line = next((li for li in result.stdout.splitlines()
                 if li.startswith("Created experiment")), None)
    if result.returncode != 0 or line is None:
        raise SystemExit(f"det experiment create failed ({result.returncode}):\n"
                         f"{result.stdout}\n{result.stderr}")
    return int(line.split()[-1])


# ---- sampling ---------------------------------------------------------------------------


@dataclass
class Sample:
    at: float  # seconds since the start
    lifetime: int
    rss_mb: float
    pss_mb: float
    fds: int
    db_connections: int
    trials: dict[str, int]


def take_sample(started: float, master: Master, engine: Engine, db_name: str,
                soak_ids: Sequence[int]) -> Sample:
    rss, pss, fds = memory_and_fds(master.tree())
    with engine.connect() as conn:
        connections = _database_connections(conn, db_name)
        rows = conn.execute(text("SELECT state, count(*) FROM trials WHERE experiment_id = "
                                 "ANY(:ids) GROUP BY state"), {"ids": list(soak_ids)}).all() \
            if soak_ids else []
    return Sample(time.monotonic() - started, master.lifetime, rss / 1024, pss / 1024, fds,
                  connections,
                  {str(state): int(count) for state, count in rows})


def _database_connections(conn: Any, db_name: str) -> int:
    # Less this bench's own connection.
    return int(conn.execute(text("SELECT count(*) FROM pg_stat_activity WHERE datname = :d"),
                            {"d": db_name}).scalar_one()) - 1


def growth(samples: Sequence[Sample], warmup: float) -> list[dict[str, Any]]:
    """Per master lifetime: the first and the last quarter's medians after a warm-up."""
    verdicts = []
    for lifetime in sorted({s.lifetime for s in samples}):
        mine = [s for s in samples if s.lifetime == lifetime]
        mine = [s for s in mine if s.at - mine[0].at >= warmup] or mine
        quarter = max(1, len(mine) // 4)
        first, last = mine[:quarter], mine[-quarter:]
        row = {"lifetime": lifetime, "samples": len(mine), "minutes": round(
            (mine[-1].at - mine[0].at) / 60, 1)}
        for key in ("rss_mb", "pss_mb", "fds", "db_connections"):
            row[f"{key}_first"] = _median([getattr(s, key) for s in first])
            row[f"{key}_last"] = _median([getattr(s, key) for s in last])
        row["no_growth"] = (row["rss_mb_last"] <= row["rss_mb_first"] * RSS_GROWTH
                            and row["fds_last"] <= row["fds_first"] + FD_GROWTH
                            and row["db_connections_last"]
                            <= row["db_connections_first"] + CONN_GROWTH)
        verdicts.append(row)
    return verdicts


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return float(ordered[len(ordered) // 2]) if ordered else 0.0


# ---- the run ----------------------------------------------------------------------------


@dataclass
class Timeline:
    """When things happen, in seconds since the start."""

    experiments: list[float]
    master_restart: float
    slurmctld_restart: float
    end: float


def timeline(args: argparse.Namespace) -> Timeline:
    total = args.minutes * 60
    count = -(-args.trials // args.trials_per_experiment)
    spread = 0.6 * total
    return Timeline([spread * i / count for i in range(count)], 0.4 * total, 0.6 * total, total)


def restart_slurmctld() -> None:
    subprocess.run(["pkill", "-TERM", "-x", "slurmctld"], check=False)
    time.sleep(6)  # the master's polls fail meanwhile
    subprocess.run([str(REPO / "scripts" / "dev-cluster"), "up"], check=True,
                   stdout=subprocess.DEVNULL)


@dataclass
class Run:
    args: argparse.Namespace
    workdir: Path
    db: BenchDb
    master: Master
    engine: Engine
    samples: list[Sample] = field(default_factory=list)
    experiments: list[int] = field(default_factory=list)
    events: list[tuple[float, str]] = field(default_factory=list)

    def event(self, started: float, what: str) -> None:
        self.events.append((round(time.monotonic() - started, 1), what))
        log(f"[{time.monotonic() - started:7.1f} s] {what}")

    def drive(self, reporters: Sequence[LoadReporter]) -> None:
        plan = timeline(self.args)
        stop = threading.Event()
        threads = [threading.Thread(target=r.run, args=(stop,), daemon=True) for r in reporters]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        try:
            self._timeline(plan, started)
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)
        self.event(started, f"load stopped; waiting up to {self.args.grace_minutes:g} min "
                            "for the last trials")
        self._wait_for_experiments(started, started + plan.end + self.args.grace_minutes * 60)

    def _timeline(self, plan: Timeline, started: float) -> None:
        pending = [(at, f"experiment {i + 1}") for i, at in enumerate(plan.experiments)]
        pending += [(plan.master_restart, "master restart"),
                    (plan.slurmctld_restart, "slurmctld restart")]
        pending.sort()
        next_sample = 0.0
        while (now := time.monotonic() - started) < plan.end:
            while pending and pending[0][0] <= now:
                self._happen(pending.pop(0)[1], started)
            if now >= next_sample:
                self.samples.append(self._sample(started))
                next_sample = now + self.args.sample_seconds
            time.sleep(0.5)

    def _happen(self, what: str, started: float) -> None:
        if what.startswith("experiment"):
            index = len(self.experiments)
            left = self.args.trials - index * self.args.trials_per_experiment
            args = argparse.Namespace(**{**vars(self.args), "trials_per_experiment":
                                         min(left, self.args.trials_per_experiment)})
            exp_id = create_experiment(self.master, *write_experiment(self.workdir, index, args))
            self.experiments.append(exp_id)
            self.event(started, f"created experiment {exp_id} "
                                f"({args.trials_per_experiment} trials)")
        elif what == "master restart":
            self.event(started, "stopping the master" + (" (SIGKILL)" if self.args.master_kill
                                                         else ""))
            self.master.stop(crash=self.args.master_kill)
            self.master.start()
            self.event(started, "master up again")
        else:
            self.event(started, "restarting slurmctld")
            restart_slurmctld()
            self.event(started, "slurmctld up again")

    def _sample(self, started: float) -> Sample:
        return take_sample(started, self.master, self.engine, self.engine.url.database or "",
                           self.experiments)

    def _wait_for_experiments(self, started: float, deadline_at: float) -> None:
        while time.monotonic() < deadline_at:
            self.samples.append(self._sample(started))
            with self.engine.connect() as conn:
                open_ = conn.execute(text("SELECT count(*) FROM experiments WHERE id = ANY(:ids) "
                                          "AND ended_at IS NULL"),
                                     {"ids": self.experiments}).scalar_one()
            if not open_:
                self.event(started, "every experiment ended")
                return
            time.sleep(self.args.sample_seconds)
        self.event(started, "grace period over: some experiments have not ended")


def check_trials(engine: Engine, experiments: Sequence[int],
                 args: argparse.Namespace) -> dict[str, Any]:
    """Every soak trial's final state, and its rows against what it reported."""
    training = args.steps * len(TRAINING_NAMES)
    validation = args.steps // VALIDATION_EVERY * len(VALIDATION_NAMES)
    with engine.connect() as conn:
        states: dict[Any, Any] = dict(conn.execute(text(
            "SELECT state, count(*) FROM trials WHERE experiment_id = ANY(:ids) GROUP BY state"),
            {"ids": list(experiments)}).all())
        rows = conn.execute(text(
            'SELECT t.id, m."group", count(m.id), count(DISTINCT (m.steps_completed, m.name)) '
            "FROM trials t LEFT JOIN metrics m ON m.trial_id = t.id AND NOT m.archived "
            'WHERE t.experiment_id = ANY(:ids) GROUP BY t.id, m."group"'),
            {"ids": list(experiments)}).all()
        restarts = conn.execute(text("SELECT coalesce(sum(restarts), 0) FROM trials "
                                     "WHERE experiment_id = ANY(:ids)"),
                                {"ids": list(experiments)}).scalar_one()
    per_trial: dict[int, dict[str, tuple[int, int]]] = {}
    for trial_id, group, count, distinct in rows:
        per_trial.setdefault(trial_id, {})[group or ""] = (int(count), int(distinct))
    wrong = {tid: groups for tid, groups in per_trial.items()
             if groups.get("training", (0, 0)) != (training, training)
             or groups.get("validation", (0, 0)) != (validation, validation)}
    return {"trials": len(per_trial), "states": {str(k): int(v) for k, v in states.items()},
            "restarts": int(restarts), "expected_rows_per_trial": training + validation,
            "trials_with_wrong_rows": len(wrong),
            "wrong_examples": {str(k): v for k, v in list(wrong.items())[:5]}}


def check_load(engine: Engine, reporters: Sequence[LoadReporter]) -> dict[str, Any]:
    """The load's rows: exactly what was acknowledged, no (step, name) twice."""
    with engine.connect() as conn:
        stored = {int(tid): (int(count), int(distinct)) for tid, count, distinct in conn.execute(
            text("SELECT trial_id, count(*), count(DISTINCT (steps_completed, name)) "
                 "FROM metrics WHERE trial_id = ANY(:ids) GROUP BY trial_id"),
            {"ids": [r.trial_id for r in reporters]}).all()}
    acknowledged = sum(r.acked_steps * 5 for r in reporters)
    stored_rows = sum(count for count, _ in stored.values())
    duplicates = sum(count - distinct for count, distinct in stored.values())
    # A batch unacknowledged when the load stopped may have been stored: at most one each.
    in_doubt = {r.trial_id for r in reporters
                if stored.get(r.trial_id, (0, 0))[0] not in (r.acked_steps * 5,
                                                              (r.acked_steps + r.batch_steps) * 5)}
    return {"acknowledged_rows": acknowledged, "stored_rows": stored_rows,
            "duplicate_rows": duplicates, "trials_off": len(in_doubt),
            "retries": sum(r.retries for r in reporters),
            "errors_seen": sorted({e for r in reporters for e in r.errors})}


def run(args: argparse.Namespace, workdir: Path, db: BenchDb) -> dict[str, Any]:
    log(f"migrating the database; job root {workdir / 'jobs'}")
    migrate(db.url)
    load_trials = seed_trials(db.url, args.ingest_trials) if args.ingest_trials else []
    env = {**os.environ, "DET_USER": "soak"}
    master = Master(workdir, db.url, free_port(), env)
    engine = create_engine(db.url, pool_pre_ping=True)
    soak = Run(args, workdir, db, master, engine)
    interval = (len(load_trials) * args.batch_steps * 5 / args.ingest_rate
                if args.ingest_rate else 1.0)
    reporters = [LoadReporter(tid, token, master.port, interval, args.batch_steps)
                 for tid, token in load_trials]
    try:
        master.start()
        log(f"det-master up at {master.url} (log {master.log_path})")
        soak.drive(reporters)
        trials = check_trials(engine, soak.experiments, args)
        load = check_load(engine, reporters)
    finally:
        master.stop()
        engine.dispose()
        cancel_leftovers(workdir / "jobs")
    return report(args, soak, trials, load)


def cancel_leftovers(job_root: Path) -> None:
    """scancel every job whose working directory is under this run's job root."""
    listing = subprocess.run(["squeue", "--noheader", "--format=%i %Z"], capture_output=True,
                             text=True, check=False).stdout
    mine = [line.split()[0] for line in listing.splitlines()
            if len(line.split()) == 2 and line.split()[1].startswith(str(job_root))]
    if mine:
        log(f"cancelling {len(mine)} job(s) left behind")
        subprocess.run(["scancel", *mine], check=False)


def report(args: argparse.Namespace, soak: Run, trials: dict[str, Any],
           load: dict[str, Any]) -> dict[str, Any]:
    lifetimes = growth(soak.samples, warmup=60)
    peak = max(soak.samples, key=lambda s: s.rss_mb) if soak.samples else None
    log_text = soak.master.log_path.read_text(errors="replace")
    completed = trials["states"].get("COMPLETED", 0)
    verdicts = {
        "every trial COMPLETED": completed == args.trials == trials["trials"],
        "every trial's rows exact": trials["trials_with_wrong_rows"] == 0,
        "the load's rows exact": load["duplicate_rows"] == 0 and load["trials_off"] == 0,
        "no growth within a master lifetime": all(row["no_growth"] for row in lifetimes),
    }
    return {"reproduce": reproduce_command(args), "events": soak.events,
            "experiments": soak.experiments, "trials": trials, "load": load,
            "lifetimes": lifetimes, "peak_rss_mb": peak.rss_mb if peak else 0,
            "peak_pss_mb": peak.pss_mb if peak else 0,
            "master_log": {"tracebacks": log_text.count("Traceback"),
                           "error_lines": sum(" ERROR " in li for li in log_text.splitlines())},
            "samples": [vars(s) for s in soak.samples], "verdicts": verdicts}


def render_table(result: dict[str, Any]) -> str:
    lines = [f"# reproduce: {result['reproduce']}", "", "events:"]
    lines += [f"  {at:8.1f} s  {what}" for at, what in result["events"]]
    lines += ["", "samples (one a minute):",
              f"  {'minute':>6} {'master':>6} {'RSS MB':>8} {'PSS MB':>8} {'fds':>5} "
              f"{'DB conn':>7}  trials"]
    shown = -60.0
    for s in result["samples"]:
        if s["at"] - shown >= 60:
            shown = s["at"]
            states = ", ".join(f"{k} {v}" for k, v in sorted(s["trials"].items())) or "—"
            lines.append(f"  {s['at'] / 60:6.1f} {s['lifetime']:6d} {s['rss_mb']:8.1f} "
                         f"{s['pss_mb']:8.1f} {s['fds']:5d} {s['db_connections']:7d}  {states}")
    lines += ["", "per master lifetime (first vs last quarter, after a warm-up minute):",
              f"  {'life':>4} {'min':>5} {'RSS MB':>15} {'fds':>11} {'DB conn':>9}  growth"]
    for row in result["lifetimes"]:
        lines.append(f"  {row['lifetime']:4d} {row['minutes']:5.1f} "
                     f"{row['rss_mb_first']:7.1f}→{row['rss_mb_last']:<7.1f} "
                     f"{row['fds_first']:5.0f}→{row['fds_last']:<5.0f} "
                     f"{row['db_connections_first']:4.0f}→{row['db_connections_last']:<4.0f}  "
                     f"{'none' if row['no_growth'] else 'GROWS'}")
    trials, load = result["trials"], result["load"]
    states = ", ".join(f"{k} {v}" for k, v in sorted(trials["states"].items())) or "—"
    lines += ["", f"trials: {trials['trials']} ({states}); restarts {trials['restarts']}; "
              f"rows per trial {trials['expected_rows_per_trial']}; wrong rows in "
              f"{trials['trials_with_wrong_rows']}",
              f"load: {load['acknowledged_rows']:,} rows acknowledged, {load['stored_rows']:,} "
              f"stored, {load['duplicate_rows']} duplicates, {load['trials_off']} reporters off, "
              f"{load['retries']} batches resent "
              f"({', '.join(load['errors_seen']) or 'no errors seen'})",
              f"peak master RSS: {result['peak_rss_mb']:.1f} MB (PSS {result['peak_pss_mb']:.1f} "
              f"MB); master log: {result['master_log']['tracebacks']} tracebacks, "
              f"{result['master_log']['error_lines']} ERROR lines", ""]
    lines += [f"{'met' if ok else 'NOT MET'}: {name}" for name, ok in result["verdicts"].items()]
    return "\n".join(lines)


def reproduce_command(args: argparse.Namespace) -> str:
    return reproduce_with("bench/soak.py", args, parse_args([]))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--trials", type=int, default=200, help="short trials in all (200)")
    add("--trials-per-experiment", type=int, default=20, help="trials per random search (20)")
    add("--steps", type=int, default=60, help="steps per trial (60)")
    add("--pace", type=float, default=1.0, help="seconds per step (1.0)")
    add("--minutes", type=float, default=30, help="length of the run (30)")
    add("--grace-minutes", type=float, default=10,
        help="after the run, how long to wait for the last trials to end (10)")
    add("--ingest-trials", type=int, default=16, help="reporters of the metric load (16)")
    add("--ingest-rate", type=float, default=2000, help="rows/s of the metric load (2000)")
    add("--batch-steps", type=int, default=10, help="steps per load request, x5 metrics (10)")
    add("--sample-seconds", type=float, default=10, help="sampling interval (10)")
    add("--master-kill", action="store_true",
        help="restart the master by SIGKILL of all its processes (a crash), not SIGTERM")
    add("--admin-url", default=ADMIN_URL, help=f"where to create the database ({ADMIN_URL})")
    add("--keep", action="store_true", help="keep the database and the job root")
    add("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if min(args.trials, args.trials_per_experiment, args.steps) < 1 or args.minutes <= 0 \
            or args.pace < 0 or args.ingest_trials < 0 or args.ingest_rate < 0:
        parser.error("counts must be >= 1 (--ingest-trials >= 0), --minutes > 0, --pace >= 0")
    return args


@contextlib.contextmanager
def workspace(keep: bool) -> Iterator[Path]:
    if keep:
        path = Path(tempfile.mkdtemp(prefix="hpcdet-soak-"))
        log(f"keeping {path}")
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="hpcdet-soak-") as tmp:
        yield Path(tmp)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    log(f"# reproduce: {reproduce_command(args)}")
    if not os.environ.get("SLURM_CONF"):
        raise SystemExit('bench/soak.py needs the dev cluster: eval "$(scripts/dev-cluster env)"')
    with terminate_as_interrupt(), workspace(args.keep) as workdir:
        db = create_database(args.admin_url)
        try:
            result = run(args, workdir, db)
        finally:
            if not args.keep:
                drop_database(args.admin_url, db)
    print(json.dumps(result, indent=2, default=str) if args.json else render_table(result))
    return 0 if all(result["verdicts"].values()) else 1


if __name__ == "__main__":
    run_script(main)
