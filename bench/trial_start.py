"""What a trial that never imports torch costs each rank: wall time, CPU and memory.

Every trial's ranks run ``python -m hpcdet.harness``. Until issue 27 the harness imported
torch and joined a process group for every in-process entrypoint, so a sweep of small CPU
trials (and most of the test suite's trials) paid torch's import and memory per rank for
nothing. A run starts ``--runs`` times, per tree, ``--ranks`` harness processes (as ``srun``
would: Slurm's task variables, one node) of an unmanaged trial whose entrypoint is a Core
API script of the standard library (``hpcdet.core.init()``, a metric report, and with
several ranks an ``allgather``), and measures per rank:

* ``wall``: from the first rank's start to the last rank's end, over the ranks;
* ``cpu``: user + system CPU seconds of each rank (``wait4``), summed over the ranks;
* ``rss``: the largest rank's peak resident memory (``ru_maxrss``), MB.

With ``--baseline-tree DIR`` (e.g. a worktree of the commit before) the same interpreter
runs that tree's harness too (``PYTHONPATH=DIR``, ``-S``: see ``master_start._path_of``),
interleaved in a random order per round, and each round gives the paired ratios.

Target (mine, issue 27): a rank of a trial that never imports torch stays under 100 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))  # its sibling modules, also when loaded by path

from _common import bench_main, log, reproduce_with, run_script  # noqa: E402

TARGET_RSS_MB = 100.0
SCRIPT = """\
import hpcdet.core

with hpcdet.core.init() as core:
    core.train.report_training_metrics(1, {"loss": 0.5})
    print("gathered", core.distributed.allgather(core.distributed.rank), flush=True)
"""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="trials per tree")
    parser.add_argument("--ranks", type=int, default=1, help="ranks per trial (one node)")
    parser.add_argument("--baseline-tree", default="", help="another tree, timed alongside")
    parser.add_argument("--json", action="store_true", help="the result as JSON")
    return parser.parse_args(argv)


def _path_of(tree: Path) -> str:
    return f"{tree}{os.pathsep}{sysconfig.get_paths()['purelib']}"


def _job_dir(directory: Path) -> Path:
    """An unmanaged job directory (no master: reports go to stderr) with the script."""
    (directory / "context").mkdir(parents=True)
    (directory / "context" / "trial.py").write_text(SCRIPT)
    trial = {"master_url": "", "experiment_id": 1, "trial_id": 1, "run_id": 1,
             "trial_seed": 7, "hparams": {}, "unmanaged": True,
             "experiment_config": {"entrypoint": "python3 trial.py",
                                   "resources": {"slot_type": "cpu"}},
             "latest_checkpoint": None, "checkpoint_dir": str(directory / "checkpoints")}
    (directory / "trial.json").write_text(json.dumps(trial))
    return directory


def _rank_env(tree: Path, job: Path, rank: int, ranks: int, job_id: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("SLURM_", "DET_", "MASTER_", "RANK", "WORLD_SIZE", "LOCAL_"))}
    env.update(PYTHONPATH=_path_of(tree), DET_TRIAL_INFO=str(job / "trial.json"),
               DET_JOB_DIR=str(job), OMP_NUM_THREADS="1", SLURM_JOB_ID=job_id,
               SLURM_JOB_NODELIST="localhost", SLURM_NNODES="1", SLURM_NODEID="0",
               SLURM_NTASKS=str(ranks), SLURM_TASKS_PER_NODE=str(ranks),
               SLURM_PROCID=str(rank), SLURM_LOCALID=str(rank))
    return env


def trial_once(tree: Path, ranks: int) -> dict[str, float]:
    """One trial of ``ranks`` harness processes of ``tree``; its wall, CPU and peak RSS."""
    with tempfile.TemporaryDirectory(prefix="bench-trial-") as name:
        job = _job_dir(Path(name))
        job_id = str(random.randrange(10**6, 10**8))
        started = time.perf_counter()
        processes = [subprocess.Popen(
            [sys.executable, "-S", "-m", "hpcdet.harness"], cwd=job / "context",
            env=_rank_env(tree, job, rank, ranks, job_id), stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE) for rank in range(ranks)]
        cpu, rss = 0.0, 0.0
        for process in processes:
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
            errors = process.stderr.read().decode() if process.stderr else ""
            if process.returncode != 0:
                raise SystemExit(f"a rank of {tree}'s trial failed ({process.returncode}):\n"
                                 + errors[-2000:])
            cpu += usage.ru_utime + usage.ru_stime
            rss = max(rss, usage.ru_maxrss / 1024)
        wall = time.perf_counter() - started
        for process in processes:
            if process.stderr:
                process.stderr.close()
        return {"wall": wall, "cpu": cpu, "rss": rss}


def run(args: argparse.Namespace) -> dict[str, Any]:
    trees = {"tree": REPO}
    if args.baseline_tree:
        trees["baseline"] = Path(args.baseline_tree).resolve()
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for round_number in range(1, args.runs + 1):
        order = list(trees)
        random.shuffle(order)
        for key in order:
            samples[key].append(trial_once(trees[key], args.ranks))
        log(f"round {round_number}/{args.runs}: " + ", ".join(
            f"{key} {samples[key][-1]['wall']:.2f} s {samples[key][-1]['rss']:.0f} MB"
            for key in trees))
    result: dict[str, Any] = {"runs": args.runs, "ranks": args.ranks,
                              "target_rss_mb": TARGET_RSS_MB, "trees": {}}
    for key, rows in samples.items():
        result["trees"][key] = {metric: statistics.median(row[metric] for row in rows)
                                for metric in ("wall", "cpu", "rss")}
    if "baseline" in samples:
        result["ratios"] = {metric: statistics.median(
            new[metric] / old[metric] for new, old in zip(samples["tree"], samples["baseline"],
                                                          strict=True))
            for metric in ("wall", "cpu", "rss")}
    result["target_met"] = result["trees"]["tree"]["rss"] <= TARGET_RSS_MB
    return result


def render_table(result: dict[str, Any]) -> str:
    lines = [f"a trial of {result['ranks']} rank(s) that never imports torch, "
             f"median of {result['runs']}",
             f"{'tree':<10} {'wall s':>7} {'cpu s':>7} {'rss MB':>7}"]
    for key, row in result["trees"].items():
        lines.append(f"{key:<10} {row['wall']:>7.2f} {row['cpu']:>7.2f} {row['rss']:>7.0f}")
    if "ratios" in result:
        ratios = result["ratios"]
        lines.append(f"tree / baseline (paired, median): wall {ratios['wall']:.2f}, "
                     f"cpu {ratios['cpu']:.2f}, rss {ratios['rss']:.2f}")
    verdict = "met" if result["target_met"] else "missed"
    lines.append(f"target: a rank's rss <= {result['target_rss_mb']:.0f} MB: {verdict}")
    return "\n".join(lines)


def reproduce_command(args: argparse.Namespace) -> str:
    return reproduce_with("bench/trial_start.py", args, parse_args([]))


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args=parse_args, run=run, render_table=render_table,
                      reproduce_command=reproduce_command)


if __name__ == "__main__":
    run_script(main)
