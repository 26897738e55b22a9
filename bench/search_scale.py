"""How long a 1,000- or 10,000-trial random search takes to reach Slurm: job arrays vs one
``sbatch`` per trial (docs/job-arrays.md).

What is measured
    A live ``det-master`` (its own SQLite file, or with ``--db-url`` a new PostgreSQL database
    dropped at the end; reconcile interval 1 s; ``resource_manager.job_arrays`` on or off) on
    the dev cluster; ``det experiment create`` of a random search of N trivial trials
    (``max_concurrent_trials: N``; ``--hold`` in ``slurm.sbatch_args``, so that no trial runs:
    submission is measured, not training). For each way:

    * **submit s**: wall time from starting ``det experiment create`` until every trial's job
      row holds a Slurm job id (the database is read every 0.2 s);
    * **commands**: the scheduler commands the master started, by name, until then and in
      all (a wrapper per command on the master's ``PATH`` logs each call, then runs Slurm's);
    * **RPCs**: slurmctld's RPC counts by type from ``sdiag`` (reset with ``sdiag -r`` just
      before the create; other users of the dev cluster add to them);
    * **RSS MiB**: the master's processes (its reconciler, gunicorn and its workers) summed,
      and the largest one, once everything is submitted and again after the page timings;
    * **DB MiB**: the database's size (SQLite: the file with its WAL; PostgreSQL:
      ``pg_database_size``);
    * **page ms**: ``GET /experiments/<id>`` (the experiment page),
      ``GET /api/v1/experiments/<id>`` (API ms) and the first page of its trials, best first,
      as the page's script polls it (trials ms), over HTTP, median of R (default 5) after one
      untimed.

    Then the experiment is killed through ``det`` and every job left under the bench's job
    root is cancelled (also on Ctrl-C), and the master stopped.

    Targets (issue 20): 10,000 trials submitted in under 30 s with arrays, master RSS under
    500 MB, the experiment page under 300 ms.

How to reproduce
    scripts/dev-cluster up && eval "$(scripts/dev-cluster env)"
    flock /tmp/hpcdet-cluster.lock .venv/bin/python bench/search_scale.py --trials 1000
    flock /tmp/hpcdet-cluster.lock .venv/bin/python bench/search_scale.py --trials 10000 \\
        --ways arrays
    .venv/bin/python bench/search_scale.py --trials 20 --json     # a quick check
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # its sibling modules, also when loaded by path

import httpx  # noqa: E402
import yaml  # noqa: E402
from _common import bench_main, log, run_script  # noqa: E402
from sqlalchemy import create_engine, text  # noqa: E402
from web_experiments import postgres_database  # noqa: E402

from hpcdet.services.service_file import free_port  # noqa: E402

BIN = Path(sys.executable).parent
COMMANDS = ("sbatch", "squeue", "sacct", "scancel", "scontrol", "sinfo", "sacctmgr", "sshare",
            "sprio")
TARGET_SUBMIT_S = {10000: 30.0}
TARGET_RSS_MIB = 500.0
TARGET_PAGE_MS = 300.0
_SDIAG_LINE = re.compile(r"^\s+(?P<name>[A-Z_]+)\s+\(\s*\d+\)\s+count:(?P<count>\d+)")


@dataclass
class WayResult:
    """One search submitted one way."""

    way: str
    trials: int
    submit_s: float | None
    commands_to_submit: dict[str, int]
    commands_total: dict[str, int]
    rpcs: dict[str, int]
    rss_mib: float
    rss_max_process_mib: float
    rss_after_pages_mib: float
    db_mib: float
    page_ms: dict[str, float] = field(default_factory=dict)
    array_ids: int = 0

    def targets(self) -> dict[str, bool]:
        met = {"rss": self.rss_after_pages_mib < TARGET_RSS_MIB,
               "page": all(ms < TARGET_PAGE_MS for ms in self.page_ms.values())}
        if self.way == "arrays" and self.trials in TARGET_SUBMIT_S:
            met["submit"] = (self.submit_s is not None
                             and self.submit_s < TARGET_SUBMIT_S[self.trials])
        return met


# ---- the master --------------------------------------------------------------------------


def command_wrappers(directory: Path, calls: Path) -> dict[str, str]:
    """A script per Slurm command in ``directory`` that logs its name, then runs Slurm's."""
    directory.mkdir()
    found = {}
    for name in COMMANDS:
        real = shutil.which(name)
        if real is None:
            continue
        script = directory / name
        script.write_text(f"#!/bin/sh\necho {name} >> {shlex.quote(str(calls))}\n"
                          f"exec {shlex.quote(real)} \"$@\"\n")
        script.chmod(0o755)
        found[name] = real
    return found


@dataclass
class Master:
    url: str
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log_path: Path

    def det(self, *args: str) -> str:
        done = subprocess.run([str(BIN / "det"), "-m", self.url, *args], env=self.env,
                              capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"det {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return done.stdout

    def rss_mib(self) -> tuple[float, float]:
        """(all of the master's processes, the largest one) in MiB, from /proc."""
        sizes = []
        for pid in _session_pids(self.process.pid):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
            if match:
                sizes.append(int(match.group(1)) / 1024)
        return sum(sizes), max(sizes, default=0.0)


def _session_pids(session_id: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == session_id:  # the session id (field 6 of stat)
            pids.append(int(entry.name))
    return pids


@contextmanager
def live_master(tmp: Path, db_url: str, arrays: bool) -> Iterator[Master]:
    """det-master on a free port with the command wrappers first on its PATH."""
    port = free_port()
    calls = tmp / "commands.log"
    command_wrappers(tmp / "wrappers", calls)
    config = {"port": port, "host": "127.0.0.1", "db": {"url": db_url},
              "reconciler": {"interval_seconds": 1}, "auth": {"mode": "open"},
              "webserver": {"workers": 1, "threads": 4},
              "resource_manager": {"master_host": "127.0.0.1", "cluster_name": "bench-scale",
                                   "job_storage_root": str(tmp / "jobs"), "slot_type": "cpu",
                                   "job_arrays": arrays, "pool_refresh_seconds": 15}}
    (tmp / "master.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "PATH": f"{tmp / 'wrappers'}:{os.environ.get('PATH', '')}",
           "DET_USER": "bench", "PYTHONPATH": str(REPO)}
    log_path = tmp / "master.log"
    with log_path.open("ab") as out:
        process = subprocess.Popen([str(BIN / "det-master"), "--config", str(tmp / "master.yaml")],
                                   env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    master = Master(f"http://127.0.0.1:{port}", env, process, log_path)
    try:
        _wait_until_up(master)
        yield master
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def _wait_until_up(master: Master) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if master.process.poll() is not None:
            raise RuntimeError(f"det-master exited:\n{master.log_path.read_text()[-3000:]}")
        try:
            if httpx.get(f"{master.url}/api/v1/master", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise RuntimeError("det-master did not answer in 120 s")


# ---- one way -----------------------------------------------------------------------------


def write_search(directory: Path, trials: int) -> Path:
    directory.mkdir()
    (directory / "train.py").write_text("print('never runs: the job is held')\n")
    config = {"name": f"scale-{trials}", "entrypoint": "python3 train.py", "max_restarts": 0,
              "hyperparameters": {"x": {"type": "int", "minval": 1, "maxval": 1_000_000}},
              "searcher": {"name": "random", "metric": "loss", "max_trials": trials,
                           "max_concurrent_trials": trials, "max_length": {"batches": 1}},
              "resources": {"slots_per_trial": 1}, "slurm": {"sbatch_args": ["--hold"]}}
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _rows(db_url: str, query: str) -> list[tuple[Any, ...]]:
    """``query``'s rows, read straight from the master's database (SQLite read-only)."""
    if db_url.startswith("sqlite:///"):
        path = db_url.removeprefix("sqlite:///")
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as conn:
            return list(conn.execute(query))
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(query))]
    finally:
        engine.dispose()


def submitted_count(db_url: str) -> tuple[int, int]:
    """(trials, trials whose job has a Slurm id)."""
    ((trials, submitted),) = _rows(db_url, "SELECT (SELECT count(*) FROM trials), (SELECT "
                                   "count(DISTINCT trial_id) FROM jobs WHERE job_id IS NOT NULL)")
    return int(trials), int(submitted)


def array_count(db_url: str) -> int:
    """How many distinct Slurm submissions the jobs came from (an array counts once)."""
    ids = _rows(db_url, "SELECT job_id FROM jobs WHERE job_id IS NOT NULL")
    return len({str(job_id).partition("_")[0] for (job_id,) in ids})


def db_mib(db_url: str) -> float:
    if db_url.startswith("sqlite:///"):
        path = Path(db_url.removeprefix("sqlite:///"))
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 2**20
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return float(conn.execute(text("SELECT pg_database_size(current_database())"))
                         .scalar_one()) / 2**20
    finally:
        engine.dispose()


def sdiag_reset() -> None:
    subprocess.run(["sdiag", "-r"], capture_output=True, check=False, timeout=60)


def sdiag_rpcs() -> dict[str, int]:
    """slurmctld's RPC counts by message type (only the non-zero ones)."""
    out = subprocess.run(["sdiag"], capture_output=True, text=True, check=False,
                         timeout=60).stdout
    rpcs: dict[str, int] = {}
    by_type = out.split("Remote Procedure Call statistics by message type", 1)[-1]
    by_type = by_type.split("Remote Procedure Call statistics by user", 1)[0]
    for line in by_type.splitlines():
        match = _SDIAG_LINE.match(line)
        if match and int(match["count"]):
            rpcs[match["name"]] = int(match["count"])
    return rpcs


def command_counts(calls: Path, upto: int | None = None) -> dict[str, int]:
    lines = calls.read_text().split() if calls.exists() else []
    return dict(Counter(lines[:upto] if upto is not None else lines))


def page_times(master: Master, exp_id: int, runs: int) -> dict[str, float]:
    headers = {"X-Hpcdet-User": "bench"}
    out = {}
    with httpx.Client(base_url=master.url, headers=headers, timeout=120) as client:
        for path in (f"/experiments/{exp_id}", f"/api/v1/experiments/{exp_id}",
                     f"/api/v1/experiments/{exp_id}/trials?sortBy=best_validation_metric"
                     "&limit=100"):
            client.get(path).raise_for_status()
            walls = []
            for _ in range(runs):
                started = time.perf_counter()
                client.get(path).raise_for_status()
                walls.append(time.perf_counter() - started)
            out[path] = statistics.median(walls) * 1e3
    return out


def cancel_jobs_under(root: Path) -> int:
    """scancel every job whose working directory or script is under ``root``; wait for them."""
    def mine() -> list[str]:
        listed = subprocess.run(["squeue", "-h", "-a", "-r", "-o", "%i|%Z|%o"],
                                capture_output=True, text=True, timeout=120, check=False)
        rows = (line.split("|", 2) for line in listed.stdout.splitlines() if line.count("|") == 2)
        return [job for job, work, command in rows
                if Path(work).is_relative_to(root) or Path(command).is_relative_to(root)]

    jobs = mine()
    arrays = sorted({job.partition("_")[0] for job in jobs})
    if arrays:
        subprocess.run(["scancel", *arrays], capture_output=True, timeout=300, check=False)
    deadline = time.monotonic() + 300
    while mine() and time.monotonic() < deadline:
        time.sleep(2)
    return len(jobs)


def run_way(way: str, trials: int, args: argparse.Namespace, tmp: Path,
            db_url: str) -> WayResult:
    search = write_search(tmp / "search", trials)
    calls = tmp / "commands.log"
    with live_master(tmp, db_url, arrays=way == "arrays") as master:
        try:
            sdiag_reset()
            started = time.monotonic()
            created = master.det("experiment", "create", str(search), str(search.parent))
            exp_id = int(next(line for line in created.splitlines()
                              if line.startswith("Created experiment")).split()[-1])
            submit_s, upto = _wait_submitted(db_url, trials, started, args.timeout, calls)
            log(f"{way} {trials}: "
                + (f"submitted in {submit_s:.1f} s" if submit_s else "NOT all submitted"))
            rpcs = sdiag_rpcs()
            rss, rss_max = master.rss_mib()
            pages = page_times(master, exp_id, args.runs)
            rss_after, _ = master.rss_mib()
            result = WayResult(way, trials, submit_s, command_counts(calls, upto),
                               command_counts(calls), rpcs, rss, rss_max, rss_after,
                               db_mib(db_url), pages, array_count(db_url))
            master.det("experiment", "kill", str(exp_id))
            return result
        finally:
            cancelled = cancel_jobs_under(tmp / "jobs")
            log(f"{way} {trials}: cancelled {cancelled} jobs left under the job root")


def _wait_submitted(db_url: str, trials: int, started: float, timeout: float,
                    calls: Path) -> tuple[float | None, int | None]:
    """Seconds until every trial's job has an id, and how many commands had run by then."""
    deadline = started + timeout
    while time.monotonic() < deadline:
        created, submitted = submitted_count(db_url)
        if created == trials and submitted == trials:
            elapsed = time.monotonic() - started
            return elapsed, sum(command_counts(calls).values())
        time.sleep(0.2)
    return None, None


def run(args: argparse.Namespace) -> dict[str, Any]:
    results = []
    for trials in args.trials:
        for way in args.ways:
            with tempfile.TemporaryDirectory(prefix="hpcdet-bench-scale-",
                                             dir=args.tmp_dir) as tmp:
                if args.db_url:
                    with postgres_database(args.db_url) as url:
                        results.append(run_way(way, trials, args, Path(tmp), url))
                else:
                    url = f"sqlite:///{Path(tmp) / 'master.sqlite'}"
                    results.append(run_way(way, trials, args, Path(tmp), url))
    summaries = [{**asdict(r), "targets": r.targets()} for r in results]
    return {"reproduce": reproduce_command(args), "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()),
            "database": "postgresql" if args.db_url else "sqlite", "results": summaries,
            "targets_met": all(all(s["targets"].values()) for s in summaries)}


def reproduce_command(args: argparse.Namespace) -> str:
    flags = [f"--trials {' '.join(map(str, args.trials))}", f"--ways {' '.join(args.ways)}",
             f"--runs {args.runs}"]
    flags += [f"--db-url {shlex.quote(args.db_url)}"] if args.db_url else []
    flags += ["--json"] if args.json else []
    return ("flock /tmp/hpcdet-cluster.lock .venv/bin/python bench/search_scale.py "
            + " ".join(flags))


# ---- output ------------------------------------------------------------------------------


def _counts(counts: dict[str, int]) -> str:
    return " ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "-"


def render_table(result: dict[str, Any]) -> str:
    header = (f"{'trials':>7} {'way':<8} {'arrays':>6} {'submit s':>8} {'RSS MiB':>8} "
              f"{'max proc':>8} {'DB MiB':>7} {'page ms':>8} {'API ms':>7} {'trials ms':>9}  "
              "commands until submitted")
    lines = [f"# reproduce: {result['reproduce']}", "",
             f"database {result['database']}; {result['cpus']} CPUs, load average "
             f"{' '.join(f'{x:.1f}' for x in result['load_average'])}", header,
             "-" * len(header)]
    for r in result["results"]:
        times = r["page_ms"]
        page, api, trials = (next((ms for path, ms in times.items() if kind(path)), float("nan"))
                             for kind in (lambda p: "/api" not in p,
                                          lambda p: "/api" in p and "/trials" not in p,
                                          lambda p: "/trials" in p))
        submit = f"{r['submit_s']:.1f}" if r["submit_s"] is not None else "timeout"
        lines.append(f"{r['trials']:>7} {r['way']:<8} {r['array_ids']:>6} {submit:>8} "
                     f"{r['rss_after_pages_mib']:>8.0f} {r['rss_max_process_mib']:>8.0f} "
                     f"{r['db_mib']:>7.1f} {page:>8.0f} {api:>7.0f} {trials:>9.0f}  "
                     f"{_counts(r['commands_to_submit'])}")
    lines += ["", "slurmctld RPCs (sdiag, from the create until all submitted):"]
    for r in result["results"]:
        top = sorted(r["rpcs"].items(), key=lambda kv: -kv[1])[:6]
        lines.append(f"  {r['trials']:>6} {r['way']:<8} total {sum(r['rpcs'].values()):>6}: "
                     + ", ".join(f"{name} {count}" for name, count in top))
    lines += ["", "Targets: " + "; ".join(
        f"{r['trials']} {r['way']}: " + ", ".join(
            f"{name} {'met' if ok else 'MISSED'}" for name, ok in r["targets"].items())
        for r in result["results"])]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, nargs="+", default=[1000],
                        help="search sizes (1000)")
    parser.add_argument("--ways", nargs="+", choices=("arrays", "singles"),
                        default=["arrays", "singles"], help="arrays, singles or both (both)")
    parser.add_argument("--runs", type=int, default=5, help="timed page loads (5)")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds to wait for every trial to be submitted (900)")
    parser.add_argument("--db-url", default=None,
                        help="a PostgreSQL server URL allowed to create databases (a new "
                             "database there, dropped at the end); default SQLite")
    parser.add_argument("--tmp-dir", default=None,
                        help="where the job root goes (shared with the compute nodes; "
                             "default the system's temporary directory)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if min(args.trials) < 2 or args.runs < 1:
        parser.error("--trials must be >= 2 and --runs >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args=parse_args, run=run, render_table=render_table,
                      reproduce_command=reproduce_command,
                      met_key="targets_met")


if __name__ == "__main__":
    run_script(main)
