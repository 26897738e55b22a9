"""How long ``det`` takes to start, as whole processes: ``det --help``, ``det experiment
list`` against a live master and against an unreachable one (issue 20: <= 50 ms).

Each command runs as a fresh process (the venv's ``det`` console script, as a user runs
it), ``--runs`` times, interleaved: every round runs every command once per tree, the trees
in a random order, so that a busy moment of the host hits both alike. With
``--baseline-tree DIR`` (e.g. a worktree of main) the same commands run with
``PYTHONPATH=DIR`` too, and each round gives a paired ratio (this tree / baseline).

The live master is a real ``det-master`` (gunicorn, open auth) on a temporary SQLite
database seeded with ``--experiments`` experiments; the unreachable one is a closed port.
Next to them, the floor: ``python -c pass`` (with the venv's site, which runs its .pth
files: the editable install's finder) and ``python -S -c pass`` (no site at all); and
``det`` run with ``python -S`` and site-packages on ``PYTHONPATH``: what it costs without
the editable finder, as a regular (wheel) install would run it, less site's own ~2 ms.

Then ``python -X importtime`` of each command (median of ``--importtime-runs``): the
modules that cost most (self time, by top-level package) and how many modules the command
imports beyond the interpreter's own start.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # its sibling modules, also when loaded by path

from _common import bench_main, run_script  # noqa: E402

from hpcdet.services.service_file import free_port  # noqa: E402

TARGET_MS = 50.0
BIN = Path(sys.executable).parent
# A probe that runs det as its console script does, then names the modules it imported.
_MODULES_PROBE = ("import sys; base = set(sys.modules); from hpcdet.cli import main\n"
                  "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
                  "print('MODULES', len(set(sys.modules) - base), file=sys.stderr)")
# Where the commands run: `python -c` puts the working directory first on sys.path, which
# must not be a tree.
NEUTRAL_DIR = "/"
# Where the trees' bytecode is cached (a directory of the run, not the trees), or None to
# compile every module from source in every process (--no-bytecode-cache).
PYCACHE: str | None = None
_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


@dataclass(frozen=True)
class Command:
    """One command line to time, and what a correct run of it looks like."""

    name: str
    argv: tuple[str, ...]
    master: str | None = None
    exit_code: int = 0
    expect: str = ""  # a piece of its output (stdout or stderr)
    per_tree: bool = True  # False: the floor, the same for every tree
    # Run without site (python -S, site-packages put on PYTHONPATH instead): what det costs
    # without the venv's .pth files, i.e. without the editable install's import finder.
    no_site: bool = False


@dataclass
class Series:
    command: str
    tree: str
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)  # the process's user + system time

    def summary(self) -> dict[str, Any]:
        walls = sorted(self.walls)
        p90 = walls[min(len(walls) - 1, int(round(0.9 * (len(walls) - 1))))]
        return {"command": self.command, "tree": self.tree, "runs": len(walls),
                "median_ms": statistics.median(walls) * 1000, "p90_ms": p90 * 1000,
                "min_ms": walls[0] * 1000, "cpu_median_ms": statistics.median(self.cpus) * 1000}


def commands(live: str, dead: str) -> list[Command]:
    det = str(BIN / "det")
    python = sys.executable
    return [
        Command("python -c pass", (python, "-c", "pass"), per_tree=False),
        Command("python -S -c pass", (python, "-S", "-c", "pass"), per_tree=False),
        Command("det --help", (det, "--help"), expect="Usage: det"),
        Command("det experiment list (live master)", (det, "experiment", "list"), live,
                expect="ID"),
        Command("det experiment list (unreachable)", (det, "experiment", "list"), dead,
                exit_code=1, expect="cannot reach the master"),
        Command("det --help, python -S", (python, "-S", det, "--help"), expect="Usage: det",
                no_site=True),
        Command("det experiment list (live master), python -S",
                (python, "-S", det, "experiment", "list"), live, expect="ID", no_site=True),
    ]


def env_for(tree: Path, master: str | None, *, no_site: bool = False) -> dict[str, str]:
    path = [str(tree), *(sysconfig.get_paths()["purelib"],) * no_site]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "DET_USER": "alice",
           "COLUMNS": "120"}
    env.pop("DET_USER_TOKEN", None)
    if PYCACHE is not None:  # as an installed package runs: from bytecode compiled once
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = PYCACHE
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    if master:
        env["DET_MASTER"] = master
    return env


def run_once(command: Command, tree: Path) -> tuple[float, float]:
    """One run: its wall time, and its CPU time (user + system of the reaped child), which
    a busy host inflates far less than the wall time."""
    env = env_for(tree, command.master, no_site=command.no_site)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.Popen(command.argv, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=NEUTRAL_DIR)
    out, err = process.communicate()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    text = (out + err).decode(errors="replace")
    if process.returncode != command.exit_code or command.expect not in text:
        raise SystemExit(f"{command.name} with PYTHONPATH={tree} exited "
                         f"{process.returncode}:\n{text[-2000:]}")
    return wall, cpu


def time_commands(cmds: Sequence[Command], trees: dict[str, Path], runs: int,
                  rng: random.Random) -> list[Series]:
    series = {(c.name, t): Series(c.name, t) for c in cmds
              for t in (trees if c.per_tree else ["-"])}
    for _ in range(runs):
        for command in cmds:
            names = list(trees) if command.per_tree else ["-"]
            rng.shuffle(names)
            for name in names:
                tree = trees.get(name, next(iter(trees.values())))
                wall, cpu = run_once(command, tree)
                series[(command.name, name)].walls.append(wall)
                series[(command.name, name)].cpus.append(cpu)
    return list(series.values())


def paired_ratios(series: Sequence[Series]) -> dict[str, float]:
    """Per command: the median over rounds of this tree's wall / the baseline's."""
    by_key = {(s.command, s.tree): s for s in series}
    ratios = {}
    for (command, tree), mine in by_key.items():
        base = by_key.get((command, "baseline"))
        if tree == "this" and base is not None:
            ratios[command] = statistics.median(
                a / b for a, b in zip(mine.walls, base.walls, strict=True))
    return ratios


def import_profile(command: Command, tree: Path, runs: int, top: int) -> dict[str, Any]:
    """``-X importtime`` of one command: self time per top-level package (median of
    ``runs``), the biggest modules, and how many modules it imports beyond the start."""
    per_package: dict[str, list[float]] = defaultdict(list)
    per_module: dict[str, list[float]] = defaultdict(list)
    for _ in range(runs):
        argv = [sys.executable, "-X", "importtime", *command.argv]
        done = subprocess.run(argv, env=env_for(tree, command.master), capture_output=True,
                              text=True, check=False, cwd=NEUTRAL_DIR)
        packages: dict[str, float] = defaultdict(float)
        for line in done.stderr.splitlines():
            match = _IMPORT_LINE.match(line)
            if match:
                self_us, module = int(match.group(1)), match.group(4)
                per_module[module].append(self_us / 1000)
                packages[_package(module)] += self_us / 1000
        for package, total in packages.items():
            per_package[package].append(total)
    probe = subprocess.run([sys.executable, "-c", _MODULES_PROBE, *command.argv[1:]],
                           env=env_for(tree, command.master), capture_output=True, text=True,
                           check=False, cwd=NEUTRAL_DIR)
    found = re.search(r"MODULES (\d+)", probe.stderr)
    packages_ms = sorted(((p, statistics.median(v)) for p, v in per_package.items()),
                         key=lambda item: -item[1])
    modules_ms = sorted(((m, statistics.median(v)) for m, v in per_module.items()),
                        key=lambda item: -item[1])
    return {"command": command.name, "modules": int(found.group(1)) if found else None,
            "import_ms": sum(ms for _, ms in packages_ms),
            "packages": [{"package": p, "self_ms": ms} for p, ms in packages_ms[:top]],
            "modules_top": [{"module": m, "self_ms": ms} for m, ms in modules_ms[:top]]}


def _package(module: str) -> str:
    """``hpcdet.cli.trial`` stays whole (the project's modules are what we can change);
    ``email.feedparser`` becomes ``email``; the editable finder is ``site``."""
    if module.startswith("hpcdet."):
        return module
    if module.startswith("__editable__"):
        return "site (editable install finder)"
    return module.split(".")[0]


# ---- the live master --------------------------------------------------------------------


def seeded_master(workdir: Path, experiments: int) -> Any:
    """A det-master process over a SQLite database holding ``experiments`` experiments."""
    from proxy_ws import start_master  # heavy imports (the master's): only here
    from sqlalchemy import insert
    from web_experiments import experiment_rows

    from hpcdet.master.db import make_engine, make_session_factory, migrate, session_scope
    from hpcdet.master.models import Experiment

    url = f"sqlite:///{workdir / 'master.sqlite'}"
    migrate(url)
    rows = experiment_rows(experiments, random.Random(7))
    for row in rows:
        row["owner"] = "alice"
    with session_scope(make_session_factory(make_engine(url))) as session:
        session.execute(insert(Experiment), rows)
    port = free_port()
    return start_master(workdir, port, workers=1, threads=4), f"http://127.0.0.1:{port}"


def stop(process: Any) -> None:
    import signal

    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(process.pid, signal.SIGKILL)


# ---- run and report ---------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    trees = {"this": REPO}
    if args.baseline_tree:
        trees["baseline"] = Path(args.baseline_tree).resolve()
    rng = random.Random(args.seed)
    global PYCACHE
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        PYCACHE = None if args.no_bytecode_cache else str(Path(tmp) / "pycache")
        master, live = seeded_master(Path(tmp), args.experiments)
        try:
            cmds = commands(live, f"http://127.0.0.1:{free_port()}")
            for command in cmds:  # warm the page cache and check each once
                for tree in trees.values():
                    run_once(command, tree)
            series = time_commands(cmds, trees, args.runs, rng)
            profiles = [{"tree": name, **import_profile(c, tree, args.importtime_runs,
                                                         args.top)}
                        for c in cmds if c.per_tree and not c.no_site
                        for name, tree in trees.items()]
        finally:
            stop(master)
    rows = [s.summary() for s in series]
    for row in rows:
        if row["command"].startswith("det "):
            row["target_met"] = row["median_ms"] <= TARGET_MS
    ratios = paired_ratios(series)
    return {"runs": args.runs, "bytecode_cache": not args.no_bytecode_cache,
            "target_ms": TARGET_MS, "trees": {k: str(v) for k, v in
                                                                 trees.items()},
            "load_average": os.getloadavg(), "cpus": os.cpu_count(), "rows": rows,
            "paired_ratio": ratios, "imports": profiles,
            "target_met": all(r["target_met"] for r in rows
                              if r["tree"] == "this" and "target_met" in r)}


def reproduce_command(args: argparse.Namespace) -> str:
    flags = [f"--runs={args.runs}", f"--experiments={args.experiments}",
             f"--importtime-runs={args.importtime_runs}"]
    flags += [f"--baseline-tree={args.baseline_tree}"] if args.baseline_tree else []
    flags += ["--no-bytecode-cache"] if args.no_bytecode_cache else []
    flags += ["--json"] if args.json else []
    return f"PYTHONPATH=$PWD .venv/bin/python bench/cli_start.py {' '.join(flags)}"


def render_table(result: dict[str, Any]) -> str:
    load = ", ".join(f"{x:.2f}" for x in result["load_average"])
    cache = "cached bytecode" if result["bytecode_cache"] else "no bytecode cache"
    lines = [f"det cold start, whole processes, {result['runs']} interleaved rounds, {cache}; "
             f"{result['cpus']} CPUs, load average {load}", "",
             "| command | tree | median ms | p90 ms | min ms | CPU ms (median) | vs baseline "
             "| <= 50 ms |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for row in result["rows"]:
        ratio = result["paired_ratio"].get(row["command"]) if row["tree"] == "this" else None
        met = {True: "met", False: "not met"}.get(row.get("target_met"), "")
        lines.append(f"| {row['command']} | {row['tree']} | {row['median_ms']:.1f} | "
                     f"{row['p90_ms']:.1f} | {row['min_ms']:.1f} | {row['cpu_median_ms']:.1f} | "
                     f"{f'{ratio:.2f}' if ratio else ''} | {met} |")
    for profile in result["imports"]:
        lines += ["", f"`-X importtime`, {profile['command']} ({profile['tree']} tree): "
                      f"{profile['modules']} modules beyond the interpreter's start, "
                      f"{profile['import_ms']:.1f} ms of imports (self times, median)", "",
                  "| package or module | self ms |", "|---|---:|"]
        lines += [f"| {p['package']} | {p['self_ms']:.1f} |" for p in profile["packages"]]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40, help="rounds (each runs every command "
                        "once per tree)")
    parser.add_argument("--experiments", type=int, default=20,
                        help="experiments in the live master's database")
    parser.add_argument("--importtime-runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=12, help="packages shown per profile")
    parser.add_argument("--baseline-tree", metavar="DIR",
                        help="a checkout to compare with (e.g. a worktree of main)")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="compile every module from source in every run (as with "
                        "PYTHONDONTWRITEBYTECODE=1); by default bytecode is cached, as an "
                        "installed package's is")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args=parse_args, run=run, render_table=render_table,
                      reproduce_command=reproduce_command)


if __name__ == "__main__":
    run_script(main)
