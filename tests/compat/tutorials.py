"""Shared helpers of the compat tier: Determined's tutorials, run unchanged but for imports.

Two copies of every tutorial live in the tree:

* ``tests/data/determined/tutorials/<dir>/``: Determined's originals, byte for byte;
* ``tests/compat/tutorials/<dir>/``: the copies hpcdet runs.

:func:`check_only_allowed_changes` fails a test when a copy differs from its original in
anything but these (everything else must be identical, line for line):

1. **Import lines** (``import determined as det``, ``from determined import pytorch``,
   ``from determined.pytorch import X``): the copy's line is the original with the module
   ``determined`` renamed ``hpcdet``, nothing else.
2. **Module names in strings**: ``"determined.launch.wrap_rank"`` -> ``"hpcdet.launch.wrap_rank"``
   (a subprocess command naming Determined's launcher module), the rest of the line unchanged.
3. **An added import of the synthetic data module** (``from synthetic_mnist import ...`` or
   ``import synthetic_mnist``), anywhere.
4. **Dataset regions**: lines between ``# hpcdet-compat: synthetic data begin`` and
   ``# hpcdet-compat: synthetic data end`` in the copy replace a run of original lines,
   each of which must match one of the test's ``dataset_patterns`` (regular expressions,
   searched in the line): the MNIST download lines, nothing else.
5. **Declared changes**: exact ``(original line, copy line)`` pairs a test lists, for a YAML
   field hpcdet needs differently (each one must be named in the test and the docs).

:func:`run_local` runs a tutorial with ``det experiment create --local``;
:func:`run_on_cluster` submits it to a live master on the dev Slurm cluster
(``tests/integration``'s ``master`` fixture) and waits until it ends.

Every run gets a fresh context directory: the hpcdet copy of the tutorial plus
``synthetic_mnist.py``, so the copies never collect checkpoints or data.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ORIGINALS = REPO / "tests" / "data" / "determined" / "tutorials"
COPIES = Path(__file__).resolve().parent / "tutorials"
SYNTHETIC_MODULE = COPIES / "synthetic_mnist.py"
BIN = Path(sys.executable).parent

REGION_BEGIN = "# hpcdet-compat: synthetic data begin"
REGION_END = "# hpcdet-compat: synthetic data end"
_REGION = "\0hpcdet-compat-region\0"  # stands for one dataset region while diffing
_IMPORT_LINE = re.compile(r"^\s*(import|from)\s+hpcdet\b")
_MODULE_STRING = re.compile(r"""(["'])hpcdet\.launch\.""")
_SYNTHETIC_IMPORT = re.compile(r"^\s*(from\s+synthetic_mnist\s+import\s+[\w, ()]+|"
                               r"import\s+synthetic_mnist(\s+as\s+\w+)?)\s*$")


# --- (a) the diff against Determined's original ---------------------------------------


def original_path(tutorial: str, name: str) -> Path:
    """Determined's file ``name`` of tutorial directory ``tutorial``."""
    return ORIGINALS / tutorial / name


def copy_path(tutorial: str, name: str) -> Path:
    """hpcdet's runnable copy of that file."""
    return COPIES / tutorial / name


def check_only_allowed_changes(
    tutorial: str,
    name: str,
    *,
    dataset_patterns: Sequence[str] = (),
    declared_changes: Sequence[tuple[str, str]] = (),
) -> None:
    """Fail (AssertionError listing every offending line) unless the hpcdet copy of
    ``tutorial/name`` differs from Determined's only as the module docstring allows."""
    original = original_path(tutorial, name).read_text().splitlines()
    copy = copy_path(tutorial, name).read_text().splitlines()
    problems = disallowed_changes(original, copy, dataset_patterns=dataset_patterns,
                                  declared_changes=declared_changes)
    if problems:
        raise AssertionError(f"{tutorial}/{name}: the hpcdet copy differs from Determined's "
                             "beyond its imports and dataset lines:\n" + "\n".join(problems))


def disallowed_changes(
    original: Sequence[str],
    copy: Sequence[str],
    *,
    dataset_patterns: Sequence[str] = (),
    declared_changes: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """Every difference of ``copy`` from ``original`` that the rules do not allow."""
    problems: list[str] = []
    normal = _normalised_copy(list(copy), dict((new, old) for old, new in declared_changes),
                              problems)
    patterns = [re.compile(p) for p in dataset_patterns]
    matcher = difflib.SequenceMatcher(a=list(original), b=normal, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        removed, added = list(original[i1:i2]), normal[j1:j2]
        if added.count(_REGION) == 1 and len(added) == 1 and removed:
            problems.extend(f"original line {i1 + k + 1} replaced by a dataset region but "
                            f"matches no dataset pattern: {line!r}"
                            for k, line in enumerate(removed)
                            if not any(p.search(line) for p in patterns))
            continue
        problems.extend(f"original line {i1 + k + 1} removed or changed: {line!r}"
                        for k, line in enumerate(removed))
        problems.extend(f"added or changed line: {line!r}" if line != _REGION else
                        "a dataset region replaces no original line" for line in added)
    return problems


def _normalised_copy(copy: list[str], declared: dict[str, str],
                     problems: list[str]) -> list[str]:
    """The copy with every allowed change undone, and each dataset region one marker."""
    out: list[str] = []
    in_region = False
    for number, line in enumerate(copy, start=1):
        stripped = line.strip()
        if stripped == REGION_BEGIN:
            if in_region:
                problems.append(f"copy line {number}: a dataset region inside another")
            in_region = True
            out.append(_REGION)
        elif stripped == REGION_END:
            if not in_region:
                problems.append(f"copy line {number}: a dataset region end without a begin")
            in_region = False
        elif not in_region and not _SYNTHETIC_IMPORT.match(line):
            out.append(_undo_rename(declared.get(line, line)))
    if in_region:
        problems.append("a dataset region is not closed")
    return out


def _undo_rename(line: str) -> str:
    if _IMPORT_LINE.match(line):
        return re.sub(r"\bhpcdet\b", "determined", line)
    return _MODULE_STRING.sub(r"\1determined.launch.", line)


# --- (b) and (c): running a tutorial -----------------------------------------------------


def make_context(tutorial: str, where: Path) -> Path:
    """A fresh context directory: the hpcdet copy of ``tutorial`` plus the synthetic data."""
    context = where / f"ctx-{tutorial}"
    if context.exists():
        shutil.rmtree(context)
    shutil.copytree(COPIES / tutorial, context,
                    ignore=shutil.ignore_patterns("__pycache__", "checkpoints", "lock"))
    shutil.copy(SYNTHETIC_MODULE, context / SYNTHETIC_MODULE.name)
    return context


def tool_environ(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for ``det`` and the tutorials: this checkout's hpcdet, the venv's
    ``python3`` first on PATH (tutorials start ``python3`` themselves), one thread per op."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra or {})
    return env


_DUMMY_METRICS = re.compile(
    r"hpcdet core \(dummy\): (training|validation) steps_completed=(\d+)(( \S+=\S+)*)$")


@dataclass
class LocalRun:
    """What ``det experiment create --local`` did: exit code, output, reported metrics and
    the checkpoint directories it left in the context."""

    returncode: int
    stdout: str
    stderr: str
    context: Path
    metrics: dict[str, list[tuple[int, dict[str, float]]]] = field(default_factory=dict)

    @property
    def checkpoints(self) -> list[Path]:
        """Checkpoint directories (``CONTEXT/checkpoints/<uuid>``), oldest first."""
        root = self.context / "checkpoints"
        dirs = [p for p in root.iterdir() if p.is_dir()] if root.is_dir() else []
        return sorted(dirs, key=lambda p: p.stat().st_mtime)

    def explain(self) -> str:
        return f"exit {self.returncode}\nstdout:\n{self.stdout[-3000:]}\nstderr:\n" \
               f"{self.stderr[-6000:]}"


def run_local(tutorial: str, config: str, where: Path, *, overrides: Sequence[str] = (),
              timeout: float = 600) -> LocalRun:
    """Run ``det experiment create --local CONFIG CONTEXT`` on a fresh context."""
    context = make_context(tutorial, where)
    argv = [str(BIN / "det"), "experiment", "create", "--local", str(context / config),
            str(context)]
    for override in overrides:
        argv += ["--config", override]
    result = subprocess.run(argv, env=tool_environ(), capture_output=True, text=True,
                            timeout=timeout, cwd=where)
    run = LocalRun(result.returncode, result.stdout, result.stderr, context)
    run.metrics = parse_dummy_metrics(result.stderr)
    return run


def parse_dummy_metrics(stderr: str) -> dict[str, list[tuple[int, dict[str, float]]]]:
    """``{group: [(steps_completed, metrics), ...]}`` from the dummy train context's lines."""
    out: dict[str, list[tuple[int, dict[str, float]]]] = {"training": [], "validation": []}
    for line in stderr.splitlines():
        match = _DUMMY_METRICS.search(line.strip())
        if match:
            values = dict(pair.split("=", 1) for pair in match[3].split())
            out[match[1]].append((int(match[2]), {k: float(v) for k, v in values.items()}))
    return out


@dataclass
class ClusterTrial:
    """One trial as the master reports it: its record, metrics and checkpoints."""

    detail: dict[str, Any]
    training: list[dict[str, Any]]
    validation: list[dict[str, Any]]

    @property
    def id(self) -> int:
        return int(self.detail["trial"]["id"])

    @property
    def state(self) -> str:
        return str(self.detail["trial"]["state"])

    @property
    def checkpoints(self) -> list[dict[str, Any]]:
        return list(self.detail.get("checkpoints") or [])


@dataclass
class ClusterRun:
    """An experiment that ended on the dev cluster."""

    experiment_id: int
    experiment: dict[str, Any]
    trials: list[ClusterTrial]

    @property
    def state(self) -> str:
        return str(self.experiment["experiment"]["state"])


def run_on_cluster(master: Any, tutorial: str, config: str, where: Path, *,
                   overrides: Sequence[str] = (), timeout: float = 900) -> ClusterRun:
    """Submit the tutorial to ``master`` (a ``tests/integration`` LiveMaster) and wait for
    the experiment to end; raises AssertionError with the logs when it is not COMPLETED."""
    context = make_context(tutorial, where)
    args = ["experiment", "create", str(context / config), str(context)]
    for override in overrides:
        args += ["--config", override]
    created = master.det(*args, check=True)
    line = next(li for li in created.stdout.splitlines() if li.startswith("Created experiment"))
    exp_id = int(line.split()[-1])
    exp = _wait_until_ended(master, exp_id, timeout)
    trials = [_cluster_trial(master, int(t["id"])) for t in exp["trials"]]
    run = ClusterRun(exp_id, exp, trials)
    if run.state != "COMPLETED":
        raise AssertionError(f"experiment {exp_id} ended {run.state}:\n"
                             + _failure_logs(master, run))
    return run


def describe(master: Any, exp_id: int) -> dict[str, Any]:
    out = master.det("experiment", "describe", str(exp_id), "--json", check=True).stdout
    return dict(json.loads(out))


def _wait_until_ended(master: Any, exp_id: int, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        exp = describe(master, exp_id)
        if exp["experiment"]["ended_at"]:
            return exp
        time.sleep(1)
    exp = describe(master, exp_id)
    run = ClusterRun(exp_id, exp, [_cluster_trial(master, int(t["id"])) for t in exp["trials"]])
    raise AssertionError(f"experiment {exp_id} did not end in {timeout:.0f} s:\n"
                         + _failure_logs(master, run))


def _cluster_trial(master: Any, trial_id: int) -> ClusterTrial:
    detail = json.loads(master.det("trial", "describe", str(trial_id), "--json",
                                   check=True).stdout)
    return ClusterTrial(dict(detail), _metrics(master, trial_id, "training"),
                        _metrics(master, trial_id, "validation"))


def _metrics(master: Any, trial_id: int, group: str) -> list[dict[str, Any]]:
    return list(master.api(f"/trials/{trial_id}/metrics?group={group}")["metrics"])


def trial_log(master: Any, trial_id: int) -> list[str]:
    """The trial's log lines as the master stores them."""
    return [entry["line"] for entry in master.api(f"/trials/{trial_id}/logs")["logs"]]


def _failure_logs(master: Any, run: ClusterRun) -> str:
    parts = [json.dumps(run.experiment, indent=1)[-3000:]]
    for trial in run.trials:
        if trial.state != "COMPLETED":
            parts.append(f"trial {trial.id} ({trial.state}) log:\n"
                         + "\n".join(trial_log(master, trial.id)[-80:]))
    parts.append("master log:\n" + master.log.read_text()[-2000:])
    return "\n".join(parts)
