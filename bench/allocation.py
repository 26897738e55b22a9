"""Allocation mode vs one job per trial: an ASHA search of short trials on the dev cluster.

What is measured
    A real ``det-master`` (SQLite, reconcile interval 2 s) drives the dev Slurm cluster.
    For each mode in ``--modes`` one adaptive ASHA search of ``--trials`` short Core API
    trials is created with the real ``det experiment create`` (``slots_per_trial: 1``,
    ``max_concurrent_trials: --slots``; each trial sleeps ``--pace`` seconds per epoch for
    up to ``--max-time`` epochs, reports a validation per epoch and stops when ASHA says so):

    * ``jobs``: every trial is its own batch job (hpcdet's default);
    * ``allocation``: ``resources.allocation: {slots: --slots}``, one allocation job whose
      agent runs the trials as ``srun`` steps.

    ``--competing N`` plays a busy cluster: a feeder keeps N other jobs (``sleep
    --competing-seconds``, one CPU each) pending in the queue for the whole run, so a job
    submitted later waits behind them, as on a shared cluster; without it the dev cluster
    is idle and every job starts at once.

    Reported per mode: wall time from ``det experiment create`` to the experiment's end,
    the total queue wait (the sum over trials of every QUEUED -> RUNNING interval in the
    trials' state history), the median and largest single wait, batch jobs submitted
    (trial jobs plus allocations), and every trial's final state. Nothing is timed inside
    the trials' code: the two runs differ only in how trials reach a CPU.

How to reproduce
    .venv/bin/python bench/allocation.py                     # 64 trials each way
    .venv/bin/python bench/allocation.py --trials 16         # a quick look
    .venv/bin/python bench/allocation.py --modes allocation --json
    .venv/bin/python bench/allocation.py --trials 32 --competing 8     # a busy cluster
It needs the dev cluster (``scripts/dev-cluster up``; SLURM_CONF from ``scripts/dev-cluster
env``) and, shared with other users, its lock: ``flock /tmp/hpcdet-cluster.lock ...``. Its
job root and database live in a temporary directory, removed at the end (with any job left).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # its sibling modules, also when loaded by path

from _common import log, reproduce_with, run_script, terminate_as_interrupt  # noqa: E402
from ingest import free_port  # noqa: E402
from soak import Master, cancel_leftovers, create_experiment  # noqa: E402
from sqlalchemy import create_engine, text  # noqa: E402

from hpcdet.master.db import migrate  # noqa: E402

MODES = ("jobs", "allocation")
TRIAL_CODE = '''\
"""A short ASHA trial: one validation per epoch of --pace seconds; stops when told."""
import time

import hpcdet as det

info = det.get_cluster_info()
hparams = info.trial.hparams
epochs = int(hparams["epochs"])
with det.core.init() as core:
    for epoch in range(1, epochs + 1):
        time.sleep(float(hparams["pace"]))
        loss = float(hparams["lr"]) * 10 / epoch
        core.train.report_validation_metrics(steps_completed=epoch,
                                             metrics={"validation_loss": loss, "epochs": epoch})
        if core.preempt.should_preempt():
            break
'''


def experiment_config(args: argparse.Namespace, mode: str) -> dict[str, Any]:
    resources: dict[str, Any] = {"slots_per_trial": 1}
    if mode == "allocation":
        resources["allocation"] = {"slots": args.slots, "walltime": args.walltime}
    return {
        "name": f"bench-allocation-{mode}", "entrypoint": "python3 train.py",
        "hyperparameters": {"lr": {"type": "double", "minval": 0.01, "maxval": 1.0},
                            "pace": args.pace, "epochs": args.max_time},
        "searcher": {"name": "adaptive_asha", "metric": "validation_loss",
                     "smaller_is_better": True, "time_metric": "epochs",
                     "max_time": args.max_time, "max_trials": args.trials,
                     "mode": "aggressive", "max_rungs": 2, "divisor": 2,
                     "max_concurrent_trials": args.slots},
        "resources": resources,
        "environment": {"environment_variables": ["HPCDET_PREEMPT_POLL_SECONDS=1"]},
        "max_restarts": 1,
    }  # fmt: skip


def run_mode(args: argparse.Namespace, workdir: Path, mode: str) -> dict[str, Any]:
    """One search in ``mode`` on a fresh master and database; its figures."""
    root = workdir / mode
    (root / "context").mkdir(parents=True)
    (root / "context" / "train.py").write_text(TRIAL_CODE)
    config = root / "config.yaml"
    config.write_text(json.dumps(experiment_config(args, mode), indent=2))  # JSON is YAML
    db_url = f"sqlite:///{root / 'master.sqlite'}"
    migrate(db_url)
    env = {**os.environ, "PYTHONPATH": str(REPO), "DET_USER": "bench"}
    master = Master(root, db_url, free_port(), env)
    master.start()
    feeder = CompetingJobs(args.competing, args.competing_seconds, root)
    try:
        started = time.monotonic()
        exp_id = create_experiment(master, config, root / "context")
        log(f"{mode}: experiment {exp_id} created")
        ended = wait_for_end(db_url, exp_id, started + args.timeout)
        wall = time.monotonic() - started
        time.sleep(2 * 2)  # two reconcile cycles: the allocation is released
    finally:
        feeder.stop()
        master.stop()
        cancel_leftovers(root / "jobs")
    return {"mode": mode, "wall_seconds": round(wall, 1), "experiment_state": ended,
            "competing_jobs_submitted": feeder.submitted, **queue_figures(db_url, exp_id)}


class CompetingJobs:
    """Keeps ``count`` other jobs pending in the queue until stopped, then cancels them."""

    NAME = "bench-competing"

    def __init__(self, count: int, seconds: float, workdir: Path) -> None:
        self.count, self.seconds, self.workdir = count, seconds, workdir
        self.submitted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._feed, daemon=True)
        if count:
            self._thread.start()

    def _feed(self) -> None:
        while not self._stop.is_set():
            pending = subprocess.run(["squeue", "--noheader", "--states=PD", "--format=%i",
                                      f"--name={self.NAME}"], capture_output=True, text=True,
                                     check=False).stdout.split()
            for _ in range(self.count - len(pending)):
                subprocess.run(["sbatch", "--parsable", f"--job-name={self.NAME}",
                                "--ntasks=1", f"--chdir={self.workdir}", "--output=/dev/null",
                                f"--wrap=sleep {self.seconds}"], capture_output=True,
                               check=False)
                self.submitted += 1
            self._stop.wait(1.0)

    def stop(self) -> None:
        self._stop.set()
        if self.count:
            self._thread.join(timeout=30)
            subprocess.run(["scancel", f"--name={self.NAME}"], check=False)


def wait_for_end(db_url: str, exp_id: int, deadline: float) -> str:
    """The experiment's final state, or ``TIMEOUT`` once ``deadline`` has passed (the
    figures then cover what happened until then)."""
    engine = create_engine(db_url)
    try:
        while time.monotonic() < deadline:
            with engine.connect() as conn:
                row = conn.execute(text("SELECT state, ended_at FROM experiments WHERE id = :i"),
                                   {"i": exp_id}).one()
            if row.ended_at is not None:
                return str(row.state)
            time.sleep(1)
    finally:
        engine.dispose()
    log(f"experiment {exp_id} did not end in time; reporting what happened until then")
    return "TIMEOUT"


def queue_figures(db_url: str, exp_id: int) -> dict[str, Any]:
    """Queue waits from the trials' state history; job counts; final states."""
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            changes = conn.execute(text(
                "SELECT s.entity_id, s.to_state, s.at FROM state_changes s JOIN trials t "
                "ON t.id = s.entity_id WHERE s.entity_kind = 'trial' AND t.experiment_id = :e "
                "ORDER BY s.id"), {"e": exp_id}).all()
            states = conn.execute(text("SELECT state, count(*) FROM trials WHERE "
                                       "experiment_id = :e GROUP BY state"), {"e": exp_id}).all()
            jobs = conn.execute(text("SELECT count(*) FROM jobs j JOIN trials t ON t.id = "
                                     "j.trial_id WHERE t.experiment_id = :e"),
                                {"e": exp_id}).scalar_one()
            allocations = conn.execute(text("SELECT count(*) FROM allocations WHERE "
                                            "experiment_id = :e"), {"e": exp_id}).scalar_one()
    finally:
        engine.dispose()
    waits = queue_waits(changes)
    return {"trials": sum(n for _, n in states), "final_states": dict(states),
            "queue_wait_total_s": round(sum(waits), 1),
            "queue_wait_median_s": round(statistics.median(waits), 2) if waits else 0.0,
            "queue_wait_max_s": round(max(waits), 1) if waits else 0.0,
            "batch_jobs": int(jobs) + int(allocations), "allocations": int(allocations)}


def queue_waits(changes: Sequence[Any]) -> list[float]:
    """Seconds of every QUEUED -> RUNNING interval, per trial, in history order."""
    queued_at: dict[int, Any] = {}
    waits: list[float] = []
    for trial_id, state, at in changes:
        moment = _as_datetime(at)
        if state == "QUEUED":
            queued_at[trial_id] = moment
        elif state == "RUNNING" and trial_id in queued_at:
            waits.append((moment - queued_at.pop(trial_id)).total_seconds())
    return waits


def _as_datetime(value: Any) -> Any:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def render_table(result: dict[str, Any]) -> str:
    rows = result["runs"]
    head = ("mode", "experiment", "trials", "wall s", "queue wait s (sum)", "median", "max",
            "batch jobs", "final states")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for r in rows:
        states = ", ".join(f"{k} {v}" for k, v in sorted(r["final_states"].items()))
        lines.append(" | ".join(str(v) for v in (
            r["mode"], r["experiment_state"], r["trials"], r["wall_seconds"],
            r["queue_wait_total_s"], r["queue_wait_median_s"], r["queue_wait_max_s"],
            r["batch_jobs"], states)))
    return "\n".join(lines)


def reproduce_command(args: argparse.Namespace) -> str:
    return reproduce_with("bench/allocation.py", args, parse_args([]))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--trials", type=int, default=64, help="ASHA's max_trials (64)")
    add("--slots", type=int, default=4,
        help="the allocation's slots, and max_concurrent_trials in both modes (4)")
    add("--max-time", type=int, default=4, help="epochs of a trial never stopped (4)")
    add("--pace", type=float, default=1.0, help="seconds per epoch (1.0)")
    add("--walltime", default="00:30:00", help="the allocation's walltime (00:30:00)")
    add("--modes", default=",".join(MODES), help="comma-separated: jobs, allocation (both)")
    add("--competing", type=int, default=0,
        help="other jobs kept pending in the queue meanwhile (0: an idle cluster)")
    add("--competing-seconds", type=float, default=10,
        help="how long each competing job runs (10)")
    add("--timeout", type=float, default=900, help="seconds a search may take (900)")
    add("--keep", action="store_true", help="keep the work directory")
    add("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    if not modes or any(m not in MODES for m in modes) or min(args.trials, args.slots,
                                                               args.max_time) < 1:
        parser.error(f"--modes from {MODES}; --trials, --slots, --max-time >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    log(f"# reproduce: {reproduce_command(args)}")
    if not os.environ.get("SLURM_CONF"):
        raise SystemExit('bench/allocation.py needs the dev cluster: '
                         'eval "$(scripts/dev-cluster env)"')
    workdir = Path(tempfile.mkdtemp(prefix="hpcdet-bench-allocation-"))
    with terminate_as_interrupt():
        try:
            runs = [run_mode(args, workdir, mode) for mode in args.modes.split(",")]
        finally:
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
    result = {"command": reproduce_command(args), "host": os.uname().nodename,
              "cpus": os.cpu_count(), "runs": runs}
    print(json.dumps(result, indent=2, default=str) if args.json else render_table(result))
    return 0 if all(set(r["final_states"]) == {"COMPLETED"} and r["experiment_state"] ==
                    "COMPLETED" for r in runs) else 1


if __name__ == "__main__":
    run_script(main)
