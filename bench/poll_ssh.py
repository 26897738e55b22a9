"""``bench/poll.py --transport ssh``: a poll cycle through a login node beside a local one.

What is measured
    ``SlurmBackend.poll(refs)`` over the same jobs, K cycles per scenario, once with the
    local transport (scheduler commands are child processes, exit files are read from this
    host's filesystem) and once with the SSH transport (one paramiko connection to the dev
    sshd, ``scripts/dev-sshd``: commands on ``exec`` channels, exit files over SFTP). The
    scenarios are those of ``bench/poll.py`` (``pending``, ``half-forgotten``: N/2 ids Slurm
    no longer knows, whose exit files are looked for, ``recently-ended``). Per cycle: the
    scheduler commands, the job-file operations and the wall time (median, min, max). Also
    the cost of one command (``true``) and one file ``stat`` on each transport, and of
    opening the SSH connection (once, before the first cycle; not in the cycles' times).

    The dev sshd runs on this host (127.0.0.1), so the SSH figures are the protocol's and
    paramiko's own cost with no network latency; a real login node adds one round trip per
    command and per SFTP request.

How to reproduce
    scripts/dev-cluster up && eval "$(scripts/dev-cluster env)" && scripts/dev-sshd up
    .venv/bin/python bench/poll.py --transport ssh [--jobs 1000 --cycles 5 --ended 20] [--json]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from _common import log, terminate_as_interrupt
from poll import (
    REPO,
    CycleStats,
    cancel_leftovers,
    cancel_ours,
    check_cluster,
    ensure_slurm_conf,
    measure_scenarios,
    parse_args,
    reproduce_command,
    submit_jobs,
)

from hpcdet.dispatcher.commands import CommandRunner
from hpcdet.dispatcher.transport import LocalTransport, SshSettings, Transport
from hpcdet.dispatcher.transport.sftp import SshTransport

TARGET_COMMANDS = 2


def ssh_settings() -> SshSettings:
    """The dev sshd's settings, from ``HPCDET_SSHD_*`` (``scripts/dev-sshd env``)."""
    env = dict(os.environ)
    if "HPCDET_SSHD_PORT" not in env:
        out = subprocess.run([str(REPO / "scripts" / "dev-sshd"), "env"], capture_output=True,
                             text=True, check=True).stdout
        env.update(word.split("=", 1) for line in out.splitlines() for word in line.split()[1:])
    return SshSettings(host=env["HPCDET_SSHD_HOST"], port=int(env["HPCDET_SSHD_PORT"]),
                       user=env["HPCDET_SSHD_USER"], key_file=env["HPCDET_SSHD_KEY"],
                       known_hosts=env["HPCDET_SSHD_KNOWN_HOSTS"])


def timed(action: Callable[[], object], times: int = 20) -> float:
    """Median seconds of ``action`` over ``times`` runs."""
    walls = []
    for _ in range(times):
        started = time.perf_counter()
        action()
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)


def unit_costs(transport: Transport, job_dir: str) -> dict[str, float]:
    """One command and one file stat on ``transport`` (median seconds)."""
    return {"command_s": timed(lambda: transport.runner(["true"])),
            "file_stat_s": timed(lambda: transport.file_size(f"{job_dir}/exit-1"))}


def run(args: Any, setup: CommandRunner, job_dir: str, ssh: SshTransport) -> dict[str, Any]:
    cancel_leftovers(setup)
    held, ended = submit_jobs(setup, args.jobs, args.ended)
    started = time.perf_counter()
    ssh.runner(["true"])  # the connection is opened once, here
    connect_s = time.perf_counter() - started
    results: dict[str, list[CycleStats]] = {}
    for transport in (LocalTransport(), ssh):
        log(f"measuring {args.cycles} poll cycles per scenario over {transport.name}")
        results[transport.name] = measure_scenarios(held, ended, args.cycles, job_dir, transport)
    costs = {"local": unit_costs(LocalTransport(), job_dir), "ssh": unit_costs(ssh, job_dir)}
    return report(args, results, costs, connect_s, ssh.settings)


def report(args: Any, results: dict[str, list[CycleStats]], costs: dict[str, dict[str, float]],
           connect_s: float, settings: SshSettings) -> dict[str, Any]:
    scenarios = []
    for local, ssh in zip(results["local"], results["ssh"], strict=True):
        scenarios.append({"scenario": local.scenario, "jobs": local.jobs,
                          "local": _summary(local), "ssh": _summary(ssh)})
    ok = all(s[t]["checks_ok"] and s[t]["max_commands"] <= TARGET_COMMANDS
             for s in scenarios for t in ("local", "ssh"))
    return {"reproduce": reproduce_command(args).replace("bench/poll.py",
                                                         "bench/poll.py --transport ssh"),
            "login_node": settings.where, "jobs": args.jobs, "cycles": args.cycles,
            "connect_s": connect_s, "unit_costs": costs, "scenarios": scenarios,
            "target_met": ok}


def _summary(stats: CycleStats) -> dict[str, Any]:
    return {"max_commands": max(stats.commands_per_cycle), "commands": stats.commands_used,
            "file_ops_per_cycle": max(stats.file_ops_per_cycle),
            "wall_median_s": statistics.median(stats.wall_s), "wall_min_s": min(stats.wall_s),
            "wall_max_s": max(stats.wall_s), "checks_ok": stats.checks_ok,
            "check_detail": stats.check_detail}


def render(result: dict[str, Any]) -> str:
    lines = [f"# reproduce: {result['reproduce']}", "",
             f"Poll cycle, local vs SSH ({result['login_node']}), {result['jobs']} jobs, "
             f"{result['cycles']} cycles per scenario", ""]
    header = (f"{'scenario':<16} {'transport':<9} {'cmds/cycle':>10} {'file ops':>8} "
              f"{'median ms':>9} {'min ms':>7} {'max ms':>7}  check")
    lines += [header, "-" * len(header)]
    for s in result["scenarios"]:
        for name in ("local", "ssh"):
            t = s[name]
            lines.append(f"{s['scenario']:<16} {name:<9} {t['max_commands']:>10} "
                         f"{t['file_ops_per_cycle']:>8} {t['wall_median_s'] * 1e3:>9.1f} "
                         f"{t['wall_min_s'] * 1e3:>7.1f} {t['wall_max_s'] * 1e3:>7.1f}  "
                         f"{'ok' if t['checks_ok'] else 'FAIL ' + t['check_detail']}")
    c = result["unit_costs"]
    lines += ["", f"one command (true): local {c['local']['command_s'] * 1e3:.1f} ms, "
              f"ssh {c['ssh']['command_s'] * 1e3:.1f} ms; one file stat: local "
              f"{c['local']['file_stat_s'] * 1e3:.2f} ms, ssh {c['ssh']['file_stat_s'] * 1e3:.2f}"
              f" ms; opening the SSH connection: {result['connect_s'] * 1e3:.0f} ms", "",
              f"Verdict: {'target met' if result['target_met'] else 'TARGET MISSED'} (at most "
              f"{TARGET_COMMANDS} scheduler commands per cycle on both transports, every "
              "status as expected)"]
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    ensure_slurm_conf()
    setup = CommandRunner()
    check_cluster(setup)
    ssh = SshTransport(ssh_settings())
    with terminate_as_interrupt(), tempfile.TemporaryDirectory(prefix="hpcdet-bench-poll-") as tmp:
        try:
            result = run(args, setup, tmp, ssh)
        finally:
            ssh.close()
            cancel_ours()
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0 if result["target_met"] else 1
