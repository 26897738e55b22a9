"""What the master's view of the cluster (pools, job queue) costs Slurm: per refresh, per request.

What is measured
    Against the real dev cluster, with N (default 1,000) *held* jobs in the queue:

    1. **refresh**: one refresh of the cluster view, as the reconciler's ``ClusterView`` does
       every ``pool_refresh_seconds``: ``read_pools(backend, settings)`` (one ``sinfo`` + one
       ``squeue``) and ``read_queue_snapshot(backend, settings)`` (one ``squeue``), on a
       ``SlurmBackend`` whose :class:`~hpcdet.dispatcher.commands.CommandRunner` counts the
       commands (target: 3 per refresh). Wall time over K (default 10) refreshes (median,
       min, max), and the queue entries seen: every one of the N held jobs must be among them
       (other users' jobs may be too).
    2. **serving**: the last refresh's snapshots are stored (``store_snapshot``) in a
       temporary SQLite database, the master's Flask app is built on it with that backend,
       and R (default 200) ``GET /api/v1/jobs`` and R ``GET /api/v1/resource-pools`` are
       issued with Flask's test client: latency (median, p99, max), and the Slurm commands
       (the backend's counting runner) and child processes (any ``subprocess.Popen``) started
       during them, which must be 0. The first response of each is checked (all N held jobs
       listed; the default pool counts at least N pending jobs).
    3. **naive**: the same R requests answered from Slurm every time: per ``/jobs`` request one
       ``squeue`` (``read_queue``'s format) and the same rows built from it (``job_rows``); per
       ``/resource-pools`` request ``read_pools`` (``sinfo`` + ``squeue``). Called directly,
       without Flask or JSON encoding, so the naive times are a lower bound.
       ``--naive-sample S`` runs S of the R requests and scales up (labelled as such).

    Setup commands (``sbatch``, ``scancel``) are not counted.

How to reproduce
    scripts/dev-cluster up && eval "$(scripts/dev-cluster env)"
    .venv/bin/python bench/cluster_view.py             # human table
    .venv/bin/python bench/cluster_view.py --json      # one JSON object on stdout

The held jobs (``--job-name=hpcdet-bench-view``) are cancelled at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # its sibling modules, also when loaded by path

from _common import log, run_script, terminate_as_interrupt  # noqa: E402
from flask import Flask  # noqa: E402
from poll import check_cluster, ensure_slurm_conf  # noqa: E402

from hpcdet.dispatcher.commands import CommandRunner  # noqa: E402
from hpcdet.dispatcher.slurm.backend import SlurmBackend  # noqa: E402
from hpcdet.master.app import create_app  # noqa: E402
from hpcdet.master.db import migrate, session_scope  # noqa: E402
from hpcdet.master.queue.job_queue import job_rows, read_fresh_queue, read_queue_snapshot  # noqa: E402
from hpcdet.master.queue.pools import read_pools  # noqa: E402
from hpcdet.master.queue.snapshots import POOLS, QUEUE, store_snapshot  # noqa: E402
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings  # noqa: E402

JOB_NAME = "hpcdet-bench-view"
TARGET_REFRESH_COMMANDS = 3  # sinfo + squeue (pools), squeue (queue)
JOBS_PATH = "/api/v1/jobs"
POOLS_PATH = "/api/v1/resource-pools"


# ---- results -----------------------------------------------------------------------------


def timing(walls: Sequence[float]) -> dict[str, float]:
    """Median, nearest-rank p99, min, max and total of ``walls`` (seconds)."""
    ordered = sorted(walls)
    p99 = ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]
    return {"median_s": statistics.median(ordered), "p99_s": p99, "min_s": ordered[0],
            "max_s": ordered[-1], "total_s": sum(ordered)}


@dataclass
class RefreshStats:
    """K refreshes of both snapshots on one counting backend."""

    refreshes: int
    commands_per_refresh: list[int]
    commands_used: list[str]
    wall_s: list[float]
    pools_s: list[float]
    queue_s: list[float]
    entries_seen: int
    held_seen: int
    held_total: int
    default_pool_pending: int

    @property
    def target_met(self) -> bool:
        return (max(self.commands_per_refresh) <= TARGET_REFRESH_COMMANDS
                and self.held_seen == self.held_total
                and self.default_pool_pending >= self.held_total)

    def summary(self) -> dict[str, Any]:
        return {**asdict(self), "wall": timing(self.wall_s), "pools": timing(self.pools_s),
                "queue": timing(self.queue_s), "target_met": self.target_met}


@dataclass
class ServeStats:
    """R requests to one endpoint, answered from the stored snapshot."""

    path: str
    requests: int
    wall_s: list[float]
    slurm_commands: int
    processes: int
    rows: int
    check_detail: str

    @property
    def target_met(self) -> bool:
        return self.slurm_commands == 0 and self.processes == 0 and not self.check_detail

    def summary(self) -> dict[str, Any]:
        return {**asdict(self), "wall": timing(self.wall_s), "target_met": self.target_met}


@dataclass
class NaiveStats:
    """The same requests answered from Slurm each time (over all of them or a sample)."""

    path: str
    requests: int
    sampled: int
    commands: int
    processes: int  # child processes seen, a check of the count of commands
    wall_s: list[float]

    @property
    def commands_for_all(self) -> int:
        return round(self.commands * self.requests / self.sampled)

    def summary(self) -> dict[str, Any]:
        wall = timing(self.wall_s)
        return {**asdict(self), "wall": wall, "scaled": self.sampled < self.requests,
                "commands_for_all": self.commands_for_all,
                "total_for_all_s": wall["total_s"] * self.requests / self.sampled}


# ---- cluster setup -----------------------------------------------------------------------


def submit_held(setup: CommandRunner, count: int) -> list[str]:
    """Submit ``count`` held trivial jobs, one ``sbatch`` each; progress every 100."""
    argv = ["sbatch", "--parsable", "--hold", f"--job-name={JOB_NAME}", "--output=/dev/null",
            "--wrap", "true"]
    ids: list[str] = []
    started = time.perf_counter()
    for i in range(1, count + 1):
        ids.append(setup(argv).strip().split(";", 1)[0])
        if i % 100 == 0 or i == count:
            log(f"  submitted {i}/{count} held jobs ({time.perf_counter() - started:.1f} s)")
    return ids


def our_jobs() -> list[str]:
    """Ids of the jobs still queued under this benchmark's job name."""
    out = subprocess.run(["squeue", "--noheader", f"--name={JOB_NAME}", "--format=%i"],
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.split()


def cancel_ours(attempts: int = 3) -> None:
    """Cancel every job of this benchmark (by its job name) and check none is left."""
    for attempt in range(1, attempts + 1):
        try:
            done = subprocess.run(["scancel", f"--name={JOB_NAME}"], capture_output=True,
                                  text=True, timeout=60, check=False)
            left = our_jobs()
        except (OSError, subprocess.SubprocessError) as exc:
            log(f"WARNING: cancelling failed ({exc})")
            break
        if not left:
            log(f"cancelled all jobs named {JOB_NAME}; none left in squeue")
            return
        log(f"{len(left)} {JOB_NAME} jobs still queued after scancel "
            f"(rc {done.returncode}: {done.stderr.strip()!r}); attempt {attempt}/{attempts}")
        time.sleep(1)
    log(f"WARNING: run `scancel --name={JOB_NAME}` by hand")


def make_settings(tmp: Path) -> MasterSettings:
    """Default master settings on a fresh, migrated SQLite database under ``tmp``."""
    db_url = f"sqlite:///{tmp / 'master.db'}"
    migrate(db_url)
    rm = replace(ResourceManagerSettings(), job_storage_root=str(tmp / "jobs"),
                 cluster_name="bench-view")
    return MasterSettings(db_url=db_url, resource_manager=rm, state_dir=str(tmp))


# ---- 1. refresh --------------------------------------------------------------------------


def measure_refresh(backend: SlurmBackend, runner: CommandRunner, settings: MasterSettings,
                    held: Sequence[str],
                    refreshes: int) -> tuple[RefreshStats, dict[str, Any], dict[str, Any]]:
    """``refreshes`` refreshes of both snapshots; returns the stats and the last snapshots."""
    counts: list[int] = []
    walls: list[float] = []
    parts: dict[str, list[float]] = {POOLS: [], QUEUE: []}
    used: list[str] = []
    data: dict[str, dict[str, Any]] = {}
    for _ in range(refreshes):
        before = runner.count
        for kind, reader in ((POOLS, read_pools), (QUEUE, read_queue_snapshot)):
            started = time.perf_counter()
            data[kind] = reader(backend, settings)
            parts[kind].append(time.perf_counter() - started)
        walls.append(parts[POOLS][-1] + parts[QUEUE][-1])
        counts.append(runner.count - before)
        used = [argv[0] for argv in list(runner.calls)[len(runner.calls) - counts[-1]:]]
    seen = {entry["job_id"] for entry in data[QUEUE]["jobs"]}
    stats = RefreshStats(refreshes, counts, used, walls, parts[POOLS], parts[QUEUE],
                         len(seen), len(seen.intersection(held)), len(held),
                         default_pool_pending(data[POOLS]))
    return stats, data[POOLS], data[QUEUE]


def default_pool_pending(pools: dict[str, Any]) -> int:
    """``jobs_pending`` of the default compute pool in a ``pools`` snapshot (-1: none)."""
    return next((p["jobs_pending"] for p in pools["pools"] if p["default_compute"]), -1)


# ---- 2. serving from the snapshot --------------------------------------------------------


@contextmanager
def counting_processes() -> Iterator[list[int]]:
    """Count every child process started (``subprocess.Popen``) inside the block."""
    started = [0]
    original = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def execute_child(self: Any, *args: Any, **kwargs: Any) -> Any:
        started[0] += 1
        return original(self, *args, **kwargs)

    setattr(subprocess.Popen, "_execute_child", execute_child)  # noqa: B010
    try:
        yield started
    finally:
        setattr(subprocess.Popen, "_execute_child", original)  # noqa: B010


def measure_serving(app: Flask, runner: CommandRunner, path: str, requests: int,
                    check: Callable[[dict[str, Any]], tuple[int, str]]) -> ServeStats:
    """``requests`` GETs of ``path``; the first response is checked by ``check``."""
    client = app.test_client()
    walls: list[float] = []
    rows, detail = 0, ""
    before = runner.count
    with counting_processes() as processes:
        for i in range(requests):
            started = time.perf_counter()
            response = client.get(path)
            walls.append(time.perf_counter() - started)
            if i == 0:
                rows, detail = check_response(response.status_code, response.get_json(), check)
    return ServeStats(path, requests, walls, runner.count - before, processes[0], rows, detail)


def check_response(status: int, body: Any,
                   check: Callable[[dict[str, Any]], tuple[int, str]]) -> tuple[int, str]:
    if status != 200 or not isinstance(body, dict):
        return 0, f"HTTP {status}: {str(body)[:200]}"
    return check(body)


def jobs_check(held: Sequence[str]) -> Callable[[dict[str, Any]], tuple[int, str]]:
    """Every held job must be a row of ``GET /jobs``."""
    def check(body: dict[str, Any]) -> tuple[int, str]:
        listed = {row["job_id"] for row in body["jobs"]}
        missing = [job_id for job_id in held if job_id not in listed]
        return len(body["jobs"]), f"{len(missing)} held jobs not listed" if missing else ""
    return check


def pools_check(held: Sequence[str]) -> Callable[[dict[str, Any]], tuple[int, str]]:
    """The default pool must count at least the held jobs as pending."""
    def check(body: dict[str, Any]) -> tuple[int, str]:
        pending = default_pool_pending({"pools": body["resource_pools"]})
        problem = f"default pool has {pending} pending jobs" if pending < len(held) else ""
        return len(body["resource_pools"]), problem
    return check


def build_app(settings: MasterSettings, backend: SlurmBackend, pools: dict[str, Any],
              queue: dict[str, Any]) -> Flask:
    """The master's app on ``settings``' database, with both snapshots stored."""
    app = create_app(settings, backend=backend)
    app.config["TESTING"] = True
    with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
        store_snapshot(session, POOLS, pools)
        store_snapshot(session, QUEUE, queue)
    return app


# ---- 3. naive: Slurm on every request ----------------------------------------------------


def measure_naive(path: str, answer: Callable[[], object], runner: CommandRunner,
                  requests: int, sample: int) -> NaiveStats:
    """``answer()`` (one request answered from Slurm) over all requests or ``sample``."""
    sampled = requests if sample <= 0 or sample >= requests else sample
    walls: list[float] = []
    before = runner.count
    with counting_processes() as processes:
        for _ in range(sampled):
            started = time.perf_counter()
            answer()
            walls.append(time.perf_counter() - started)
    return NaiveStats(path, requests, sampled, runner.count - before, processes[0], walls)


def naive_answers(app: Flask, backend: SlurmBackend,
                  settings: MasterSettings) -> dict[str, Callable[[], object]]:
    """What each endpoint would do if it read Slurm itself."""
    sessions = app.config["HPCDET_SESSION_FACTORY"]

    def jobs() -> object:
        entries = read_fresh_queue(backend)  # one squeue, read_queue's format
        with session_scope(sessions) as session:
            return job_rows(session, settings, entries)

    return {JOBS_PATH: jobs, POOLS_PATH: lambda: read_pools(backend, settings)}


# ---- the benchmark -----------------------------------------------------------------------


def run(args: argparse.Namespace, setup: CommandRunner, tmp: Path) -> dict[str, Any]:
    if our_jobs():
        log(f"cancelling leftover {JOB_NAME} jobs of an earlier run")
        cancel_ours()
    log(f"submitting {args.jobs} held jobs")
    held = submit_held(setup, args.jobs)
    settings = make_settings(tmp)
    runner = CommandRunner()
    backend = SlurmBackend(runner=runner)
    log(f"measuring {args.refreshes} refreshes of the cluster view")
    refresh, pools, queue = measure_refresh(backend, runner, settings, held, args.refreshes)
    app = build_app(settings, backend, pools, queue)
    try:
        serving, naive = measure_requests(args, app, backend, runner, settings, held)
    finally:
        app.config["HPCDET_ENGINE"].dispose()
    return report_dict(args, refresh, serving, naive)


def measure_requests(args: argparse.Namespace, app: Flask, backend: SlurmBackend,
                     runner: CommandRunner, settings: MasterSettings,
                     held: Sequence[str]) -> tuple[list[ServeStats], list[NaiveStats]]:
    checks = {JOBS_PATH: jobs_check(held), POOLS_PATH: pools_check(held)}
    serving = []
    for path, check in checks.items():
        log(f"serving {args.requests} GET {path} from the stored snapshot")
        serving.append(measure_serving(app, runner, path, args.requests, check))
    naive = []
    for path, answer in naive_answers(app, backend, settings).items():
        log(f"naive: answering GET {path} from Slurm, "
            f"{args.naive_sample or args.requests} times")
        naive.append(measure_naive(path, answer, runner, args.requests, args.naive_sample))
    return serving, naive


def report_dict(args: argparse.Namespace, refresh: RefreshStats, serving: list[ServeStats],
                naive: list[NaiveStats]) -> dict[str, Any]:
    comparison = [compare(s.summary(), n.summary()) for s, n in zip(serving, naive, strict=True)]
    return {
        "reproduce": reproduce_command(args),
        "slurm_conf": os.environ.get("SLURM_CONF"),
        "cpus": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "jobs": args.jobs,
        "refresh": refresh.summary(),
        "serving": [s.summary() for s in serving],
        "naive": [n.summary() for n in naive],
        "comparison": comparison,
        "target_met": refresh.target_met and all(s.target_met for s in serving),
    }


def compare(served: dict[str, Any], naive: dict[str, Any]) -> dict[str, Any]:
    """Naive vs served, per endpoint: commands for R requests and median latency."""
    return {"path": served["path"], "requests": served["requests"],
            "naive_commands": naive["commands_for_all"],
            "served_commands": served["slurm_commands"],
            "naive_median_s": naive["wall"]["median_s"],
            "served_median_s": served["wall"]["median_s"],
            "ratio_median": naive["wall"]["median_s"] / served["wall"]["median_s"]}


def reproduce_command(args: argparse.Namespace) -> str:
    conf = os.environ.get("SLURM_CONF", "")
    flags = [f"--jobs={args.jobs}", f"--refreshes={args.refreshes}",
             f"--requests={args.requests}", f"--naive-sample={args.naive_sample}"]
    flags += ["--json"] if args.json else []
    return (f"cd {shlex.quote(str(REPO))} && SLURM_CONF={shlex.quote(conf)} "
            f".venv/bin/python bench/cluster_view.py {' '.join(flags)}")


# ---- output ------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def render_table(result: dict[str, Any]) -> str:
    return "\n".join([f"# reproduce: {result['reproduce']}", "", *refresh_lines(result), "",
                      *serving_lines(result), "", *naive_lines(result), "",
                      f"Verdict: {'target met' if result['target_met'] else 'TARGET MISSED'} "
                      f"(<= {TARGET_REFRESH_COMMANDS} commands per refresh, all held jobs "
                      "seen, 0 commands and 0 processes while serving)"])


def refresh_lines(result: dict[str, Any]) -> list[str]:
    r = result["refresh"]
    header = (f"{'cmds/refresh':>12} {'commands':<19} {'median ms':>9} {'min ms':>7} "
              f"{'max ms':>7} {'pools ms':>8} {'queue ms':>8} {'entries':>7} "
              f"{'held seen':>10} {'pending':>7}  target")
    return [f"Cluster view refresh: read_pools + read_queue_snapshot, {result['jobs']} held "
            f"jobs, {r['refreshes']} refreshes (target: {TARGET_REFRESH_COMMANDS} commands)",
            header, "-" * len(header),
            f"{max(r['commands_per_refresh']):>12} {'+'.join(r['commands_used']):<19} "
            f"{ms(r['wall']['median_s']):>9} {ms(r['wall']['min_s']):>7} "
            f"{ms(r['wall']['max_s']):>7} {ms(r['pools']['median_s']):>8} "
            f"{ms(r['queue']['median_s']):>8} {r['entries_seen']:>7} "
            f"{r['held_seen']:>4}/{r['held_total']:<5} {r['default_pool_pending']:>7}  "
            f"{'met' if r['target_met'] else 'MISSED'}"]


def serving_lines(result: dict[str, Any]) -> list[str]:
    header = (f"{'endpoint':<26} {'requests':>8} {'median ms':>9} {'p99 ms':>7} {'max ms':>7} "
              f"{'slurm cmds':>10} {'processes':>9} {'rows':>5}  target")
    lines = ["Served from the stored snapshots (Flask test client, SQLite; target: 0 commands)",
             header, "-" * len(header)]
    for s in result["serving"]:
        lines.append(f"{'GET ' + s['path']:<26} {s['requests']:>8} {ms(s['wall']['median_s']):>9} "
                     f"{ms(s['wall']['p99_s']):>7} {ms(s['wall']['max_s']):>7} "
                     f"{s['slurm_commands']:>10} {s['processes']:>9} {s['rows']:>5}  "
                     f"{'met' if s['target_met'] else 'MISSED'}")
        if s["check_detail"]:
            lines.append(f"    check: {s['check_detail']}")
    return lines


def naive_lines(result: dict[str, Any]) -> list[str]:
    header = (f"{'endpoint':<26} {'commands':>8} {'median ms':>9} {'p99 ms':>7} "
              f"{'total s':>8}  {'served cmds':>11} {'served median ms':>16} {'ratio':>6}")
    lines = ["Naive alternative: read Slurm on every request (direct calls, no Flask: a lower "
             "bound)", header, "-" * len(header)]
    for n, c in zip(result["naive"], result["comparison"], strict=True):
        how = (f"  (measured {n['sampled']} of {n['requests']}, scaled up)"
               if n["scaled"] else "")
        lines.append(f"{'GET ' + n['path']:<26} {n['commands_for_all']:>8} "
                     f"{ms(n['wall']['median_s']):>9} {ms(n['wall']['p99_s']):>7} "
                     f"{n['total_for_all_s']:>8.2f}  {c['served_commands']:>11} "
                     f"{ms(c['served_median_s']):>16} {c['ratio_median']:>5.1f}x{how}")
    lines.append(f"(the snapshot costs {TARGET_REFRESH_COMMANDS} commands per refresh, every "
                 "pool_refresh_seconds, however many requests are served)")
    return lines


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=1000, help="held jobs to submit (1000)")
    parser.add_argument("--refreshes", type=int, default=10, help="refreshes to time (10)")
    parser.add_argument("--requests", type=int, default=200,
                        help="requests per endpoint, served and naive (200)")
    parser.add_argument("--naive-sample", type=int, default=0,
                        help="run the naive way for this many of the requests (0: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.refreshes < 1 or args.requests < 1 or args.naive_sample < 0:
        parser.error("--jobs, --refreshes and --requests must be >= 1, --naive-sample >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    ensure_slurm_conf()
    log(f"# reproduce: {reproduce_command(args)}")
    setup = CommandRunner()
    check_cluster(setup)  # before anything is submitted: nothing to clean up if it fails
    with terminate_as_interrupt(), tempfile.TemporaryDirectory(prefix="hpcdet-bench-view-") as tmp:
        try:
            result = run(args, setup, Path(tmp))
        finally:
            cancel_ours()
    print(json.dumps(result, indent=2) if args.json else render_table(result))
    return 0 if result["target_met"] else 1


if __name__ == "__main__":
    run_script(main)
