"""What one Prometheus scrape of ``GET /metrics`` costs the master, by database size.

What is measured
    A temporary SQLite database at the newest schema gets E experiments (default 10,000),
    T trials per experiment (default 10) and one job per trial; one trial in A (default
    100) is RUNNING with an active job, the others COMPLETED with ended jobs (a site with a
    long history and a few hundred live trials). The master's Flask app is built on it and
    R (default 30) ``GET /metrics`` are issued with Flask's test client: latency (median,
    max) and the answer's size. The database gauges are the part that grows with the data
    (five GROUP BY queries); the counters are a constant cost.

How to reproduce
    .venv/bin/python bench/metrics_scrape.py                    # human line
    .venv/bin/python bench/metrics_scrape.py --active-every 3   # a third of the jobs active
    .venv/bin/python bench/metrics_scrape.py --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # its sibling modules, also when loaded by path

from _common import log, run_script  # noqa: E402
from sqlalchemy import Engine, insert  # noqa: E402

from hpcdet.dispatcher.slurm.backend import SlurmBackend  # noqa: E402
from hpcdet.master.app import create_app  # noqa: E402
from hpcdet.master.db import make_engine, migrate  # noqa: E402
from hpcdet.master.models import Experiment, Job, Trial, utcnow  # noqa: E402
from hpcdet.master.settings.core import MasterSettings  # noqa: E402

POOLS = ("batch", None, "gpu")


def fill(engine: Engine, experiments: int, per: int, active_every: int) -> None:
    """The rows: experiments over three pools, their trials and jobs."""
    now = utcnow()
    live = [t % active_every == 1 for t in range(experiments * per)]
    with engine.begin() as conn:
        conn.execute(insert(Experiment), [
            {"id": i + 1, "name": "e", "owner": "u", "config": {}, "original_config": "",
             "context": b"", "searcher_name": "single", "state": "COMPLETED",
             "resource_pool": POOLS[i % 3]} for i in range(experiments)])
        conn.execute(insert(Trial), [
            {"id": t + 1, "experiment_id": t // per + 1, "hparams": {}, "seed": 0,
             "token": "x", "state": "RUNNING" if up else "COMPLETED"}
            for t, up in enumerate(live)])
        conn.execute(insert(Job), [
            {"trial_id": t + 1, "run_id": 1, "name": "j", "job_id": str(t), "active": up,
             "phase": "RUNNING" if up else "COMPLETED", "submitted_at": now}
            for t, up in enumerate(live)])


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Build the database and the app; time the scrapes."""
    directory = Path(tempfile.mkdtemp(prefix="hpcdet-bench-scrape-"))
    url = f"sqlite:///{directory / 'master.sqlite'}"
    migrate(url)
    log(f"filling {args.experiments} experiments x {args.trials} trials")
    fill(make_engine(url), args.experiments, args.trials, args.active_every)
    app = create_app(MasterSettings(db_url=url, state_dir=str(directory)),
                     backend=SlurmBackend())
    client = app.test_client()
    seconds, size = [], 0
    for _ in range(args.requests):
        started = time.perf_counter()
        answer = client.get("/metrics")
        seconds.append(time.perf_counter() - started)
        assert answer.status_code == 200, answer.get_data(as_text=True)
        size = len(answer.data)
    return {"experiments": args.experiments, "trials": args.experiments * args.trials,
            "active_jobs": sum(1 for t in range(args.experiments * args.trials)
                               if t % args.active_every == 1),
            "median_ms": round(statistics.median(seconds) * 1000, 1),
            "max_ms": round(max(seconds) * 1000, 1), "bytes": size}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=10, help="trials per experiment")
    parser.add_argument("--active-every", type=int, default=100,
                        help="one trial in this many is RUNNING with an active job")
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    result = measure(args)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['trials']} trials ({result['active_jobs']} active jobs) in "
              f"{result['experiments']} experiments: GET /metrics median "
              f"{result['median_ms']} ms, max {result['max_ms']} ms, {result['bytes']} bytes")
    return 0


if __name__ == "__main__":
    run_script(main)
