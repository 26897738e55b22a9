"""``bench/poll.py --scheduler pbs``: PBS commands per poll cycle for 1,000 queued jobs.

What is measured
    ``PbsBackend.poll(refs)`` against the real dev OpenPBS server (``scripts/dev-pbs up``)
    with N (default 1,000) *held* jobs (``qsub -h`` as ``user_a``: root may not submit).
    A counting :class:`~hpcdet.dispatcher.commands.CommandRunner` gives the PBS commands
    per cycle (target: 1, one ``qstat -x -f -F dsv`` for every id). Scenarios:

    * ``pending``: all N held jobs;
    * ``half-forgotten``: N/2 held jobs + N/2 ids the server never issued (9000000+i),
      which qstat reports as unknown (exit 153) and which must come back MISSING.

    Side by side, the naive alternative, one ``qstat -x -f -F json <id>`` per job, over
    ``--naive-sample`` jobs, scaled up to N and labelled as such. The time each ``qsub``
    took is reported too. The held jobs (``-N hpcdet-bench-poll``) are deleted at the end.

How to reproduce
    scripts/dev-pbs up && .venv/bin/python bench/poll.py --scheduler pbs [--json]
"""

from __future__ import annotations

import argparse
import json
import pwd
import statistics
import time
from collections.abc import Sequence
from typing import Any

from _common import log

from hpcdet.dispatcher.base import JobPhase, JobRef
from hpcdet.dispatcher.commands import CommandRunner
from hpcdet.dispatcher.pbs.backend import PbsBackend

PBS_BIN = "/opt/pbs/bin"
USER = "user_a"
JOB_NAME = "hpcdet-bench-poll"
FORGOTTEN_BASE = 9_000_000


def as_user(runner: CommandRunner, *argv: str) -> str:
    """One PBS command as ``USER`` (runuser; needs root)."""
    home = pwd.getpwnam(USER).pw_dir
    return runner(["runuser", "-u", USER, "--", "env", "-i", f"HOME={home}",
                   f"PATH={PBS_BIN}:/usr/bin:/bin", "PBS_CONF_FILE=/etc/pbs.conf", *argv])


def submit_held(runner: CommandRunner, count: int) -> tuple[list[str], list[float]]:
    """``count`` held jobs; their ids and how long each qsub took."""
    ids, took = [], []
    for _ in range(count):
        start = time.perf_counter()
        ids.append(as_user(runner, f"{PBS_BIN}/qsub", "-h", "-N", JOB_NAME, "--",
                           "/bin/true").strip())
        took.append(time.perf_counter() - start)
    return ids, took


def delete_ours(runner: CommandRunner) -> None:
    """qdel every job named JOB_NAME (qselect, then qdel in batches of 500)."""
    try:
        ids = as_user(runner, f"{PBS_BIN}/qselect", "-N", JOB_NAME).split()
        for start in range(0, len(ids), 500):
            as_user(runner, f"{PBS_BIN}/qdel", *ids[start:start + 500])
    except Exception as exc:  # noqa: BLE001 - cleanup reports and goes on
        log(f"# cleanup failed: {exc}")


def measure(refs: Sequence[JobRef], cycles: int, wanted: dict[str, JobPhase]) -> dict[str, Any]:
    """Commands and wall time of ``cycles`` polls of ``refs``; checks every phase."""
    runner = CommandRunner()
    backend = PbsBackend(runner=runner, bin_dir=PBS_BIN)
    commands, walls, wrong = [], [], 0
    for _ in range(cycles):
        before, start = runner.count, time.perf_counter()
        statuses = backend.poll(refs)
        walls.append(time.perf_counter() - start)
        commands.append(runner.count - before)
        wrong += sum(statuses[job_id].phase is not phase for job_id, phase in wanted.items())
    return {"jobs": len(refs), "commands_per_cycle": max(commands), "wrong_phases": wrong,
            "wall_s_median": round(statistics.median(walls), 3),
            "wall_s_min": round(min(walls), 3), "wall_s_max": round(max(walls), 3)}


def measure_naive(ids: Sequence[str], sample: int, total: int) -> dict[str, Any]:
    runner = CommandRunner()
    start = time.perf_counter()
    for job_id in ids[:sample]:
        runner([f"{PBS_BIN}/qstat", "-x", "-f", "-F", "json", job_id])
    wall = time.perf_counter() - start
    return {"sample": min(sample, len(ids)), "commands_for_all": total,
            "wall_s_for_all_scaled": round(wall / max(1, min(sample, len(ids))) * total, 2)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    setup = CommandRunner()
    start = time.perf_counter()
    held, took = submit_held(setup, args.jobs)
    submit_s = time.perf_counter() - start
    log(f"# submitted {len(held)} held jobs in {submit_s:.1f} s")
    refs = [JobRef(job_id, "/nonexistent") for job_id in held]
    half = len(held) // 2
    forgotten = [JobRef(f"{FORGOTTEN_BASE + i}.vm", "/nonexistent") for i in range(half)]
    pending = measure(refs, args.cycles, {r.job_id: JobPhase.PENDING for r in refs})
    mixed_refs = [*refs[:half], *forgotten]
    mixed_wanted = {**{r.job_id: JobPhase.PENDING for r in refs[:half]},
                    **{r.job_id: JobPhase.MISSING for r in forgotten}}
    mixed = measure(mixed_refs, args.cycles, mixed_wanted)
    return {"scheduler": "pbs", "jobs": len(held), "cycles": args.cycles,
            "qsub_s_median": round(statistics.median(took), 4),
            "qsub_s_max": round(max(took), 4), "submit_all_s": round(submit_s, 1),
            "pending": pending, "half_forgotten": mixed,
            "naive": measure_naive(held, args.naive_sample, len(held)),
            "target_met": pending["commands_per_cycle"] == 1 == mixed["commands_per_cycle"]
            and pending["wrong_phases"] == 0 == mixed["wrong_phases"]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--naive-sample", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        result = run(args)
    finally:
        delete_ours(CommandRunner())
    print(json.dumps(result, indent=2) if args.json else _table(result))
    return 0 if result["target_met"] else 1


def _table(result: dict[str, Any]) -> str:
    lines = [f"PBS poll, {result['jobs']} held jobs, {result['cycles']} cycles "
             f"(qsub median {result['qsub_s_median']} s, all {result['submit_all_s']} s)",
             f"{'scenario':<16}{'jobs':>6}{'cmds/cycle':>12}{'median s':>10}{'max s':>8}"]
    for name in ("pending", "half_forgotten"):
        row = result[name]
        lines.append(f"{name:<16}{row['jobs']:>6}{row['commands_per_cycle']:>12}"
                     f"{row['wall_s_median']:>10}{row['wall_s_max']:>8}")
    naive = result["naive"]
    lines.append(f"naive (one qstat per job, {naive['sample']} measured, scaled): "
                 f"{naive['commands_for_all']} commands, {naive['wall_s_for_all_scaled']} s")
    return "\n".join(lines)
