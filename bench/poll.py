"""How many Slurm commands one poll cycle runs for 1,000 pending jobs, and how long it takes.

What is measured
    ``SlurmBackend.poll(refs)`` — the call the master's reconciler makes once per cycle for
    every active job — against the real dev cluster, with N (default 1,000) *held* jobs in the
    queue. A :class:`~hpcdet.dispatcher.commands.CommandRunner` handed to the backend counts
    the scheduler commands each cycle starts (target: at most 2, one ``squeue`` and at most one
    ``sacct``). Wall time is taken over K cycles (median, min, max). Scenarios:

    * ``pending``: all N held jobs (answered by one ``squeue``);
    * ``half-forgotten``: N/2 held jobs + N/2 ids Slurm no longer knows (9000000+i), which
      ``squeue`` omits, so ``poll`` asks ``sacct`` once for them; they must come back MISSING;
    * ``recently-ended``: the N held jobs + a few tiny jobs that already finished (``squeue``
      keeps ended jobs for ``MinJobAge`` = 300 s, so they must come back COMPLETED from squeue).

    Side by side, the naive alternative — one ``squeue -j <id>`` per job — is run over all N
    jobs (or over ``--naive-sample`` of them, scaled up and labelled as such), and the ratio of
    commands and of wall time is reported. Setup commands (sbatch, waiting) are not counted.

How to reproduce
    scripts/dev-cluster up && eval "$(scripts/dev-cluster env)"
    .venv/bin/python bench/poll.py --api both     # squeue vs pyslurm (Slurm 25.11; poll_api.py)
    .venv/bin/python bench/poll.py --scheduler pbs  # OpenPBS instead (bench/poll_pbs.py)
    .venv/bin/python bench/poll.py --transport ssh  # local and SSH side by side (poll_ssh.py)
    .venv/bin/python bench/poll.py --transport rest  # local, ssh, slurmrestd (poll_ssh.py)
    .venv/bin/python bench/poll.py                 # human table
    .venv/bin/python bench/poll.py --json          # one JSON object on stdout

The held jobs (``--job-name=hpcdet-bench-poll``) are cancelled at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from _common import log, run_script, terminate_as_interrupt  # noqa: E402

from hpcdet.dispatcher.base import JobPhase, JobRef, JobStatus  # noqa: E402
from hpcdet.dispatcher.commands import CommandRunner  # noqa: E402
from hpcdet.dispatcher.slurm.backend import SlurmBackend  # noqa: E402
from hpcdet.dispatcher.transport import LocalTransport, Transport  # noqa: E402
from hpcdet.errors import SchedulerError  # noqa: E402

JOB_NAME = "hpcdet-bench-poll"
FORGOTTEN_BASE = 9_000_000  # ids far above anything the dev cluster has handed out
TARGET_COMMANDS = 2
SQUEUE_FORMAT = "--format=%i|%T|%N|%r"



# ---- results -----------------------------------------------------------------------------


@dataclass
class CycleStats:
    """One measured scenario: K poll cycles over the same refs."""

    scenario: str
    jobs: int
    cycles: int
    commands_per_cycle: list[int]
    commands_used: list[str]
    wall_s: list[float]
    phases: dict[str, int]
    checks_ok: bool
    check_detail: str = ""
    # The transport the backend used, and its job-file operations per cycle (exit files).
    transport: str = "local"
    file_ops_per_cycle: list[int] = field(default_factory=list)
    # CPU seconds per cycle, this process's and its commands' (squeue, sacct) together.
    cpu_s: list[float] = field(default_factory=list)
    api: str = "cli"  # resource_manager.slurm_api

    @property
    def max_commands(self) -> int:
        return max(self.commands_per_cycle)

    def summary(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(max_commands=self.max_commands, wall_median_s=statistics.median(self.wall_s),
                   wall_min_s=min(self.wall_s), wall_max_s=max(self.wall_s),
                   target_met=self.max_commands <= TARGET_COMMANDS and self.checks_ok)
        return out


@dataclass
class NaiveStats:
    """One ``squeue -j <id>`` per job, over all jobs or a sample (then scaled to N)."""

    jobs: int
    sampled: int
    commands: int
    wall_s: float
    errors: int = 0
    scaled: bool = field(init=False)

    def __post_init__(self) -> None:
        self.scaled = self.sampled < self.jobs

    @property
    def commands_for_all(self) -> int:
        return self.jobs  # one command per job, whatever was sampled

    @property
    def wall_for_all_s(self) -> float:
        return self.wall_s * self.jobs / self.sampled


# ---- cluster setup -----------------------------------------------------------------------


def ensure_slurm_conf() -> str:
    """Use ``$SLURM_CONF``, else the repository's dev cluster config if there is one."""
    conf = os.environ.get("SLURM_CONF")
    if conf:
        if not Path(conf).is_file():  # Slurm commands would retry for 60 s, then fail
            raise SystemExit(f"SLURM_CONF={conf} does not exist. Start the dev cluster with: "
                             "scripts/dev-cluster up && eval \"$(scripts/dev-cluster env)\"")
        return conf
    default = (Path("/var/lib/hpcdet-dev-cluster") if os.geteuid() == 0  # scripts/dev-cluster's
               else Path.home() / ".hpcdet" / "dev-cluster")
    dev = Path(os.environ.get("HPCDET_CLUSTER_DIR") or default)
    dev = dev / "slurm.conf"
    if dev.is_file():
        os.environ["SLURM_CONF"] = str(dev)
        log(f"SLURM_CONF not set; using the dev cluster's {dev}")
        return str(dev)
    return "(default /etc/slurm/slurm.conf)"


def check_cluster(setup: CommandRunner) -> None:
    """Fail with a clear message unless the controller answers."""
    try:
        out = setup(["scontrol", "ping"], timeout=20)
        setup(["squeue", "--noheader", "--format=%i"], timeout=20)
    except SchedulerError as exc:
        raise SystemExit(f"the Slurm cluster does not answer ({exc}).\n"
                         "Start it with: scripts/dev-cluster up && "
                         "eval \"$(scripts/dev-cluster env)\"") from None
    if "UP" not in out:
        raise SystemExit(f"slurmctld is not up: {out.strip()!r}\n"
                         "Start it with: scripts/dev-cluster up")


def submit_many(setup: CommandRunner, count: int, *, held: bool, what: str) -> list[str]:
    """Submit ``count`` trivial jobs one ``sbatch`` at a time; show progress every 100."""
    argv = ["sbatch", "--parsable", f"--job-name={JOB_NAME}", "--output=/dev/null",
            "--wrap", "true"]
    if held:
        argv.insert(2, "--hold")
    ids: list[str] = []
    started = time.perf_counter()
    for i in range(1, count + 1):
        ids.append(setup(argv).strip().split(";", 1)[0])
        if i % 100 == 0 or i == count:
            log(f"  submitted {i}/{count} {what} ({time.perf_counter() - started:.1f} s)")
    return ids


def wait_until_ended(setup: CommandRunner, ids: Sequence[str], timeout: float) -> None:
    """Wait until ``squeue`` shows every one of ``ids`` in a terminal state."""
    deadline = time.monotonic() + timeout
    while True:
        out = setup(["squeue", "--noheader", "--states=all", f"--jobs={','.join(ids)}",
                     "--format=%i|%T"])
        states = dict(line.split("|", 1) for line in out.split())
        if len(states) == len(ids) and all(s in ("COMPLETED", "FAILED") for s in states.values()):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"tiny jobs did not finish within {timeout:.0f} s: {states}")
        time.sleep(1)


def cancel_ours(attempts: int = 3) -> None:
    """Cancel every job this benchmark submitted (by its job name) and check none is left."""
    for attempt in range(1, attempts + 1):
        try:
            done = subprocess.run(["scancel", f"--name={JOB_NAME}"], capture_output=True,
                                  text=True, timeout=60, check=False)
            left = subprocess.run(["squeue", "--noheader", f"--name={JOB_NAME}", "--format=%i"],
                                  capture_output=True, text=True, timeout=60, check=True)
        except (OSError, subprocess.SubprocessError) as exc:
            log(f"WARNING: cancelling failed ({exc})")
            break
        else:
            if not left.stdout.split():
                log(f"cancelled all jobs named {JOB_NAME}")
                return
            log(f"{len(left.stdout.split())} {JOB_NAME} jobs still queued after scancel "
                f"(rc {done.returncode}: {done.stderr.strip()!r}); attempt {attempt}/{attempts}")
        time.sleep(1)
    log(f"WARNING: run `scancel --name={JOB_NAME}` by hand")


# ---- measuring ---------------------------------------------------------------------------


def measure_poll(scenario: str, refs: Sequence[JobRef], cycles: int,
                 check: Callable[[dict[str, JobStatus]], str],
                 transport: Transport | None = None, api: str = "cli",
                 backend: SlurmBackend | None = None) -> CycleStats:
    """Run ``poll(refs)`` ``cycles`` times with a counting runner; ``check`` returns problems.
    ``transport``: how the backend reaches the cluster (default: a local one of its own);
    ``api``: resource_manager.slurm_api (cli: squeue + sacct; pyslurm: pyslurm + sacct);
    ``backend``: another Slurm backend on it (the slurmrestd one: its requests count as
    commands, named ``slurmrestd``)."""
    transport = transport or LocalTransport()
    backend = backend or SlurmBackend(transport=transport, slurm_api=api)
    runner = transport.runner  # the backend's (its scontrol token calls count too)
    client = getattr(backend, "client", None)  # a RestSlurmBackend's SlurmRestClient
    counts: list[int] = []
    file_ops: list[int] = []
    walls: list[float] = []
    cpus: list[float] = []
    problems: list[str] = []
    used: dict[str, None] = {}
    statuses: dict[str, JobStatus] = {}
    for _ in range(cycles):
        before, ops_before = runner.count, transport.file_ops
        requests_before = client.count if client is not None else 0
        cpu_before = cpu_seconds()
        started = time.perf_counter()
        statuses = backend.poll(refs)
        walls.append(time.perf_counter() - started)
        cpus.append(cpu_seconds() - cpu_before)
        commands = runner.count - before
        requests = client.count - requests_before if client is not None else 0
        counts.append(commands + requests)
        file_ops.append(transport.file_ops - ops_before)
        used.update(dict.fromkeys(argv[0] for argv in
                                  list(runner.calls)[len(runner.calls) - commands:]))
        used.update({"slurmrestd": None} if requests else {})
        problems.append(check(statuses))
    phases = Counter(s.phase.value for s in statuses.values())
    detail = "; ".join(sorted({p for p in problems if p}))
    return CycleStats(scenario, len(refs), cycles, counts, list(used), walls, dict(phases),
                      checks_ok=not detail, check_detail=detail,
                      transport="rest" if client is not None else transport.name,
                      file_ops_per_cycle=file_ops, cpu_s=cpus, api=api)


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (squeue, sacct) so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def expect(wanted: dict[str, JobPhase]) -> Callable[[dict[str, JobStatus]], str]:
    """A check that every id has the phase given in ``wanted``."""
    def check(statuses: dict[str, JobStatus]) -> str:
        missing = [i for i in wanted if i not in statuses]
        wrong = [f"{i}:{statuses[i].phase.value}" for i in wanted
                 if i in statuses and statuses[i].phase is not wanted[i]]
        if missing or wrong:
            return f"{len(missing)} ids without a status, {len(wrong)} wrong: {wrong[:5]}"
        return ""
    return check


def measure_naive(ids: Sequence[str], sample: int) -> NaiveStats:
    """One ``squeue -j <id>`` per job (the same format the backend asks for)."""
    chosen = list(ids) if sample <= 0 or sample >= len(ids) else list(ids)[:sample]
    runner = CommandRunner()
    errors = 0
    started = time.perf_counter()
    for job_id in chosen:
        try:
            runner(["squeue", "--noheader", "--states=all", "-j", job_id, SQUEUE_FORMAT])
        except SchedulerError:
            errors += 1
    return NaiveStats(len(ids), len(chosen), runner.count, time.perf_counter() - started, errors)


# ---- the benchmark -----------------------------------------------------------------------


def run(args: argparse.Namespace, setup: CommandRunner, job_dir: str) -> dict[str, Any]:
    cancel_leftovers(setup)
    held, ended = submit_jobs(setup, args.jobs, args.ended)
    log(f"measuring {args.cycles} poll cycles per scenario (slurm_api: {args.api})")
    results = measure_scenarios(held, ended, args.cycles, job_dir, api=args.api)
    sample = args.naive_sample if 0 < args.naive_sample < args.jobs else args.jobs
    log(f"measuring the naive way: one squeue per job over {sample} jobs")
    naive = measure_naive(held, args.naive_sample)
    return report_dict(args, results, naive)


def submit_jobs(setup: CommandRunner, jobs: int, ended: int) -> tuple[list[str], list[str]]:
    """Submit ``ended`` tiny jobs, then ``jobs`` held ones; wait for the tiny ones to end."""
    log(f"submitting {ended} tiny jobs that end at once (for the recently-ended case)")
    ended_ids = submit_many(setup, ended, held=False, what="tiny jobs") if ended else []
    log(f"submitting {jobs} held jobs")
    held_ids = submit_many(setup, jobs, held=True, what="held jobs")
    if ended_ids:
        wait_until_ended(setup, ended_ids, timeout=120)
    return held_ids, ended_ids


def measure_scenarios(held: list[str], ended: list[str], cycles: int, job_dir: str,
                      transport: Transport | None = None, api: str = "cli",
                      backend: SlurmBackend | None = None) -> list[CycleStats]:
    def refs(ids: list[str]) -> list[JobRef]:
        return [JobRef(job_id, job_dir) for job_id in ids]

    def measure(scenario: str, ids: list[str], wanted: dict[str, JobPhase]) -> CycleStats:
        return measure_poll(scenario, refs(ids), cycles, expect(wanted), transport, api,
                            backend)

    pending = {i: JobPhase.PENDING for i in held}
    results = [measure("pending", held, pending)]
    half = held[: len(held) // 2]
    forgotten = [str(FORGOTTEN_BASE + i) for i in range(len(held) - len(half))]
    wanted = {**{i: JobPhase.PENDING for i in half}, **{i: JobPhase.MISSING for i in forgotten}}
    results.append(measure("half-forgotten", half + forgotten, wanted))
    if ended:
        wanted = {**pending, **{i: JobPhase.COMPLETED for i in ended}}
        results.append(measure("recently-ended", held + ended, wanted))
    return results


def cancel_leftovers(setup: CommandRunner) -> None:
    out = setup(["squeue", "--noheader", f"--name={JOB_NAME}", "--format=%i"])
    if out.split():
        log(f"cancelling {len(out.split())} leftover {JOB_NAME} jobs of an earlier run")
        cancel_ours()


def report_dict(args: argparse.Namespace, results: list[CycleStats],
                naive: NaiveStats) -> dict[str, Any]:
    pending = results[0]
    median = statistics.median(pending.wall_s)
    return {
        "reproduce": reproduce_command(args),
        "slurm_conf": os.environ.get("SLURM_CONF"),
        "jobs": args.jobs,
        "cycles": args.cycles,
        "target_commands_per_cycle": TARGET_COMMANDS,
        "scenarios": [r.summary() for r in results],
        "naive": {**asdict(naive), "commands_for_all": naive.commands_for_all,
                  "wall_for_all_s": naive.wall_for_all_s},
        # pyslurm's pending cycle runs no command: count its one request as one.
        "ratio_commands": naive.commands_for_all / max(pending.max_commands, 1),
        "ratio_wall": naive.wall_for_all_s / median,
        "target_met": all(r.max_commands <= TARGET_COMMANDS and r.checks_ok for r in results),
    }


def reproduce_command(args: argparse.Namespace) -> str:
    conf = os.environ.get("SLURM_CONF", "")
    flags = [f"--jobs={args.jobs}", f"--cycles={args.cycles}", f"--ended={args.ended}",
             f"--naive-sample={args.naive_sample}"] + (["--json"] if args.json else []) + (
                 [f"--api={args.api}"] if args.api != "cli" else [])
    return (f"cd {shlex.quote(str(REPO))} && SLURM_CONF={shlex.quote(conf)} "
            f".venv/bin/python bench/poll.py {' '.join(flags)}")


# ---- output ------------------------------------------------------------------------------


def render_table(result: dict[str, Any]) -> str:
    lines = [f"# reproduce: {result['reproduce']}", "",
             f"Poll cycle cost, {result['jobs']} jobs, {result['cycles']} cycles per scenario "
             f"(target: <= {TARGET_COMMANDS} Slurm commands per cycle)", ""]
    header = (f"{'scenario':<16} {'jobs':>5} {'cmds/cycle':>10} {'commands':<14} "
              f"{'median ms':>9} {'min ms':>7} {'max ms':>7}  {'phases':<26} check  target")
    lines += [header, "-" * len(header)]
    for s in result["scenarios"]:
        phases = ",".join(f"{k}={v}" for k, v in sorted(s["phases"].items()))
        lines.append(
            f"{s['scenario']:<16} {s['jobs']:>5} {s['max_commands']:>10} "
            f"{'+'.join(s['commands_used']):<14} {s['wall_median_s'] * 1e3:>9.1f} "
            f"{s['wall_min_s'] * 1e3:>7.1f} {s['wall_max_s'] * 1e3:>7.1f}  {phases:<26} "
            f"{'ok' if s['checks_ok'] else 'FAIL'}   {'met' if s['target_met'] else 'MISSED'}")
        if s["check_detail"]:
            lines.append(f"    check: {s['check_detail']}")
    lines += ["", *naive_lines(result)]
    return "\n".join(lines)


def naive_lines(result: dict[str, Any]) -> list[str]:
    naive, pending = result["naive"], result["scenarios"][0]
    how = (f"measured over {naive['sampled']} of {naive['jobs']} jobs and scaled up"
           if naive["scaled"] else f"measured over all {naive['jobs']} jobs")
    return [
        f"Naive alternative: one `squeue -j <id>` per job ({how}; {naive['errors']} errors)",
        f"  {'':<22} {'commands':>9} {'wall s':>9}",
        f"  {'naive, per job':<22} {naive['commands_for_all']:>9} "
        f"{naive['wall_for_all_s']:>9.3f}",
        f"  {'poll(), pending':<22} {pending['max_commands']:>9} "
        f"{pending['wall_median_s']:>9.3f}",
        f"  {'ratio naive / poll()':<22} {result['ratio_commands']:>8.0f}x "
        f"{result['ratio_wall']:>8.0f}x",
        "",
        f"Verdict: {'target met' if result['target_met'] else 'TARGET MISSED'} "
        f"(at most {TARGET_COMMANDS} commands per cycle, every status as expected)",
    ]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=1000, help="held jobs to submit (1000)")
    parser.add_argument("--cycles", type=int, default=5, help="poll cycles per scenario (5)")
    parser.add_argument("--ended", type=int, default=20,
                        help="tiny jobs that end at once (recently-ended case; 20; 0: skip)")
    parser.add_argument("--naive-sample", type=int, default=0,
                        help="run the naive per-job squeue over this many jobs (0: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--api", choices=("cli", "pyslurm", "both"), default="cli",
                        help="resource_manager.slurm_api the backend polls with; both: cli and "
                             "pyslurm side by side on the same jobs (bench/poll_api.py)")
    args = parser.parse_args(argv)
    if args.jobs < 2 or args.cycles < 1 or args.ended < 0:
        parser.error("--jobs must be >= 2, --cycles >= 1, --ended >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    scheduler, rest = "slurm", given
    if given[:1] == ["--scheduler"] and len(given) > 1:
        scheduler, rest = given[1], given[2:]
    elif given[:1] and given[0].startswith("--scheduler="):
        scheduler, rest = given[0].partition("=")[2], given[1:]
    if scheduler == "pbs":
        from poll_pbs import main as pbs_main  # the PBS mode lives in its own module

        return pbs_main(rest)
    if "--transport=rest" in rest or " ".join(rest).find("--transport rest") >= 0:
        from poll_ssh import main as transports_main  # local, ssh and slurmrestd

        return transports_main([a for a in rest if a not in ("--transport=rest",
                                                             "--transport", "rest")], rest=True)
    if "--transport=ssh" in rest or " ".join(rest).find("--transport ssh") >= 0:
        from poll_ssh import main as ssh_main  # local vs SSH, side by side

        return ssh_main([a for a in rest if a not in ("--transport=ssh", "--transport", "ssh")])
    args = parse_args(rest)
    if args.api == "both":
        from poll_api import main as api_main  # cli and pyslurm side by side

        return api_main(args)
    return run_and_clean_up(args, run, render_table)


def run_and_clean_up(args: argparse.Namespace,
                     run: Callable[[argparse.Namespace, CommandRunner, str], dict[str, Any]],
                     render: Callable[[dict[str, Any]], str]) -> int:
    """Check the cluster, ``run`` in a scratch job directory, cancel this bench's jobs (also
    on Ctrl-C or SIGTERM), print the table or ``--json``; 0 when the target was met."""
    ensure_slurm_conf()
    log(f"# reproduce: {reproduce_command(args)}")
    setup = CommandRunner()
    check_cluster(setup)  # before anything is submitted: nothing to clean up if it fails
    with terminate_as_interrupt(), tempfile.TemporaryDirectory(prefix="hpcdet-bench-poll-") as tmp:
        try:
            result = run(args, setup, tmp)
        finally:
            cancel_ours()
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0 if result["target_met"] else 1


if __name__ == "__main__":
    run_script(main)
