"""``bench/poll.py --api both``: a poll cycle with ``slurm_api: cli`` beside ``pyslurm``.

What is measured
    ``SlurmBackend.poll(refs)`` over the same N held jobs (and the scenarios of
    ``bench/poll.py``: ``pending``, ``half-forgotten``, ``recently-ended``; and
    ``a-tenth-ours``: N/10 of the held jobs, as if the rest were other users'), K cycles per
    scenario and reader, in two rounds (cli, pyslurm, cli, pyslurm) so that a change in the
    machine's load reaches both: wall time and CPU time (this process's and its commands'
    together: squeue and sacct are child processes, pyslurm works in the process), and the
    scheduler commands each cycle starts. Then:

    * whether the two readers return equal statuses for every id of every scenario;
    * accounting, for jobs that ended (the tiny ones, and three that exit 1, exit 143 and die
      by SIGKILL): one ``sacct`` (what both readers use) against ``pyslurm.db.Jobs.load``
      filtered to their ids, time and whether the statuses are equal;
    * what pyslurm costs once per process: ``python -c "import pyslurm"`` against
      ``python -c pass`` (the import runs ``slurm_init``, which reads slurm.conf).

    Needs pyslurm built for the cluster's Slurm: ``scripts/build-pyslurm`` (Slurm 25.11).

How to reproduce
    scripts/dev-cluster up --slurm 25.11 && eval "$(scripts/dev-cluster env --slurm 25.11)"
    scripts/build-pyslurm
    .venv/bin/python bench/poll.py --api both [--jobs 1000 --cycles 5 --ended 20] [--json]
"""

from __future__ import annotations

import argparse
import pwd
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from _common import log
from poll import (
    FORGOTTEN_BASE,
    JOB_NAME,
    CycleStats,
    cancel_leftovers,
    cpu_seconds,
    expect,
    measure_poll,
    measure_scenarios,
    reproduce_command,
    run_and_clean_up,
    submit_jobs,
    wait_until_ended,
)

from hpcdet.dispatcher.base import JobPhase, JobRef, JobStatus
from hpcdet.dispatcher.commands import CommandRunner
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.slurm.states import phase_of

APIS = ("cli", "pyslurm")
ROUNDS = 2
TARGET_COMMANDS = 2
# Jobs whose exit shows how accounting reports it: rc 1, rc 143 (a shell's SIGTERM code),
# death by SIGKILL.
EXIT_JOBS = ("exit 1", "exit 143", "kill -9 $$")


def run(args: argparse.Namespace, setup: CommandRunner, job_dir: str) -> dict[str, Any]:
    problem = SlurmBackend(slurm_api="pyslurm").startup_problem()
    if problem is not None:
        raise SystemExit(problem)
    cancel_leftovers(setup)
    held, ended = submit_jobs(setup, args.jobs, args.ended)
    exits = [setup(["sbatch", "--parsable", f"--job-name={JOB_NAME}", "--output=/dev/null",
                    "--wrap", command]).strip().split(";")[0] for command in EXIT_JOBS]
    wait_until_ended(setup, exits, timeout=120)
    # Every record the controller holds (ended jobs stay for MinJobAge): what each read loads.
    records = len(setup(["squeue", "--noheader", "--states=all", "--array",
                         "--format=%i"]).split())
    rounds: dict[str, list[list[CycleStats]]] = {api: [] for api in APIS}
    for number in range(1, ROUNDS + 1):
        for api in APIS:
            log(f"round {number}/{ROUNDS}: {args.cycles} poll cycles per scenario, "
                f"slurm_api: {api}")
            scenarios = measure_scenarios(held, ended, args.cycles, job_dir, api=api)
            # A tenth of the queue is the master's (the rest other users'): squeue filters
            # in C, pyslurm makes a Python object of every job in the queue.
            tenth = held[: max(1, len(held) // 10)]
            scenarios.append(measure_poll("a-tenth-ours", [JobRef(i, job_dir) for i in tenth],
                                          args.cycles, expect(dict.fromkeys(
                                              tenth, JobPhase.PENDING)), api=api))
            rounds[api].append(scenarios)
    forgotten = [str(FORGOTTEN_BASE + i) for i in range(10)]
    differences = compare_readers([*held, *ended, *exits, *forgotten], job_dir)
    log("accounting: sacct against pyslurm.db")
    accounting = measure_accounting([*ended, *exits])
    log("pyslurm's import, once per process")
    return {**report(args, rounds, differences, accounting, measure_import()),
            "controller_records": records}


def compare_readers(ids: Sequence[str], job_dir: str) -> list[str]:
    """The ids whose status the two readers tell apart (one poll each)."""
    refs = [JobRef(job_id, job_dir) for job_id in ids]
    cli = SlurmBackend().poll(refs)
    api = SlurmBackend(slurm_api="pyslurm").poll(refs)
    return [f"{i}: cli {cli[i]} pyslurm {api[i]}" for i in ids if cli[i] != api[i]]


def timed(action: Callable[[], object], times: int = 11) -> tuple[float, float]:
    """Median wall and CPU seconds (CPU: this process's and its children's) of ``action``."""
    walls, cpus = [], []
    for _ in range(times):
        cpu, started = cpu_seconds(), time.perf_counter()
        action()
        walls.append(time.perf_counter() - started)
        cpus.append(cpu_seconds() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def db_statuses(ids: Sequence[str]) -> dict[str, JobStatus]:
    """What ``sacct -X`` gives for ``ids`` (JobID, JobIDRaw, State, ExitCode, NodeList,
    Reason), from ``pyslurm.db.Jobs.load`` filtered to the ids' jobs."""
    import pyslurm

    wanted = set(ids)
    raw = sorted({int(job_id.split("_")[0]) for job_id in ids})
    found: dict[str, JobStatus] = {}
    for job in pyslurm.db.Jobs.load(pyslurm.db.JobFilter(ids=raw)).values():
        state = job.state
        if state == "CANCELLED" and job.cancelled_by:
            state += f" by {pwd.getpwnam(job.cancelled_by).pw_uid}"
        signal = job.exit_code_signal or 0
        exit_code = 128 + signal if signal else job.exit_code
        nodes = job.nodelist if job.nodelist not in (None, "", "None assigned") else None
        reason = job.state_reason if job.state_reason not in (None, "", "None") else None
        shown = (f"{job.array_id}_[{job.array_tasks_waiting}]" if job.array_tasks_waiting
                 else f"{job.array_id}_{job.array_task_id}" if job.array_task_id is not None
                 else str(job.id))
        for key in (shown, str(job.id)):
            if key in wanted:
                found[key] = JobStatus(key, phase_of(state), state, reason=reason,
                                       exit_code=exit_code, nodes=nodes, source="sacct")
    return found


def measure_accounting(ids: Sequence[str]) -> dict[str, Any]:
    reader = SlurmBackend().status_reader
    deadline = time.monotonic() + 60
    while len(reader.in_accounting(ids)) < len(ids):  # slurmdbd takes a moment
        if time.monotonic() > deadline:
            raise SystemExit(f"sacct does not know all of {list(ids)} after 60 s")
        time.sleep(1)
    sacct, pyslurm_db = reader.in_accounting(ids), db_statuses(ids)
    sacct_wall, sacct_cpu = timed(lambda: reader.in_accounting(ids))
    db_wall, db_cpu = timed(lambda: db_statuses(ids))
    return {"jobs": len(ids), "sacct_wall_s": sacct_wall, "sacct_cpu_s": sacct_cpu,
            "db_wall_s": db_wall, "db_cpu_s": db_cpu,
            "differences": [f"{i}: sacct {sacct.get(i)} pyslurm.db {pyslurm_db.get(i)}"
                            for i in ids if sacct.get(i) != pyslurm_db.get(i)]}


def measure_import(times: int = 5) -> dict[str, float]:
    def wall(code: str) -> float:
        walls = []
        for _ in range(times):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            walls.append(time.perf_counter() - started)
        return statistics.median(walls)

    return {"python_s": wall("pass"), "python_import_pyslurm_s": wall("import pyslurm")}


def merged(stats: list[CycleStats]) -> dict[str, Any]:
    """One scenario's cycles over the rounds."""
    walls = [w for s in stats for w in s.wall_s]
    cpus = [c for s in stats for c in s.cpu_s]
    commands = [c for s in stats for c in s.commands_per_cycle]
    used = list(dict.fromkeys(c for s in stats for c in s.commands_used))
    detail = "; ".join(s.check_detail for s in stats if s.check_detail)
    return {"cycles": len(walls), "max_commands": max(commands), "commands": used,
            "wall_median_s": statistics.median(walls), "wall_min_s": min(walls),
            "wall_max_s": max(walls), "cpu_median_s": statistics.median(cpus),
            "checks_ok": not detail, "check_detail": detail}


def report(args: argparse.Namespace, rounds: dict[str, list[list[CycleStats]]],
           differences: list[str], accounting: dict[str, Any],
           imports: dict[str, float]) -> dict[str, Any]:
    scenarios = []
    for index, first in enumerate(rounds["cli"][0]):
        row: dict[str, Any] = {"scenario": first.scenario, "jobs": first.jobs}
        for api in APIS:
            row[api] = merged([r[index] for r in rounds[api]])
        row["ratio_wall"] = row["cli"]["wall_median_s"] / row["pyslurm"]["wall_median_s"]
        row["ratio_cpu"] = row["cli"]["cpu_median_s"] / max(row["pyslurm"]["cpu_median_s"],
                                                            1e-9)
        scenarios.append(row)
    ok = not differences and all(s[api]["checks_ok"] and s[api]["max_commands"] <=
                                 TARGET_COMMANDS for s in scenarios for api in APIS)
    return {"reproduce": reproduce_command(args), "jobs": args.jobs,
            "cycles_per_scenario": args.cycles * ROUNDS, "scenarios": scenarios,
            "reader_differences": differences, "accounting": accounting, "imports": imports,
            "target_met": ok}


def render(result: dict[str, Any]) -> str:
    lines = [f"# reproduce: {result['reproduce']}", "",
             f"Poll cycle, slurm_api cli vs pyslurm, {result['jobs']} held jobs "
             f"({result['controller_records']} job records in the controller), "
             f"{result['cycles_per_scenario']} cycles per scenario and reader "
             f"({ROUNDS} rounds, interleaved)", ""]
    header = (f"{'scenario':<16} {'api':<8} {'commands':<14} {'median ms':>9} {'min ms':>7} "
              f"{'max ms':>7} {'cpu ms':>7}  check")
    lines += [header, "-" * len(header)]
    for s in result["scenarios"]:
        for api in APIS:
            t = s[api]
            used = "+".join(t["commands"]) or "-"
            lines.append(f"{s['scenario']:<16} {api:<8} {used:<14} "
                         f"{t['wall_median_s'] * 1e3:>9.1f} {t['wall_min_s'] * 1e3:>7.1f} "
                         f"{t['wall_max_s'] * 1e3:>7.1f} {t['cpu_median_s'] * 1e3:>7.1f}  "
                         f"{'ok' if t['checks_ok'] else 'FAIL ' + t['check_detail']}")
        lines.append(f"{'':<16} {'cli/pyslurm':<23} {s['ratio_wall']:>9.1f}x "
                     f"{'':>15} {s['ratio_cpu']:>7.1f}x")
    a, i = result["accounting"], result["imports"]
    lines += ["", f"Same statuses from both readers: "
              f"{'yes' if not result['reader_differences'] else 'NO'}",
              *(f"  {d}" for d in result["reader_differences"]), "",
              f"Accounting, {a['jobs']} ended jobs: sacct {a['sacct_wall_s'] * 1e3:.1f} ms "
              f"(cpu {a['sacct_cpu_s'] * 1e3:.1f}), pyslurm.db.Jobs.load "
              f"{a['db_wall_s'] * 1e3:.1f} ms (cpu {a['db_cpu_s'] * 1e3:.1f}); "
              f"{len(a['differences'])} statuses differ",
              *(f"  {d}" for d in a["differences"]), "",
              f"Once per process: python -c pass {i['python_s'] * 1e3:.0f} ms, "
              f"python -c 'import pyslurm' {i['python_import_pyslurm_s'] * 1e3:.0f} ms", "",
              f"Verdict: {'target met' if result['target_met'] else 'TARGET MISSED'} (at most "
              f"{TARGET_COMMANDS} commands per cycle, every status as expected, both readers "
              "equal)"]
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    return run_and_clean_up(args, run, render)
