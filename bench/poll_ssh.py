"""``bench/poll.py --transport ssh|rest``: a poll cycle through a login node (and through
slurmrestd) beside a local one.

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

    With ``--transport rest`` a third row per scenario: the slurmrestd backend
    (``RestSlurmBackend``, a token from ``scontrol token``), its requests counted as the
    cycle's commands (one ``GET jobs?update_time``, answered "no change" when the controller
    changed nothing since the last cycle, plus one slurmdb request for ids it forgot). The
    SSH row is left out when the dev sshd does not answer.

How to reproduce
    scripts/dev-cluster up && eval "$(scripts/dev-cluster env)" && scripts/dev-sshd up
    .venv/bin/python bench/poll.py --transport ssh [--jobs 1000 --cycles 5 --ended 20] [--json]
    eval "$(scripts/dev-cluster env --slurm 25.11)"   # slurmrestd: HPCDET_DEV_SLURMRESTD
    .venv/bin/python bench/poll.py --transport rest [--jobs 1000 ...] [--json]
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import poll
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
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.slurm.rest.backend import RestSlurmBackend
from hpcdet.dispatcher.transport import LocalTransport, SshSettings, Transport
from hpcdet.dispatcher.transport.settings import RestSettings, TokenSourceSettings
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


# One row per transport: its name, how files go, and the backend (None: the CLI one).
Row = tuple[str, Transport, SlurmBackend | None]


def run(args: Any, setup: CommandRunner, job_dir: str, rows: list[Row]) -> dict[str, Any]:
    cancel_leftovers(setup)
    held, ended = submit_jobs(setup, args.jobs, args.ended)
    connect_s = None
    if any(name == "ssh" for name, _, _ in rows):
        ssh = next(transport for name, transport, _ in rows if name == "ssh")
        started = time.perf_counter()
        ssh.runner(["true"])  # the connection is opened once, here
        connect_s = time.perf_counter() - started
    results: dict[str, list[CycleStats]] = {}
    for name, transport, backend in rows:
        log(f"measuring {args.cycles} poll cycles per scenario over {name}")
        results[name] = measure_scenarios(held, ended, args.cycles, job_dir, transport, backend)
    costs = {name: unit_costs(transport, job_dir) for name, transport, backend in rows
             if not isinstance(backend, RestSlurmBackend)}
    login = next((t.settings.where for n, t, _ in rows if isinstance(t, SshTransport)), None)
    return report(args, results, costs, connect_s, login)


def report(args: Any, results: dict[str, list[CycleStats]], costs: dict[str, dict[str, float]],
           connect_s: float | None, login_node: str | None) -> dict[str, Any]:
    scenarios = []
    names = list(results)
    for rows in zip(*results.values(), strict=True):
        scenarios.append({"scenario": rows[0].scenario, "jobs": rows[0].jobs,
                          **{name: _summary(row) for name, row in zip(names, rows, strict=True)}})
    ok = all(s[t]["checks_ok"] and s[t]["max_commands"] <= TARGET_COMMANDS
             for s in scenarios for t in names)
    flag = "rest" if "rest" in names else "ssh"
    return {"reproduce": reproduce_command(args).replace(
                "bench/poll.py", f"bench/poll.py --transport {flag}"),
            "transports": names, "login_node": login_node, "jobs": args.jobs,
            "cycles": args.cycles, "connect_s": connect_s, "unit_costs": costs,
            "scenarios": scenarios, "target_met": ok}


def _summary(stats: CycleStats) -> dict[str, Any]:
    return {"max_commands": max(stats.commands_per_cycle), "commands": stats.commands_used,
            "file_ops_per_cycle": max(stats.file_ops_per_cycle),
            "wall_median_s": statistics.median(stats.wall_s), "wall_min_s": min(stats.wall_s),
            "wall_max_s": max(stats.wall_s), "checks_ok": stats.checks_ok,
            "check_detail": stats.check_detail}


def render(result: dict[str, Any]) -> str:
    names = result["transports"]
    lines = [f"# reproduce: {result['reproduce']}", "",
             f"Poll cycle over {', '.join(names)} (login node: {result['login_node']}), "
             f"{result['jobs']} jobs, {result['cycles']} cycles per scenario "
             "(rest: slurmrestd requests count as commands)", ""]
    header = (f"{'scenario':<16} {'transport':<9} {'cmds/cycle':>10} {'file ops':>8} "
              f"{'median ms':>9} {'min ms':>7} {'max ms':>7}  check")
    lines += [header, "-" * len(header)]
    for s in result["scenarios"]:
        for name in names:
            t = s[name]
            lines.append(f"{s['scenario']:<16} {name:<9} {t['max_commands']:>10} "
                         f"{t['file_ops_per_cycle']:>8} {t['wall_median_s'] * 1e3:>9.1f} "
                         f"{t['wall_min_s'] * 1e3:>7.1f} {t['wall_max_s'] * 1e3:>7.1f}  "
                         f"{'ok' if t['checks_ok'] else 'FAIL ' + t['check_detail']}")
    c = result["unit_costs"]
    lines += [""] + [f"one command (true) over {name}: {c[name]['command_s'] * 1e3:.1f} ms; "
                     f"one file stat: {c[name]['file_stat_s'] * 1e3:.2f} ms" for name in c]
    if result["connect_s"] is not None:
        lines.append(f"opening the SSH connection: {result['connect_s'] * 1e3:.0f} ms")
    lines += ["", f"Verdict: {'target met' if result['target_met'] else 'TARGET MISSED'} (at "
              f"most {TARGET_COMMANDS} scheduler commands or requests per cycle on every "
              "transport, every status as expected)"]
    return "\n".join(lines)


def sshd_answers(settings: SshSettings) -> bool:
    try:
        socket.create_connection((settings.host, settings.port), timeout=3).close()
    except OSError:
        return False
    return True


def rest_backend() -> RestSlurmBackend:
    """The slurmrestd backend on the dev cluster's 25.11 (HPCDET_DEV_SLURMRESTD)."""
    url = os.environ.get("HPCDET_DEV_SLURMRESTD")
    if not url:
        raise SystemExit("no HPCDET_DEV_SLURMRESTD: eval \"$(scripts/dev-cluster env "
                         "--slurm 25.11)\"")
    return RestSlurmBackend(rest=RestSettings(url, TokenSourceSettings(
        "scontrol", lifespan_seconds=3600)))


def main(argv: Sequence[str], *, rest: bool = False) -> int:
    args = parse_args(argv)
    ensure_slurm_conf()
    setup = CommandRunner()
    check_cluster(setup)
    rows: list[Row] = [("local", LocalTransport(), None)]
    settings = ssh_settings()
    if not rest or sshd_answers(settings):
        ssh = SshTransport(settings)
        # Beside slurmrestd (Slurm 25.11) the login shell's PATH finds Debian's 22.05 clients
        # first (same host): name this host's 25.11 ones (the SSH session has SLURM_CONF).
        rows.append(("ssh", ssh, SlurmBackend(
            transport=ssh, squeue=shutil.which("squeue") or "squeue",
            sacct=shutil.which("sacct") or "sacct") if rest else None))
    else:
        log(f"the dev sshd ({settings.where}) does not answer: no ssh row")
    if rest:
        # Jobs of its own name: a concurrent bench/poll.py would cancel "hpcdet-bench-poll".
        poll.JOB_NAME = "hpcdet-bench-poll-rest"
        restd = rest_backend()
        # Set up once, like the SSH connection: the data_parser version and a token.
        log(f"slurmrestd data_parser {restd.client.version}, token from scontrol")
        restd.client.tokens.token()
        rows.append(("rest", restd.transport, restd))
    with terminate_as_interrupt(), tempfile.TemporaryDirectory(prefix="hpcdet-bench-poll-") as tmp:
        try:
            result = run(args, setup, tmp, rows)
        finally:
            for _, transport, made in rows:
                transport.close()
                if isinstance(made, RestSlurmBackend):
                    made.close()
            cancel_ours()
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0 if result["target_met"] else 1
