"""How long ``det`` takes to start, as whole processes: ``det --help``, ``det experiment
list`` against a live master and against an unreachable one (issue 20: <= 50 ms).

The same tree is timed as two installs, side by side in one run:

* ``dev``: the development venv's ``det`` console script with ``PYTHONPATH`` set to the
  tree. That venv holds hpcdet as an editable install, and its site runs the editable
  install's import finder (a ``.pth`` file) at every start: ~13 ms that users never pay;
* ``wheel``: ``det`` as users install it (``pip install hpcdet``): a wheel built from a
  copy of the tree, installed with its runtime dependencies (click, PyYAML, pathspec,
  jsonschema and theirs, from the configured package index) into a throwaway venv that
  holds nothing else: no pip or setuptools and no ``.pth`` file. ``--no-wheel`` skips it.

With ``--baseline-tree DIR`` (e.g. main's tree) the dev venv runs the commands with
``PYTHONPATH=DIR`` too. Each command runs as a fresh process, ``--runs`` times,
interleaved: every round runs every command once per install, the installs in a random
order, so that a busy moment of the host hits them alike; each round gives paired ratios
(dev / baseline, wheel / dev) of the wall and of the CPU time. The target is judged on the
wheel install, what users run (on the dev install with ``--no-wheel``).

The live master is a real ``det-master`` (gunicorn, open auth) on a temporary SQLite
database seeded with ``--experiments`` experiments; the unreachable one is a closed port.
Next to them, the floor of each venv: ``python -c pass`` (the venv's site, with its .pth
files) and ``python -S -c pass`` (no site at all).

Then ``python -X importtime`` of each command (median of ``--importtime-runs``): the
modules that cost most (self time, by top-level package) and how many modules the command
imports beyond the interpreter's own start.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
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

from _common import bench_main, log, run_script  # noqa: E402

from hpcdet.services.service_file import free_port  # noqa: E402

TARGET_MS = 50.0
# A probe that runs det as its console script does, then names the modules it imported.
_MODULES_PROBE = ("import sys; base = set(sys.modules); from hpcdet.cli import main\n"
                  "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
                  "print('MODULES', len(set(sys.modules) - base), file=sys.stderr)")
# Lists the distributions installed in a venv (the wheel's runtime dependencies).
_PACKAGES_PROBE = ("import importlib.metadata as m, json\n"
                   "print(json.dumps(sorted(f\"{d.metadata['Name']} {d.version}\" "
                   "for d in m.distributions())))")
# Where the commands run: `python -c` puts the working directory first on sys.path, which
# must not be a tree.
NEUTRAL_DIR = "/"
# What the wheel is built from (copied out of the tree: building in place would leave
# build/ and an egg-info behind).
WHEEL_SOURCES = ("pyproject.toml", "README.md", "hpcdet")
# Where the dev trees' bytecode is cached (a directory of the run, not the trees), or None
# to compile every module from source in every process (--no-bytecode-cache).
PYCACHE: str | None = None
_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")
# Each install's paired ratio is taken against this one.
REFERENCE = {"dev": "baseline", "wheel": "dev"}


@dataclass(frozen=True)
class Install:
    """One way to run det: a venv's Python (its ``det`` script beside it) and the tree put
    on ``PYTHONPATH`` (None: the package installed in the venv itself)."""

    name: str
    python: Path
    tree: Path | None
    runs_floor: bool  # the floor commands run once per venv, with its first install

    @property
    def det(self) -> Path:
        return self.python.parent / "det"


@dataclass(frozen=True)
class Command:
    """One command line to time, and what a correct run of it looks like."""

    name: str
    args: tuple[str, ...]  # what follows the program
    program: str = "det"  # "det": the venv's det script; "python": the venv's Python
    master: str | None = None
    exit_code: int = 0
    expect: str = ""  # a piece of its output (stdout or stderr)
    floor: bool = False  # the interpreter alone: once per venv, not per tree


@dataclass
class Series:
    command: str
    install: str
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)  # the process's user + system time

    def summary(self) -> dict[str, Any]:
        walls = sorted(self.walls)
        p90 = walls[min(len(walls) - 1, int(round(0.9 * (len(walls) - 1))))]
        return {"command": self.command, "install": self.install, "runs": len(walls),
                "median_ms": statistics.median(walls) * 1000, "p90_ms": p90 * 1000,
                "min_ms": walls[0] * 1000, "cpu_median_ms": statistics.median(self.cpus) * 1000}


def commands(live: str, dead: str) -> list[Command]:
    return [
        Command("python -c pass", ("-c", "pass"), program="python", floor=True),
        Command("python -S -c pass", ("-S", "-c", "pass"), program="python", floor=True),
        Command("det --help", ("--help",), expect="Usage: det"),
        Command("det experiment list (live master)", ("experiment", "list"), master=live,
                expect="ID"),
        Command("det experiment list (unreachable)", ("experiment", "list"), master=dead,
                exit_code=1, expect="cannot reach the master"),
    ]


def argv_for(command: Command, install: Install) -> list[str]:
    program = install.det if command.program == "det" else install.python
    return [str(program), *command.args]


def runs_on(command: Command, installs: Sequence[Install]) -> list[Install]:
    return [i for i in installs if i.runs_floor or not command.floor]


def env_for(install: Install, master: str | None) -> dict[str, str]:
    env = {**os.environ, "DET_USER": "alice", "COLUMNS": "120"}
    for name in ("DET_USER_TOKEN", "PYTHONPATH", "PYTHONPYCACHEPREFIX"):
        env.pop(name, None)
    if install.tree is not None:
        env["PYTHONPATH"] = str(install.tree)
    if PYCACHE is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:  # as an installed package runs: from bytecode compiled once
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if install.tree is not None:  # (the wheel's was compiled when it was installed)
            env["PYTHONPYCACHEPREFIX"] = PYCACHE
    if master:
        env["DET_MASTER"] = master
    return env


def run_once(command: Command, install: Install) -> tuple[float, float]:
    """One run: its wall time, and its CPU time (user + system of the reaped child), which
    a busy host inflates far less than the wall time."""
    env = env_for(install, command.master)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.Popen(argv_for(command, install), env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=NEUTRAL_DIR)
    out, err = process.communicate()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    text = (out + err).decode(errors="replace")
    if process.returncode != command.exit_code or command.expect not in text:
        raise SystemExit(f"{command.name} ({install.name} install) exited "
                         f"{process.returncode}:\n{text[-2000:]}")
    return wall, cpu


def time_commands(cmds: Sequence[Command], installs: Sequence[Install], runs: int,
                  rng: random.Random) -> list[Series]:
    series = {(c.name, i.name): Series(c.name, i.name) for c in cmds
              for i in runs_on(c, installs)}
    for _ in range(runs):
        for command in cmds:
            order = runs_on(command, installs)
            rng.shuffle(order)
            for install in order:
                wall, cpu = run_once(command, install)
                series[(command.name, install.name)].walls.append(wall)
                series[(command.name, install.name)].cpus.append(cpu)
    return list(series.values())


def paired_ratios(series: Sequence[Series], *, cpu: bool = False) -> dict[str, dict[str, float]]:
    """Per install, per command: the median over rounds of its wall (or CPU) time / its
    reference's (:data:`REFERENCE`)."""
    by_key = {(s.command, s.install): s for s in series}
    ratios: dict[str, dict[str, float]] = defaultdict(dict)
    for (command, install), mine in by_key.items():
        base = by_key.get((command, REFERENCE.get(install, "")))
        if base is not None:
            pairs = zip(mine.cpus, base.cpus, strict=True) if cpu else zip(
                mine.walls, base.walls, strict=True)
            ratios[install][command] = statistics.median(a / b for a, b in pairs)
    return dict(ratios)


def import_profile(command: Command, install: Install, runs: int, top: int) -> dict[str, Any]:
    """``-X importtime`` of one command: self time per top-level package (median of
    ``runs``), the biggest modules, and how many modules it imports beyond the start."""
    per_package: dict[str, list[float]] = defaultdict(list)
    per_module: dict[str, list[float]] = defaultdict(list)
    env = env_for(install, command.master)
    for _ in range(runs):
        argv = [str(install.python), "-X", "importtime", *argv_for(command, install)]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False,
                              cwd=NEUTRAL_DIR)
        packages: dict[str, float] = defaultdict(float)
        for line in done.stderr.splitlines():
            match = _IMPORT_LINE.match(line)
            if match:
                self_us, module = int(match.group(1)), match.group(4)
                per_module[module].append(self_us / 1000)
                packages[_package(module)] += self_us / 1000
        for package, total in packages.items():
            per_package[package].append(total)
    probe = subprocess.run([str(install.python), "-c", _MODULES_PROBE, *command.args],
                           env=env, capture_output=True, text=True, check=False,
                           cwd=NEUTRAL_DIR)
    found = re.search(r"MODULES (\d+)", probe.stderr)
    packages_ms = sorted(((p, statistics.median(v)) for p, v in per_package.items()),
                         key=lambda item: -item[1])
    modules_ms = sorted(((m, statistics.median(v)) for m, v in per_module.items()),
                        key=lambda item: -item[1])
    return {"command": command.name, "install": install.name,
            "modules": int(found.group(1)) if found else None,
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


# ---- the wheel install ------------------------------------------------------------------


def wheel_install(workdir: Path, *, compile_bytecode: bool) -> tuple[Install, list[str]]:
    """Build a wheel of this tree and install it, with its runtime dependencies only, into
    a new venv under ``workdir`` that holds nothing else; the install, and the
    distributions in its venv."""
    source, dist, venv = workdir / "src", workdir / "dist", workdir / "wheel-venv"
    source.mkdir(parents=True)
    for name in WHEEL_SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / name, source / name)
    log("building the wheel and installing it into a new venv ...")
    _pip("wheel", "--no-deps", "--no-build-isolation", "--quiet", "--wheel-dir", str(dist),
         str(source))
    wheel = next(dist.glob("hpcdet-*.whl"))
    # --without-pip: a user's venv may hold pip and setuptools too, but what det costs is
    # hpcdet's and its dependencies' own; this venv's pip is the dev venv's (pip --python).
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    _pip("--python", str(python), "install", "--quiet",
         *([] if compile_bytecode else ["--no-compile"]), str(wheel))
    listed = subprocess.run([str(python), "-c", _PACKAGES_PROBE], capture_output=True,
                            text=True, check=True, cwd=NEUTRAL_DIR)
    return Install("wheel", python, None, runs_floor=True), json.loads(listed.stdout)


def _pip(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True,
                          text=True, check=False, cwd=NEUTRAL_DIR,
                          env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    if done.returncode != 0:
        raise SystemExit(f"pip {' '.join(args[:3])} ... failed (--no-wheel skips the wheel "
                         f"install):\n{done.stderr[-2000:]}")


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


def dev_installs(baseline_tree: str | None) -> list[Install]:
    dev_python = Path(sys.executable)
    installs = [Install("dev", dev_python, REPO, runs_floor=True)]
    if baseline_tree:
        installs.append(Install("baseline", dev_python, Path(baseline_tree).resolve(),
                                runs_floor=False))
    return installs


def run(args: argparse.Namespace) -> dict[str, Any]:
    installs = dev_installs(args.baseline_tree)
    rng = random.Random(args.seed)
    global PYCACHE
    wheel_packages: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        PYCACHE = None if args.no_bytecode_cache else str(Path(tmp) / "pycache")
        if not args.no_wheel:
            wheel, wheel_packages = wheel_install(Path(tmp) / "wheel",
                                                  compile_bytecode=not args.no_bytecode_cache)
            installs.append(wheel)
        master, live = seeded_master(Path(tmp), args.experiments)
        try:
            cmds = commands(live, f"http://127.0.0.1:{free_port()}")
            for command in cmds:  # warm the page cache and check each once
                for install in runs_on(command, installs):
                    run_once(command, install)
            series = time_commands(cmds, installs, args.runs, rng)
            profiles = [import_profile(c, i, args.importtime_runs, args.top)
                        for c in cmds if not c.floor for i in installs]
        finally:
            stop(master)
    return summarize(args, installs, series, profiles, wheel_packages)


def summarize(args: argparse.Namespace, installs: Sequence[Install], series: Sequence[Series],
              profiles: list[dict[str, Any]], wheel_packages: list[str]) -> dict[str, Any]:
    rows = [s.summary() for s in series]
    judged = "dev" if args.no_wheel else "wheel"
    for row in rows:
        if row["command"].startswith("det "):
            row["target_met"] = row["median_ms"] <= TARGET_MS
    return {"runs": args.runs, "bytecode_cache": not args.no_bytecode_cache,
            "target_ms": TARGET_MS, "judged_on": judged,
            "installs": {i.name: {"python": str(i.python), "tree": str(i.tree or "")}
                         for i in installs},
            "wheel_packages": wheel_packages,
            "load_average": os.getloadavg(), "cpus": os.cpu_count(), "rows": rows,
            "paired_ratio": paired_ratios(series),
            "paired_cpu_ratio": paired_ratios(series, cpu=True), "imports": profiles,
            "target_met": all(r["target_met"] for r in rows
                              if r["install"] == judged and "target_met" in r)}


def reproduce_command(args: argparse.Namespace) -> str:
    flags = [f"--runs={args.runs}", f"--experiments={args.experiments}",
             f"--importtime-runs={args.importtime_runs}"]
    flags += [f"--baseline-tree={args.baseline_tree}"] if args.baseline_tree else []
    flags += ["--no-bytecode-cache"] if args.no_bytecode_cache else []
    flags += ["--no-wheel"] if args.no_wheel else []
    flags += ["--json"] if args.json else []
    return f"PYTHONPATH=$PWD .venv/bin/python bench/cli_start.py {' '.join(flags)}"


def render_table(result: dict[str, Any]) -> str:
    load = ", ".join(f"{x:.2f}" for x in result["load_average"])
    cache = "cached bytecode" if result["bytecode_cache"] else "no bytecode cache"
    lines = [f"det cold start, whole processes, {result['runs']} interleaved rounds, {cache}; "
             f"{result['cpus']} CPUs, load average {load}; target judged on the "
             f"{result['judged_on']} install", "",
             "| command | install | median ms | p90 ms | min ms | CPU ms (median) "
             "| paired ratio, wall / CPU | <= 50 ms |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    for row in result["rows"]:
        ratio = result["paired_ratio"].get(row["install"], {}).get(row["command"])
        cpu = result["paired_cpu_ratio"].get(row["install"], {}).get(row["command"])
        shown = f"{ratio:.2f} / {cpu:.2f} (/ {REFERENCE[row['install']]})" if ratio else ""
        met = {True: "met", False: "not met"}.get(row.get("target_met"), "")
        lines.append(f"| {row['command']} | {row['install']} | {row['median_ms']:.1f} | "
                     f"{row['p90_ms']:.1f} | {row['min_ms']:.1f} | {row['cpu_median_ms']:.1f} | "
                     f"{shown} | {met} |")
    if result["wheel_packages"]:
        lines += ["", "The wheel's venv: " + ", ".join(result["wheel_packages"])]
    for profile in result["imports"]:
        lines += ["", f"`-X importtime`, {profile['command']} ({profile['install']} install): "
                      f"{profile['modules']} modules beyond the interpreter's start, "
                      f"{profile['import_ms']:.1f} ms of imports (self times, median)", "",
                  "| package or module | self ms |", "|---|---:|"]
        lines += [f"| {p['package']} | {p['self_ms']:.1f} |" for p in profile["packages"]]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40, help="rounds (each runs every command "
                        "once per install)")
    parser.add_argument("--experiments", type=int, default=20,
                        help="experiments in the live master's database")
    parser.add_argument("--importtime-runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=12, help="packages shown per profile")
    parser.add_argument("--baseline-tree", metavar="DIR",
                        help="a checkout to compare with (e.g. main's tree), run by the dev venv")
    parser.add_argument("--no-wheel", action="store_true",
                        help="do not build and time the wheel install (it needs the package "
                        "index for the dependencies); the target is then judged on the dev "
                        "venv")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="compile every module from source in every run (as with "
                        "PYTHONDONTWRITEBYTECODE=1; the wheel is installed --no-compile); by "
                        "default bytecode is cached, as an installed package's is")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(argv, parse_args=parse_args, run=run, render_table=render_table,
                      reproduce_command=reproduce_command)


if __name__ == "__main__":
    run_script(main)
