"""How long ``det-master`` takes from its start to its first answer, and the CPU it spends.

Every live master of the test tiers (~170 in CI), every ``systemctl restart`` and every
master an admin starts by hand pays this. A run starts the tree's master ``--runs`` times on
a fresh SQLite database (open auth, one web worker, the reconciler on whatever cluster the
environment names) and times:

* ``up``: from ``Popen`` to the first 200 of ``GET /api/v1/master``;
* ``cpu``: the CPU seconds of the whole master (arbiter, web worker, reconciler process),
  from SIGTERM's end of it (the children's rusage);
* ``stop``: from SIGTERM to its exit.

With ``--baseline-tree DIR`` (e.g. a worktree of main) the same venv starts that tree's
master too (``PYTHONPATH=DIR``), interleaved round by round in a random order, and each
round gives the paired ratio tree / baseline (both run with ``-S``: see ``_path_of``).
``--migrated`` starts each master on a database already at the newest schema (as the test
tiers now do), not an empty one.

Target (mine): the master answers within 3 s on the 2-core dev VM.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # its sibling modules, also when loaded by path

from _common import bench_main, log, reproduce_with, run_script  # noqa: E402

from hpcdet.services.service_file import free_port  # noqa: E402

TARGET_SECONDS = 3.0
UP_TIMEOUT_SECONDS = 120.0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="master starts per tree")
    parser.add_argument("--baseline-tree", default="", help="another tree, timed alongside")
    parser.add_argument("--migrated", action="store_true",
                        help="start on a database at the newest schema already")
    parser.add_argument("--json", action="store_true", help="the result as JSON")
    return parser.parse_args(argv)


def _yaml(port: int, directory: Path) -> str:
    return (f"port: {port}\nhost: 127.0.0.1\ndb:\n  url: sqlite:///{directory}/m.sqlite\n"
            "reconciler:\n  interval_seconds: 1\nwebserver:\n  workers: 1\n  threads: 4\n"
            "auth:\n  mode: open\nresource_manager:\n  master_host: 127.0.0.1\n"
            f"  cluster_name: bench\n  job_storage_root: {directory}/jobs\n  slot_type: cpu\n")


def _path_of(tree: Path) -> str:
    """The tree first, then the venv's packages. Each master runs with ``-S`` (no site):
    the venv's editable install of hpcdet is an import finder (a .pth file) that would
    otherwise win over PYTHONPATH, so that every tree would run the dev venv's hpcdet."""
    return f"{tree}{os.pathsep}{sysconfig.get_paths()['purelib']}"


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def start_once(tree: Path, migrated_template: Path | None) -> dict[str, float]:
    """One master of ``tree``: seconds to its first answer, of CPU, and to stop."""
    with tempfile.TemporaryDirectory(prefix="bench-master-") as name:
        directory = Path(name)
        port = free_port()
        (directory / "master.yaml").write_text(_yaml(port, directory))
        if migrated_template is not None:
            (directory / "m.sqlite").write_bytes(migrated_template.read_bytes())
        env = {**os.environ, "PYTHONPATH": _path_of(tree)}
        argv = [sys.executable, "-S", "-c", "from hpcdet.master.serve import main; main()",
                "--config", str(directory / "master.yaml")]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        with (directory / "master.log").open("wb") as out:
            process = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                                       cwd=directory)  # -c puts the cwd first on sys.path
        url = f"http://127.0.0.1:{port}/api/v1/master"
        while not _answers(url):
            if process.poll() is not None or time.perf_counter() - started > UP_TIMEOUT_SECONDS:
                process.kill()
                raise SystemExit(f"the master of {tree} did not come up: "
                                 + (directory / "master.log").read_text()[-2000:])
            time.sleep(0.02)
        up = time.perf_counter() - started
        stopping = time.perf_counter()
        process.send_signal(signal.SIGTERM)
        process.wait(60)
        stop = time.perf_counter() - stopping
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return {"up": up, "cpu": cpu, "stop": stop}


def _template(tree: Path, directory: Path) -> Path:
    path = directory / "template.sqlite"
    subprocess.run([sys.executable, "-S", "-c", "import sys; from hpcdet.master.db import "
                    "migrate; migrate(sys.argv[1])", f"sqlite:///{path}"], check=True,
                   env={**os.environ, "PYTHONPATH": _path_of(tree)}, capture_output=True,
                   cwd=directory)
    return path


def run(args: argparse.Namespace) -> dict[str, Any]:
    trees = {"tree": REPO}
    if args.baseline_tree:
        trees["baseline"] = Path(args.baseline_tree).resolve()
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="bench-master-templates-") as name:
        templates: dict[str, Path | None] = dict.fromkeys(trees)
        if args.migrated:
            for key, tree in trees.items():
                (Path(name) / key).mkdir()
                templates[key] = _template(tree, Path(name) / key)
        for round_number in range(1, args.runs + 1):
            order = list(trees)
            random.shuffle(order)
            for key in order:
                samples[key].append(start_once(trees[key], templates[key]))
            log(f"round {round_number}/{args.runs}: " + ", ".join(
                f"{key} up {samples[key][-1]['up']:.2f} s" for key in trees))
    result: dict[str, Any] = {"runs": args.runs, "migrated": args.migrated,
                              "target_seconds": TARGET_SECONDS, "trees": {}}
    for key, rows in samples.items():
        result["trees"][key] = {metric: statistics.median(row[metric] for row in rows)
                                for metric in ("up", "cpu", "stop")}
    if "baseline" in samples:
        result["ratio_up"] = statistics.median(
            new["up"] / old["up"] for new, old in zip(samples["tree"], samples["baseline"],
                                                      strict=True))
        result["ratio_cpu"] = statistics.median(
            new["cpu"] / old["cpu"] for new, old in zip(samples["tree"], samples["baseline"],
                                                        strict=True))
    result["target_met"] = result["trees"]["tree"]["up"] <= TARGET_SECONDS
    return result


def render_table(result: dict[str, Any]) -> str:
    lines = [f"det-master start, median of {result['runs']} "
             f"({'migrated' if result['migrated'] else 'empty'} database)",
             f"{'tree':<10} {'up s':>7} {'cpu s':>7} {'stop s':>7}"]
    for key, row in result["trees"].items():
        lines.append(f"{key:<10} {row['up']:>7.2f} {row['cpu']:>7.2f} {row['stop']:>7.2f}")
    if "ratio_up" in result:
        lines.append(f"tree / baseline (paired, median): up {result['ratio_up']:.2f}, "
                     f"cpu {result['ratio_cpu']:.2f}")
    verdict = "met" if result["target_met"] else "missed"
    lines.append(f"target: up <= {result['target_seconds']:.0f} s: {verdict}")
    return "\n".join(lines)


def reproduce_command(args: argparse.Namespace) -> str:
    return reproduce_with("bench/master_start.py", args, parse_args([]))


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args=parse_args, run=run, render_table=render_table,
                      reproduce_command=reproduce_command)


if __name__ == "__main__":
    run_script(main)
