"""Determined's ``core_api`` tutorial, Determined's files byte for byte, through the shim.

hpcdet's optional ``determined`` shim (``compat/determined-shim``) is put on ``PYTHONPATH``
(never installed into the test environment); the context directory holds copies of
Determined's originals (``tests/data/determined/tutorials/core_api``), compared byte for
byte before each run. Stage 1 runs as a plain script outside any job (the Core API's dummy
contexts print its metrics); stage 4 runs with ``det experiment create --local``: its
launcher starts its worker with ``python3 -m determined.launch.wrap_rank``, which the shim
serves in that child process too. Each run takes about 10 s (the tutorial sleeps 0.1 s per
step).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tutorials import BIN, REPO, original_path, parse_dummy_metrics, tool_environ

pytestmark = pytest.mark.compat

TUTORIAL = "core_api"
SHIM_DIR = REPO / "compat" / "determined-shim"
TENS = list(range(10, 101, 10))


def _originals(tmp_path: Path, *names: str) -> Path:
    """A context directory of Determined's files ``names``, unchanged."""
    context = tmp_path / "ctx"
    context.mkdir()
    for name in names:
        shutil.copyfile(original_path(TUTORIAL, name), context / name)
        assert (context / name).read_bytes() == original_path(TUTORIAL, name).read_bytes()
    return context


def _environ(*, shim: bool = True) -> dict[str, str]:
    """The tutorials' environment, with the shim first on PYTHONPATH (or without it)."""
    env = tool_environ()
    parts = [str(SHIM_DIR)] if shim else []
    env["PYTHONPATH"] = os.pathsep.join([*parts, str(REPO), os.environ.get("PYTHONPATH", "")])
    return env


def _run(argv: list[str], context: Path, *, shim: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=context, env=_environ(shim=shim), capture_output=True,
                          text=True, timeout=300)


def _explain(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout[-3000:]}\n" \
           f"stderr:\n{result.stderr[-6000:]}"


def test_without_the_shim_determineds_script_cannot_start(tmp_path: Path) -> None:
    context = _originals(tmp_path, "1_metrics.py")
    result = _run([str(BIN / "python3"), "1_metrics.py"], context, shim=False)
    assert result.returncode == 1
    assert "No module named 'determined'" in result.stderr, _explain(result)


def test_stage_1_runs_unchanged_as_a_script_outside_a_job(tmp_path: Path) -> None:
    context = _originals(tmp_path, "1_metrics.py")
    result = _run([str(BIN / "python3"), "1_metrics.py"], context)
    assert result.returncode == 0, _explain(result)
    metrics = parse_dummy_metrics(result.stderr)
    assert metrics["training"] == [(s, {"x": float(s)}) for s in TENS], _explain(result)
    assert metrics["validation"] == [(100, {"x": 100.0})]
    assert "ERROR: [" in result.stderr  # det.LOG_FORMAT, hpcdet's, under Determined's name


def test_stage_4_runs_unchanged_with_det_experiment_create_local(tmp_path: Path) -> None:
    context = _originals(tmp_path, "4_distributed.py", "4_distributed.yaml")
    result = _run([str(BIN / "det"), "experiment", "create", "--local",
                   str(context / "4_distributed.yaml"), str(context)], context)
    assert result.returncode == 0, _explain(result)
    assert "worker starting" in result.stderr, _explain(result)
    validation = parse_dummy_metrics(result.stderr)["validation"]
    increment_by = int(validation[0][1]["x"]) // 10
    assert 1 <= increment_by <= 8, _explain(result)
    assert validation == [(s, {"x": float(s * increment_by)}) for s in TENS]
    checkpoints = sorted((context / "checkpoints").iterdir(), key=lambda p: p.stat().st_mtime)
    assert len(checkpoints) == 10
    state = (checkpoints[-1] / "state").read_text()
    assert state == f"{100 * increment_by},100,0"  # x, steps, the local trial id 0
