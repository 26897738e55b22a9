"""How long a requeued job waits before it runs again: plain ``--requeue`` and Slurm 25.11's
``--requeue=expedite``, side by side in one run.

What is measured
    For each mode, ``--repeat`` times: one job (``sleep``) in partition ``--partition`` of the
    dev cluster, submitted with ``--requeue`` or ``--requeue=expedite``; once it runs, its
    node fails (``scripts/dev-cluster fail-node``: slurmd and the job's processes killed,
    the node marked DOWN), and the clock runs from that moment until ``scontrol show job``
    says RUNNING again with ``Restarts=1`` on the partition's other node. That is the gap a
    trial's restart after a node failure costs before its first step, hpcdet's own start
    (reading the checkpoint) excluded. The failed node is revived after each try.

    A plain requeued job may not start again before the credential lifetime has passed
    (``AuthInfo=cred_expire``: 120 s by default, 10 s in the dev cluster); an expedited one
    is eligible at once and goes to the top of the queue. Expedited requeue needs
    ``SlurmctldParameters=enable_expedited_requeue`` (the dev cluster's 25.11 sets it):
    sbatch refuses ``--requeue=expedite`` elsewhere, so the bench asks ``scontrol show
    config`` first.

With ``--trial`` the same happens to a trial's job under a real ``det-master`` (SQLite,
    reconcile interval 1 s), one master per mode (``resource_manager.expedited_requeue``
    true or false: hpcdet itself renders ``--requeue=expedite`` or ``--requeue``): a Core
    API trial that sleeps in pool ``--partition`` is created with ``det experiment create``;
    once it runs, its node fails, and two clocks run from that moment: until Slurm runs the
    job again (``slurm_s``, as above) and until the master shows the trial RUNNING again
    after counting the restart (``trial_s``: what a user sees, the master's poll included).
    The trial is killed after each try; the rendered script's requeue line is checked.

How to reproduce
    scripts/dev-cluster up --slurm 25.11 && eval "$(scripts/dev-cluster env --slurm 25.11)"
    .venv/bin/python bench/requeue.py            # table; --json for one JSON object
    .venv/bin/python bench/requeue.py --trial    # through det-master, end to end

Uses partition ``side`` (node5, node6) by default: run it when no test uses them. Its jobs
(``--job-name=hpcdet-bench-requeue``) are cancelled and failed nodes revived at the end, also
on Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from _common import bench_main, log, reproduce_with, run_script  # noqa: E402

from hpcdet.dispatcher.commands import CommandRunner  # noqa: E402
from hpcdet.dispatcher.slurm.config import SlurmConfig, read_config  # noqa: E402

JOB_NAME = "hpcdet-bench-requeue"
MODES = {"plain": "--requeue", "expedite": "--requeue=expedite"}


def slurm(*argv: str) -> str:
    """One Slurm command; its stdout (a failure raises with its stderr)."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def dev_cluster(*argv: str) -> None:
    subprocess.run([str(REPO / "scripts" / "dev-cluster"), *argv], check=True,
                   capture_output=True, timeout=120)


def job_fields(job_id: str) -> dict[str, str]:
    """``scontrol show job -o`` as a dict."""
    out = slurm("scontrol", "show", "job", "-o", job_id)
    return dict(item.split("=", 1) for item in out.split() if "=" in item)


def wait_until(probe: Callable[[], Any], what: str, timeout: float = 300.0,
               poll: float = 0.05) -> Any:
    """Call ``probe`` every ``poll`` seconds until it answers something true; that answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(poll)
    raise RuntimeError(f"not {what} within {timeout:.0f} s")


def wait_for(job_id: str, what: str, test: Any, timeout: float = 300.0) -> dict[str, str]:
    """Poll ``scontrol show job`` every 50 ms until ``test(fields)`` holds."""
    return dict(wait_until(lambda: (lambda fields: fields if test(fields) else None)(
        job_fields(job_id)), f"job {job_id} {what}", timeout))


def cluster_config() -> SlurmConfig:
    """What the controller says it is (hpcdet's own reading: release, parameters)."""
    return read_config(CommandRunner())


def one_try(mode: str, partition: str, workdir: str) -> float:
    """Seconds from the node's failure to the job running again."""
    job_id = slurm("sbatch", "--parsable", f"--job-name={JOB_NAME}", "-p", partition, "-N1",
                   MODES[mode], f"--chdir={workdir}", "--output=/dev/null",
                   "--wrap", "sleep 600").strip().split(";")[0]
    try:
        node = wait_for(job_id, "running", lambda f: f["JobState"] == "RUNNING")["NodeList"]
        failed = time.monotonic()
        dev_cluster("fail-node", node)
        try:
            wait_for(job_id, "running again",
                     lambda f: f["JobState"] == "RUNNING" and f.get("Restarts") == "1")
            return time.monotonic() - failed
        finally:
            dev_cluster("revive-node", node)
    finally:
        subprocess.run(["scancel", job_id], capture_output=True, check=False)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Each mode ``args.repeat`` times, alternating, so that both see the same machine."""
    if not os.environ.get("SLURM_CONF"):
        raise SystemExit('no SLURM_CONF: eval "$(scripts/dev-cluster env --slurm 25.11)" first')
    config = cluster_config()
    modes = ["plain", "expedite"] if config.expedited_requeue else ["plain"]
    if "expedite" not in modes:
        log("this cluster does not allow --requeue=expedite "
            "(SlurmctldParameters=enable_expedited_requeue): measuring plain requeue only")
    if args.trial:
        from _requeue_trial import TrialTries  # a det-master per mode

        with TrialTries(modes, args.partition) as tries:
            return summarize(args, config, tries.run(args.repeat))
    gaps: dict[str, list[float]] = {mode: [] for mode in modes}
    for attempt in range(args.repeat):
        for mode in modes:
            gap = one_try(mode, args.partition, args.workdir)
            log(f"try {attempt + 1}/{args.repeat} {mode}: running again after {gap:.1f} s")
            gaps[mode].append(gap)
    return summarize(args, config, {"slurm_s": gaps})


def summarize(args: argparse.Namespace, config: SlurmConfig,
              clocks: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    """Medians per clock and mode, and plain over expedite (Slurm's clock)."""
    medians = {clock: {mode: statistics.median(values) for mode, values in gaps.items()}
               for clock, gaps in clocks.items()}
    slurm_medians = medians["slurm_s"]
    ratio = (slurm_medians["plain"] / slurm_medians["expedite"]
             if "expedite" in slurm_medians else None)
    return {"partition": args.partition, "repeat": args.repeat, "trial": args.trial,
            "gaps_s": clocks["slurm_s"], "clocks": clocks, "median_s": slurm_medians,
            "medians": medians, "plain_over_expedite": ratio,
            "slurm_version": config.version_text,
            "target_met": ratio is None or ratio >= 1.0}


def render_table(result: dict[str, Any]) -> str:
    what = "a trial's job (det-master)" if result.get("trial") else "a job"
    lines = [f"requeue of {what} after a node failure, Slurm {result['slurm_version']}, "
             f"partition {result['partition']}, {result['repeat']} tries per mode",
             f"{'clock':<9} {'mode':<10} {'median s':>9} {'min s':>7} {'max s':>7}"]
    for clock, gaps in result.get("clocks", {"slurm_s": result["gaps_s"]}).items():
        for mode, values in gaps.items():
            lines.append(f"{clock:<9} {mode:<10} {statistics.median(values):>9.1f} "
                         f"{min(values):>7.1f} {max(values):>7.1f}")
    if result["plain_over_expedite"] is not None:
        lines.append(f"plain / expedite (slurm_s): {result['plain_over_expedite']:.1f}x")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partition", default="side", help="two nodes or more (default side)")
    parser.add_argument("--repeat", type=int, default=3, help="tries per mode (default 3)")
    parser.add_argument("--workdir", default="/tmp", help="the jobs' working directory")
    parser.add_argument("--trial", action="store_true",
                        help="a trial's job under det-master, one master per mode")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    return parser.parse_args(argv)


def reproduce_command(args: argparse.Namespace) -> str:
    return reproduce_with("bench/requeue.py", args, parse_args([]))


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args=parse_args, run=run, render_table=render_table,
                      reproduce_command=reproduce_command)


if __name__ == "__main__":
    run_script(main)
