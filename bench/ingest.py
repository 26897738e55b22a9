"""Metric rows per second the master stores in PostgreSQL while many trials report at once.

What is measured
    A real ``det-master`` (gunicorn's uvicorn workers, ``--workers``; ``--threads`` per
    worker for the Flask views) on a fresh PostgreSQL database, and 64 reporter threads
    (``--trials``) in this process or spread over ``--client-processes``, one per trial,
    each with its own keep-alive ``http.client`` connection, POSTing back to back to
    ``/api/v1/trials/<id>/metrics`` (Bearer = the trial's token) a batch of ``--batch-steps``
    steps x ``--metrics`` metrics (default 10 x 5 = 50 rows per request), with increasing
    ``steps_completed`` per trial. After a warm-up (``--warmup``, excluded) the load runs for
    ``--seconds``; requests are assigned to warm-up / window / drain by their completion time.

    Reported: rows/s stored during the window (50 x successful window requests / window
    seconds; cross-checked against the rows whose server-side ``reported_at`` falls in the
    window), requests/s, p50/p90/p99/max request latency, errors (non-2xx, exceptions, and any
    difference between the rows in the database and 50 x all successful requests), and where
    the two cores went during the window (this client, the gunicorn workers, the PostgreSQL
    backends of the bench database, the rest of the host), and how many client connections
    each gunicorn worker holds (keep-alive connections stay with the worker that accepted them).

    Targets (2-core machine): >= 30,000 rows/s (paced: >= 98 % of the offered rate), zero
    errors, p99 < 100 ms; a scenario sets its own p99 target.

    Note that in this closed loop (no pause between requests) latency and throughput are tied
    by Little's law: mean latency = 64 / (requests/s), so p99 < 100 ms needs > 640 requests/s
    (32,000 rows/s) whatever else is true. ``--rate ROWS_PER_S`` paces the reporters instead
    (open loop, like trials that train between reports) and takes each request's latency from
    the moment it was due, so a master that falls behind shows it.

Scenarios
    ``--scenario headroom`` (issue 20) runs, one after the other, each on a fresh database
    and master, 64 trials at 30,000 rows/s paced (target p99 < 50 ms) and 256 trials at
    30,000 rows/s paced (target 0 errors), both with the harness's bodies (``--streams``:
    stream, seq, resumed_from), and prints them side by side. Either target also needs the
    offered rows stored (>= 98 %) and no error. ``--baseline-tree DIR`` runs each load
    against DIR's master too, right after this tree's: before and after on the same host in
    one run. The master runs with ``PYTHONPATH`` = its tree (``--extra-pythonpath`` adds
    packages of this tree's extras that ``.venv`` lacks).

How to reproduce
    .venv/bin/python bench/ingest.py            # human table; --json for one JSON object
    .venv/bin/python bench/ingest.py --scenario headroom --client-processes 2
    .venv/bin/python bench/ingest.py --rate 10000          # paced: 10,000 rows/s offered
    .venv/bin/python bench/ingest.py --py-spy /tmp/prof    # + py-spy profile of each worker

It needs PostgreSQL on 127.0.0.1:5432 (``scripts/ensure-postgres``), creates the database
``hpcdet_bench_<random>`` (or uses ``--db-url``), and stops the master and drops the database
at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import math
import multiprocessing
import multiprocessing.connection
import os
import random
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from _common import bench_main, log, reproduce_with, run_script  # noqa: E402
from _ingest_cpu import (  # noqa: E402
    connections_per_worker,
    cpu_breakdown,
    cpu_snapshot,
    descendants,
    postgres_pids,
    role_of,
)
from _ingest_profile import breakdown  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from hpcdet.master.db import migrate  # noqa: E402

ADMIN_URL = "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
TARGET_ROWS_PER_S = 30_000
TARGET_P99_MS = 100.0
# The paced target keeps up when it stores this share of the offered rows in the window.
KEEPS_UP = 0.98
STREAM = ('"stream":{"run_id":1,"requeue":0,"rank":0},'
          '"resumed_from":{"uuid":null,"steps_completed":0}')


@dataclass(frozen=True)
class Case:
    """One measured load of a scenario, and what it must meet (None: not a target here)."""

    label: str
    trials: int
    rate: float
    p99_ms: float | None
    errors: bool = True


# Issue 20: the paced target with headroom. Both use the harness's bodies (--streams).
SCENARIOS: dict[str, tuple[Case, ...]] = {
    "headroom": (Case("64 trials @ 30k rows/s", 64, 30_000, 50.0),
                 Case("256 trials @ 30k rows/s", 256, 30_000, None)),
}



from _ingest_setup import (  # noqa: E402
    BenchDb,
    backend_pids,
    create_database,
    drop_database,
    free_port,
    seed_trials,
    start_master,
    stop_master,
    stored_rows,
    wait_ready,
    write_master_yaml,
)
from _ingest_table import render_table  # noqa: E402

# ---- CPU accounting ----------------------------------------------------------------------

def cpu_groups(master_pid: int, db_url: str) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {"gunicorn workers": [], "gunicorn arbiter": [],
                                    "reconciler": []}
    for pid in descendants(master_pid):
        groups.setdefault(role_of(pid, master_pid), []).append(pid)
    backends = backend_pids(db_url)
    groups["postgres backends (bench db)"] = backends
    groups["postgres, other processes (wal writer, other dbs)"] = [
        pid for pid in postgres_pids() if pid not in backends]
    return groups


# ---- load --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    start: float  # perf_counter (CLOCK_MONOTONIC: the same in the client processes)
    warmup_end: float
    end: float
    interval: float = 0.0  # seconds between one reporter's requests; 0: back to back


@dataclass
class Reporter:
    """One trial's reporting loop; results are (completed_at, latency_s, ok, last_step)."""

    trial_id: int
    token: str
    port: int
    steps_per_batch: int
    metric_names: Sequence[str]
    streams: bool = False  # the harness's bodies: stream, seq (= step - 1), resumed_from
    results: list[tuple[float, float, bool, int]] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    unsent: int = 0  # paced: requests that fell due but could not be sent before the end

    def __post_init__(self) -> None:
        rnd = random.Random(self.trial_id)
        values = ",".join(f'"{n}":{rnd.random():.6f}' for n in self.metric_names)
        # Pre-serialised: only the step number changes from one report to the next.
        self._report = '{"steps_completed":%d,"metrics":{' + values + "}}"
        self._path = f"/api/v1/trials/{self.trial_id}/metrics"
        self._headers = {"Content-Type": "application/json",
                         "Authorization": f"Bearer {self.token}"}

    def body(self, first_step: int) -> bytes:
        reports = ",".join(self._report % (first_step + i) for i in range(self.steps_per_batch))
        head = '{"group":"training",'
        if self.streams:
            head += f'"seq":{first_step - 1},{STREAM},'
        return (head + '"reports":[' + reports + "]}").encode()

    def run(self, plan: Plan, stop: threading.Event) -> None:
        """Report until the window ends: back to back, or every ``plan.interval`` seconds."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        with contextlib.suppress(OSError):  # connect before the clock starts; else on use
            conn.connect()
        step = 1
        # Paced reporters start spread over one interval so that they do not send in bursts.
        due = plan.start + random.Random(self.trial_id).random() * plan.interval
        _sleep_until(due)
        while not stop.is_set() and time.perf_counter() < plan.end and due < plan.end:
            started = self._start_time(due, plan)
            ok, conn = self._post(conn, self.body(step))
            done = time.perf_counter()
            step += self.steps_per_batch
            self.results.append((done, done - started, ok, step - 1))
            due += plan.interval
        if plan.interval and due < plan.end:  # the master fell behind the offered rate
            self.unsent = math.ceil((plan.end - due) / plan.interval)
        conn.close()

    @staticmethod
    def _start_time(due: float, plan: Plan) -> float:
        """Now, or (paced) the moment the request was due: latency then includes any lag."""
        if not plan.interval:
            return time.perf_counter()
        _sleep_until(due)
        return due

    def _post(self, conn: http.client.HTTPConnection,
              body: bytes) -> tuple[bool, http.client.HTTPConnection]:
        try:
            conn.request("POST", self._path, body, self._headers)
            response = conn.getresponse()
            response.read()
            if 200 <= response.status < 300:
                return True, conn
            self.exceptions.append(f"HTTP {response.status}")
            return False, conn
        except (OSError, http.client.HTTPException) as exc:
            self.exceptions.append(f"{type(exc).__name__}: {exc}")
            conn.close()
            return False, http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)


@dataclass
class LoadResult:
    reporters: list[Reporter]
    plan: Plan
    wall_window: tuple[float, float]  # epoch seconds of warm-up end and window end
    cpu_cores: dict[str, float]
    connections: dict[int, int]  # worker pid -> established client connections


class ClientProcesses:
    """The reporters spread over ``count`` forked processes, one thread per reporter in each
    (one Python process's GIL serialises 256 reporters' sends: their latency would be the
    client's). ``count`` 1 runs them as threads of this process."""

    def __init__(self, reporters: list[Reporter], count: int) -> None:
        self.reporters, self.count = reporters, count
        self._children: list[tuple[multiprocessing.process.BaseProcess,
                                   multiprocessing.connection.Connection, list[Reporter]]] = []
        self._threads: list[threading.Thread] = []

    def start(self, plan: Plan, stop: threading.Event) -> None:
        if self.count == 1:
            self._threads = [threading.Thread(target=r.run, args=(plan, stop), daemon=True)
                             for r in self.reporters]
            for thread in self._threads:
                thread.start()
            return
        fork = multiprocessing.get_context("fork")
        for i in range(self.count):
            share = self.reporters[i::self.count]
            mine, theirs = fork.Pipe(duplex=False)
            child = fork.Process(target=_client_main, args=(share, plan, theirs), daemon=True)
            child.start()
            theirs.close()
            self._children.append((child, mine, share))

    def pids(self) -> list[int]:
        return [child.pid for child, _, _ in self._children if child.pid is not None]

    def join(self) -> None:
        for thread in self._threads:
            thread.join(120)
        for child, results, share in self._children:
            if results.poll(120):
                for reporter, (done, errors, unsent) in zip(share, results.recv(), strict=True):
                    reporter.results, reporter.exceptions, reporter.unsent = done, errors, unsent
            child.join(10)
            if child.is_alive():
                child.kill()


def _client_main(reporters: list[Reporter], plan: Plan,
                 out: multiprocessing.connection.Connection) -> None:
    stop = threading.Event()
    threads = [threading.Thread(target=r.run, args=(plan, stop), daemon=True) for r in reporters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    out.send([(r.results, r.exceptions, r.unsent) for r in reporters])
    out.close()


def run_load(trials: list[tuple[int, str]], port: int, args: argparse.Namespace,
             master_pid: int, db_url: str) -> LoadResult:
    names = [f"metric_{i}" for i in range(args.metrics)]
    reporters = [Reporter(tid, token, port, args.batch_steps, names, args.streams)
                 for tid, token in trials]
    start = time.perf_counter() + 0.5 + 0.1 * args.client_processes  # threads start, connect
    rows_per_request = args.batch_steps * args.metrics
    interval = len(reporters) * rows_per_request / args.rate if args.rate else 0.0
    plan = Plan(start, start + args.warmup, start + args.warmup + args.seconds, interval)
    stop = threading.Event()
    clients = ClientProcesses(reporters, args.client_processes)
    profilers: list[subprocess.Popen[bytes]] = []
    try:
        clients.start(plan, stop)
        _sleep_until(plan.warmup_end)
        groups = cpu_groups(master_pid, db_url)
        groups["bench client processes"] = clients.pids()
        profilers = start_profilers(args.py_spy, groups["gunicorn workers"], args.seconds)
        connections = connections_per_worker(port, groups["gunicorn workers"])
        wall_start, cpu_start = time.time(), cpu_snapshot(groups)
        _sleep_until(plan.end)
        wall_end, cpu_end = time.time(), cpu_snapshot(groups)
        clients.join()
    finally:
        stop.set()
    for profiler in profilers:
        profiler.wait(60)
    return LoadResult(reporters, plan, (wall_start, wall_end),
                      cpu_breakdown(cpu_start, cpu_end, wall_end - wall_start), connections)


def start_profilers(out_dir: str | None, pids: Sequence[int],
                    seconds: float) -> list[subprocess.Popen[bytes]]:
    """``py-spy record`` each gunicorn worker for the window (folded stacks, one file each)."""
    if not out_dir:
        return []
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    py_spy = REPO / ".venv" / "bin" / "py-spy"
    # --gil: sample only the thread holding the GIL, i.e. where the worker's CPU goes.
    return [subprocess.Popen([str(py_spy), "record", "--pid", str(pid), "--rate", "100", "--gil",
                              "--duration", str(max(1, int(seconds))), "--nonblocking",
                              "--format", "raw", "--output", f"{out_dir}/worker-{pid}.folded"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for pid in pids]


def _sleep_until(moment: float) -> None:
    while (left := moment - time.perf_counter()) > 0:
        time.sleep(min(left, 0.5))


# ---- analysis ----------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (0 for an empty one)."""
    if not sorted_values:
        return 0.0
    rank = max(1, round(q / 100 * len(sorted_values) + 0.4999999))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def by_phase(reporters: Sequence[Reporter], plan: Plan) -> tuple[dict[str, int], list[float],
                                                                 int]:
    """Successful requests per phase (by completion time), sorted window latencies, failures."""
    phase_ok = {"warmup": 0, "window": 0, "drain": 0}
    window_latency: list[float] = []
    failed = 0
    for reporter in reporters:
        for done, latency, ok, _ in reporter.results:
            phase = "warmup" if done < plan.warmup_end else "window" if done < plan.end else "drain"
            phase_ok[phase] += ok
            failed += not ok
            if phase == "window":
                window_latency.append(latency)
    return phase_ok, sorted(window_latency), failed


def analyse(load: LoadResult, stored: dict[str, Any], args: argparse.Namespace,
            case: Case) -> dict[str, Any]:
    rows_per_request = args.batch_steps * args.metrics
    plan, wall = load.plan, load.wall_window
    phase_ok, window_latency, errors_http = by_phase(load.reporters, plan)
    ok_total = sum(phase_ok.values())
    expected_rows = rows_per_request * ok_total
    db_mismatch = stored["total"] - expected_rows
    steps_wrong = _steps_mismatches(load.reporters, stored["steps"])
    errors = errors_http + (db_mismatch != 0) + steps_wrong
    window_s = plan.end - plan.warmup_end
    rows_per_s = rows_per_request * phase_ok["window"] / window_s
    p99_ms = percentile(window_latency, 99) * 1e3
    return {
        "rows_per_request": rows_per_request,
        "window_s": window_s,
        "requests_ok": phase_ok,
        "requests_in_window": len(window_latency),
        "requests_due_but_unsent": sum(r.unsent for r in load.reporters),
        "rows_per_s": rows_per_s,
        "rows_per_s_server_clock": stored["in_window"] / (wall[1] - wall[0]),
        "requests_per_s": len(window_latency) / window_s,
        "latency_ms": {f"p{q}": percentile(window_latency, q) * 1e3 for q in (50, 90, 99)}
        | {"max": (window_latency[-1] * 1e3) if window_latency else 0.0},
        "errors": errors,
        "errors_detail": {"http_or_exception": errors_http, "db_rows": stored["total"],
                          "db_rows_expected": expected_rows, "db_row_difference": db_mismatch,
                          "trials_with_wrong_steps_completed": steps_wrong,
                          "first_exceptions": _first_exceptions(load.reporters)},
        "cpu_cores": load.cpu_cores,
        # CPU time each role spent per request answered in the window: robust to other load.
        "cpu_ms_per_request": {role: cores * 1e3 * window_s / max(1, len(window_latency))
                               for role, cores in load.cpu_cores.items()},
        "connections_per_worker": sorted(load.connections.values(), reverse=True),
        "targets": _targets(case, rows_per_s, p99_ms, errors),
    }


def rows_target(case: Case) -> float:
    """Paced: the offered rate (less the window's edges); back to back: 30,000 rows/s."""
    return case.rate * KEEPS_UP if case.rate else TARGET_ROWS_PER_S


def _targets(case: Case, rows_per_s: float, p99_ms: float, errors: int) -> dict[str, bool]:
    met = {"rows_per_s": rows_per_s >= rows_target(case), "errors": errors == 0}
    if case.p99_ms is not None:
        met["p99_ms"] = p99_ms < case.p99_ms
    return met


def _steps_mismatches(reporters: Sequence[Reporter], stored: dict[int, int]) -> int:
    """Trials whose ``steps_completed`` is not the last step of their last successful batch."""
    wrong = 0
    for reporter in reporters:
        last = max((step for _, _, ok, step in reporter.results if ok), default=0)
        wrong += stored.get(reporter.trial_id) != last
    return wrong


def _first_exceptions(reporters: Sequence[Reporter]) -> list[str]:
    return [message for r in reporters for message in r.exceptions][:5]


def reproduce_command(args: argparse.Namespace) -> str:
    line = reproduce_with("bench/ingest.py", args, parse_args([]),
                          skip=("json", "extra_pythonpath", "streams" if args.scenario else ""))
    return " ".join([line, *(f"--extra-pythonpath {shlex.quote(d)}"
                             for d in args.extra_pythonpath)])


# ---- main --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tree:
    name: str  # "this tree" or "baseline"
    pythonpath: str  # for det-master


def run(args: argparse.Namespace) -> dict[str, Any]:
    cases = SCENARIOS[args.scenario] if args.scenario else (
        Case(f"{args.trials} trials", args.trials, args.rate, TARGET_P99_MS),)
    trees = [Tree("this tree", os.pathsep.join([str(REPO), *args.extra_pythonpath]))]
    if args.baseline_tree:
        trees.append(Tree("baseline", str(Path(args.baseline_tree).resolve())))
    runs = []
    for index, case in enumerate(cases):
        for tree in trees:
            log(f"== {case.label} [{tree.name}]")
            runs.append(run_case(args, case, tree, index))
    settings = {k: getattr(args, k) for k in ("batch_steps", "metrics", "seconds", "warmup",
                                              "workers", "threads", "streams",
                                              "client_processes")}
    return {"reproduce": reproduce_command(args), **settings,
            "rows_per_request": args.batch_steps * args.metrics, "runs": runs,
            "target_met": all(all(r["targets"].values()) for r in runs
                              if r["tree"] == "this tree")}


def run_case(args: argparse.Namespace, case: Case, tree: Tree, index: int) -> dict[str, Any]:
    """One load on a fresh database and master of ``tree``; its analysis."""
    run_args = argparse.Namespace(**{**vars(args), "trials": case.trials, "rate": case.rate})
    if args.py_spy:
        slug = "baseline" if tree.name == "baseline" else "this"
        run_args.py_spy = str(Path(args.py_spy) / f"{index}-{case.trials}-{slug}")
    with tempfile.TemporaryDirectory(prefix="hpcdet-bench-") as tmp:
        db = BenchDb(args.db_url, created=False) if args.db_url else create_database(
            args.admin_url)
        try:
            result = run_on(run_args, Path(tmp), db, case, tree)
        finally:
            drop_database(args.admin_url, db)
    if run_args.py_spy:
        result["profile"] = breakdown(run_args.py_spy)
    return result


def run_on(args: argparse.Namespace, workdir: Path, db: BenchDb, case: Case,
           tree: Tree) -> dict[str, Any]:
    log(f"migrating {make_url(db.url).render_as_string()}")
    migrate(db.url)
    trials = seed_trials(db.url, args.trials)
    port = free_port()
    log_path = workdir / "det-master.log"
    master = start_master(write_master_yaml(workdir, db.url, port, args), log_path,
                          tree.pythonpath)
    try:
        wait_ready(master, port, log_path)
        log(f"det-master up on 127.0.0.1:{port} (log {log_path}); load: {args.warmup:g} s "
            f"warm-up + {args.seconds:g} s")
        load = run_load(trials, port, args, master.pid, db.url)
    finally:
        stop_master(master)
    result = analyse(load, stored_rows(db.url, load.wall_window), args, case)
    return {"label": case.label, "tree": tree.name, "trials": case.trials, "rate": case.rate,
            "rows_target": rows_target(case), "p99_target_ms": case.p99_ms, **result}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--scenario", choices=sorted(SCENARIOS), default=None,
        help="run a named set of loads one after another (each on a fresh database and "
             "master) instead of --trials/--rate: headroom = 64 and 256 trials at 30,000 "
             "rows/s paced, with the harness's bodies (--streams)")
    add("--trials", type=int, default=64, help="concurrent reporters, one per trial (64)")
    add("--batch-steps", type=int, default=10, help="steps per request (10)")
    add("--metrics", type=int, default=5, help="metrics per step (5)")
    add("--seconds", type=float, default=20, help="measured window in seconds (20)")
    add("--warmup", type=float, default=3, help="warm-up seconds, excluded (3)")
    add("--rate", type=float, default=0, metavar="ROWS_PER_S",
        help="pace the reporters to offer this many rows/s in all (0: back to back, the "
             "default); latency is then taken from when each request was due")
    add("--streams", action="store_true",
        help="send the harness's bodies (stream, seq, resumed_from: the exactly-once path)")
    add("--client-processes", type=int, default=1,
        help="spread the reporters over this many forked processes (1: threads of this one)")
    add("--workers", type=int, default=2, help="gunicorn workers of the master (2)")
    add("--threads", type=int, default=8, help="threads per gunicorn worker (8)")
    add("--baseline-tree", metavar="DIR", default=None,
        help="also run each load against the master of this tree (e.g. a worktree of main), "
             "interleaved: before/after on the same host in one run")
    add("--extra-pythonpath", metavar="DIR", action="append", default=[],
        help="put DIR on this tree's master's PYTHONPATH (packages of its extras that "
             ".venv lacks); may be repeated")
    add("--db-url", default=None, help="use this existing, empty database (not dropped)")
    add("--admin-url", default=ADMIN_URL, help=f"where to create the database ({ADMIN_URL})")
    add("--py-spy", metavar="DIR", default=None,
        help="record each gunicorn worker with py-spy during the window into DIR/<run> and "
             "print where their CPU went (pip install py-spy; perturbs the figures)")
    add("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if min(args.trials, args.batch_steps, args.metrics, args.workers, args.threads,
           args.client_processes) < 1 or args.seconds <= 0 or args.warmup < 0 or args.rate < 0:
        parser.error("counts must be >= 1, --seconds > 0, --warmup >= 0")
    if args.scenario:
        args.streams = True  # the scenarios measure what the harness sends
    if args.db_url and (args.scenario or args.baseline_tree):
        parser.error("--db-url takes one run: not with --scenario or --baseline-tree")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args=parse_args, run=run, render_table=render_table,
                      reproduce_command=reproduce_command)


if __name__ == "__main__":
    run_script(main)
