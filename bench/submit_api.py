"""Submission: N ``sbatch`` against N pyslurm submits of the same tiny held job (Slurm 25.11).

What is measured
    One tiny script (``true``), submitted N times each way, held (nothing runs; all are
    cancelled at the end, also on Ctrl-C), with the same options (name, partition, time
    limit, output file, working directory), in blocks of ``--block`` that alternate between
    the ways so that a change in the machine's load reaches both:

    * ``sbatch``: ``sbatch --parsable --hold OPTIONS SCRIPT`` through hpcdet's
      ``CommandRunner`` (what ``SlurmBackend.submit`` runs; hpcdet writes its options as
      ``#SBATCH`` lines of the script instead);
    * ``pyslurm``: ``JobSubmitDescription(script=SCRIPT, OPTIONS, priority=0).submit()``.

    Per way: the total and per-submission wall time (median, p95), the CPU time (this
    process's and its children's). Then whether the two ways made the same job (the fields of
    ``scontrol show job`` that differ, ids and times left out), and whether pyslurm can read
    hpcdet's own job script (``SlurmBackend.render``) the way sbatch does: its
    ``load_sbatch_options()`` is pyslurm's own reading of the ``#SBATCH`` lines.

How to reproduce
    scripts/dev-cluster up --slurm 25.11 && eval "$(scripts/dev-cluster env --slurm 25.11)"
    scripts/build-pyslurm
    .venv/bin/python bench/submit_api.py [--jobs 1000 --block 100] [--json]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from _common import bench_main, log, reproduce_with, run_script  # noqa: E402
from poll import check_cluster, cpu_seconds, ensure_slurm_conf  # noqa: E402

from hpcdet.dispatcher.base import JobSpec  # noqa: E402
from hpcdet.dispatcher.commands import CommandRunner  # noqa: E402
from hpcdet.dispatcher.slurm.backend import SlurmBackend  # noqa: E402

JOB_NAME = "hpcdet-bench-submit"
# Fields of `scontrol show job` that differ between any two jobs.
OWN_FIELDS = {"JobId", "ArrayJobId", "SubmitTime", "EligibleTime", "AccrueTime", "StartTime",
              "EndTime", "Deadline", "LastSchedEval", "Priority", "RunTime",
              # The command line (sbatch's; none for pyslurm) and the script: sbatch names its
              # file, pyslurm sends the text.
              "SubmitLine", "Command"}


TIME_LIMIT = 5  # minutes (pyslurm 25.11.2 takes "5" as a string and fails: an int)
PARTITION = "debug"


def hpcdet_script(job_dir: Path) -> Path:
    """hpcdet's job script for a one-rank trial, as the master renders it."""
    spec = JobSpec(name=JOB_NAME, job_dir=str(job_dir), nodes=1, ranks_per_node=1,
                   command=("true",), partition=PARTITION, time_limit="00:05:00",
                   environment={"DET_MASTER": "http://127.0.0.1:8080"})
    submission = SlurmBackend().render(spec)
    path = Path(submission.script_path)
    path.write_text(submission.script)
    return path


def by_sbatch(script: Path) -> Callable[[], str]:
    runner = CommandRunner()
    argv = ("sbatch", "--parsable", "--hold", f"--job-name={JOB_NAME}", "--output=/dev/null",
            f"--partition={PARTITION}", f"--time={TIME_LIMIT}", f"--chdir={script.parent}",
            str(script))

    def submit() -> str:
        return runner(argv).strip().split(";")[0]

    return submit


def by_pyslurm(script: Path) -> Callable[[], str]:
    import pyslurm

    def submit() -> str:
        desc = pyslurm.JobSubmitDescription(
            script=str(script), name=JOB_NAME, standard_output="/dev/null",
            partitions=PARTITION, time_limit=TIME_LIMIT, working_directory=str(script.parent),
            priority=0)  # priority 0: held, as --hold
        return str(desc.submit())

    return submit


def pyslurm_reads(script: Path) -> str:
    """What pyslurm makes of hpcdet's script's ``#SBATCH`` lines: "ok" or its error."""
    import pyslurm

    try:
        pyslurm.JobSubmitDescription(script=str(script)).load_sbatch_options()
    except Exception as exc:  # noqa: BLE001 (any failure is the answer)
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def run(args: argparse.Namespace) -> dict[str, Any]:
    ensure_slurm_conf()
    check_cluster(CommandRunner())
    problem = SlurmBackend(slurm_api="pyslurm").startup_problem()
    if problem is not None:
        raise SystemExit(problem)
    with tempfile.TemporaryDirectory(prefix="hpcdet-bench-submit-") as tmp:
        # The job directory must exist where the job would run (#SBATCH --chdir).
        Path(tmp).chmod(0o755)
        script = Path(tmp) / "tiny.sh"
        script.write_text("#!/bin/bash\ntrue\n")
        ways = {"sbatch": by_sbatch(script), "pyslurm": by_pyslurm(script)}
        reads = pyslurm_reads(hpcdet_script(Path(tmp)))
        try:
            return {**measure(args, ways), "pyslurm_reads_hpcdet_script": reads}
        finally:
            cancel_ours()


def measure(args: argparse.Namespace, ways: dict[str, Callable[[], str]]) -> dict[str, Any]:
    walls: dict[str, list[float]] = {name: [] for name in ways}
    cpus = dict.fromkeys(ways, 0.0)
    first: dict[str, str] = {}
    done = 0
    while done < args.jobs:
        block = min(args.block, args.jobs - done)
        for name, submit in ways.items():
            cpu = cpu_seconds()
            for _ in range(block):
                started = time.perf_counter()
                job_id = submit()
                walls[name].append(time.perf_counter() - started)
                first.setdefault(name, job_id)
            cpus[name] += cpu_seconds() - cpu
        done += block
        log(f"  submitted {done}/{args.jobs} each way")
    held = count_held()
    result: dict[str, Any] = {"reproduce": reproduce_command(args), "jobs": args.jobs,
                              "held_in_queue": held, "ways": {}}
    for name, seconds in walls.items():
        ordered = sorted(seconds)
        result["ways"][name] = {
            "total_s": sum(seconds), "median_ms": statistics.median(seconds) * 1e3,
            "p95_ms": ordered[int(0.95 * (len(ordered) - 1))] * 1e3,
            "cpu_per_job_ms": cpus[name] / len(seconds) * 1e3}
    w = result["ways"]
    result["ratio_total"] = w["sbatch"]["total_s"] / w["pyslurm"]["total_s"]
    result["ratio_cpu"] = w["sbatch"]["cpu_per_job_ms"] / w["pyslurm"]["cpu_per_job_ms"]
    result["job_differences"] = job_differences(first["sbatch"], first["pyslurm"])
    result["target_met"] = held == 2 * args.jobs
    return result


def scontrol_fields(job_id: str) -> dict[str, str]:
    out = subprocess.run(["scontrol", "--oneliner", "show", "job", job_id], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    # SubmitLine's words (--job-name=...) are no fields of their own.
    return dict(word.split("=", 1) for word in out.split()
                if "=" in word and not word.startswith("-"))


def job_differences(sbatch_id: str, pyslurm_id: str) -> list[str]:
    """The ``scontrol show job`` fields in which the two ways' jobs differ."""
    a, b = scontrol_fields(sbatch_id), scontrol_fields(pyslurm_id)
    return [f"{key}: sbatch {a.get(key)!r}, pyslurm {b.get(key)!r}"
            for key in sorted(a.keys() | b.keys())
            if key not in OWN_FIELDS and a.get(key) != b.get(key)]


def count_held() -> int:
    out = subprocess.run(["squeue", "--noheader", f"--name={JOB_NAME}", "--states=PENDING",
                          "--format=%i|%r"], check=True, capture_output=True, text=True,
                         timeout=60).stdout
    return sum(1 for line in out.splitlines() if line.endswith("|JobHeldUser"))


def cancel_ours() -> None:
    subprocess.run(["scancel", f"--name={JOB_NAME}"], timeout=120, check=False)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        left = subprocess.run(["squeue", "--noheader", f"--name={JOB_NAME}", "--format=%i"],
                              capture_output=True, text=True, timeout=60).stdout.split()
        if not left:
            log(f"cancelled all jobs named {JOB_NAME}")
            return
        time.sleep(1)
    log(f"WARNING: jobs named {JOB_NAME} are left; run `scancel --name={JOB_NAME}` by hand")


def render_table(result: dict[str, Any]) -> str:
    lines = [f"# reproduce: {result['reproduce']}", "",
             f"Submission of a tiny job, {result['jobs']} held jobs each way "
             f"({result['held_in_queue']} held in the queue after)", "",
             f"{'way':<8} {'total s':>8} {'median ms':>9} {'p95 ms':>7} {'cpu ms/job':>10}"]
    for name, w in result["ways"].items():
        lines.append(f"{name:<8} {w['total_s']:>8.2f} {w['median_ms']:>9.2f} "
                     f"{w['p95_ms']:>7.2f} {w['cpu_per_job_ms']:>10.2f}")
    lines += [f"sbatch/pyslurm: {result['ratio_total']:.1f}x wall, {result['ratio_cpu']:.1f}x "
              "CPU", "",
              f"The same job? {len(result['job_differences'])} scontrol fields differ:",
              *(f"  {d}" for d in result["job_differences"]), "",
              "pyslurm's load_sbatch_options() on hpcdet's job script: "
              f"{result['pyslurm_reads_hpcdet_script']}"]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000, help="submissions each way (1000)")
    parser.add_argument("--block", type=int, default=100,
                        help="submissions of one way before the other's turn (100)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.block < 1:
        parser.error("--jobs and --block must be >= 1")
    return args


def reproduce_command(args: argparse.Namespace) -> str:
    return reproduce_with("bench/submit_api.py", args, parse_args([]))


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args=parse_args, run=run, render_table=render_table,
                      reproduce_command=reproduce_command)


if __name__ == "__main__":
    run_script(main)
