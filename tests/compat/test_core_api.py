"""Determined's ``examples/tutorials/core_api`` stages 0-4, with only their imports changed.

Each stage: the diff against Determined's original, a ``det experiment create --local``
run, and a run on the dev Slurm cluster that must end COMPLETED with the metrics and
checkpoints Determined's would report. The "model" adds ``increment_by`` to ``x`` 100
times (0.1 s each), reporting every 10 steps; in 4_distributed every one of the 8 ranks
adds its ``increment_by`` each step (an allgather), so ``x`` grows 8 times as fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tutorials import (
    ClusterRun,
    LocalRun,
    check_only_allowed_changes,
    run_local,
    run_on_cluster,
    trial_log,
)

pytestmark = pytest.mark.compat

TUTORIAL = "core_api"
STAGES = ["0_start", "1_metrics", "2_checkpoints", "3_hpsearch", "4_distributed"]
TENS = list(range(10, 101, 10))


@pytest.mark.parametrize("stage", STAGES)
def test_only_imports_differ_from_determineds_stage(stage: str) -> None:
    check_only_allowed_changes(TUTORIAL, f"{stage}.py")
    check_only_allowed_changes(TUTORIAL, f"{stage}.yaml")


def _ok(run: LocalRun) -> LocalRun:
    assert run.returncode == 0, run.explain()
    return run


def _steps(rows: list[tuple[int, dict[str, float]]]) -> list[int]:
    return [steps for steps, _ in rows]


def _state(checkpoint: Path) -> list[int]:
    return [int(field) for field in (checkpoint / "state").read_text().split(",")]


# --- det experiment create --local --------------------------------------------------------


def test_stage_0_runs_locally(tmp_path: Path) -> None:
    run = _ok(run_local(TUTORIAL, "0_start.yaml", tmp_path))
    assert "x is now 100" in run.stdout, run.explain()


def test_stage_1_reports_metrics_and_progress_locally(tmp_path: Path) -> None:
    run = _ok(run_local(TUTORIAL, "1_metrics.yaml", tmp_path))
    assert run.metrics["training"] == [(s, {"x": float(s)}) for s in TENS], run.explain()
    assert run.metrics["validation"] == [(100, {"x": 100.0})]
    assert "hpcdet core (dummy): progress 1" in run.stderr
    assert "ERROR: [" in run.stderr  # det.LOG_FORMAT: the level first, then the pid


def test_stage_2_checkpoints_locally(tmp_path: Path) -> None:
    run = _ok(run_local(TUTORIAL, "2_checkpoints.yaml", tmp_path))
    assert len(run.checkpoints) == 10, run.explain()
    assert _state(run.checkpoints[-1]) == [100, 100, 0]  # x, steps, the local trial id 0
    assert run.metrics["validation"] == [(100, {"x": 100.0})]


def test_stage_3_uses_the_searchers_hyperparameters_locally(tmp_path: Path) -> None:
    run = _ok(run_local(TUTORIAL, "3_hpsearch.yaml", tmp_path))
    increment_by = int(run.metrics["training"][0][1]["x"]) // 10
    assert 1 <= increment_by <= 8, run.explain()
    assert run.metrics["validation"] == [
        (s, {"x": float(s * increment_by), "batches": float(s)}) for s in TENS]


def test_stage_4_launches_its_worker_locally(tmp_path: Path) -> None:
    run = _ok(run_local(TUTORIAL, "4_distributed.yaml", tmp_path))
    increment_by = int(run.metrics["validation"][0][1]["x"]) // 10
    assert run.metrics["validation"] == [(s, {"x": float(s * increment_by)}) for s in TENS]
    assert "worker starting" in run.stderr
    assert len(run.checkpoints) == 10


# --- on the dev Slurm cluster --------------------------------------------------------------


def _values(rows: list[dict[str, Any]], name: str) -> list[tuple[int, float]]:
    return [(row["steps_completed"], row["metrics"][name]) for row in rows]


def _checkpoint_steps(run: ClusterRun) -> list[int]:
    trial = run.trials[0]
    return sorted(int(c["metadata"]["steps_completed"]) for c in trial.checkpoints)


@pytest.mark.slurm
def test_stage_0_completes_on_the_cluster(compat_master: Any, tmp_path: Path) -> None:
    run = run_on_cluster(compat_master, TUTORIAL, "0_start.yaml", tmp_path)
    trial = run.trials[0]
    assert (trial.training, trial.validation, trial.checkpoints) == ([], [], [])
    assert any("x is now 100" in line for line in trial_log(compat_master, trial.id))


@pytest.mark.slurm
def test_stage_1_reports_metrics_on_the_cluster(compat_master: Any, tmp_path: Path) -> None:
    run = run_on_cluster(compat_master, TUTORIAL, "1_metrics.yaml", tmp_path)
    trial = run.trials[0]
    assert _values(trial.training, "x") == [(s, s) for s in TENS]
    assert _values(trial.validation, "x") == [(100, 100)]
    assert run.experiment["experiment"]["progress"] == 1.0
    log = trial_log(compat_master, trial.id)
    assert any("ERROR: [" in line and "error-level message" in line for line in log)


@pytest.mark.slurm
def test_stage_2_checkpoints_on_the_cluster(compat_master: Any, tmp_path: Path) -> None:
    run = run_on_cluster(compat_master, TUTORIAL, "2_checkpoints.yaml", tmp_path)
    trial = run.trials[0]
    assert _values(trial.validation, "x") == [(100, 100)]
    steps = _checkpoint_steps(run)
    assert steps and steps[-1] == 100, trial.checkpoints


@pytest.mark.slurm
def test_stage_3_searches_on_the_cluster(compat_master: Any, tmp_path: Path) -> None:
    run = run_on_cluster(compat_master, TUTORIAL, "3_hpsearch.yaml", tmp_path)
    assert len(run.trials) == 10
    for trial in run.trials:
        increment_by = trial.detail["trial"]["hparams"]["increment_by"]
        assert trial.validation, trial.detail
        assert all(row["metrics"] == {"x": steps * increment_by, "batches": steps}
                   for row in trial.validation for steps in [row["steps_completed"]])
    assert any(_values(t.validation, "batches")[-1] == (100, 100) for t in run.trials)


@pytest.mark.slurm
def test_stage_4_runs_eight_ranks_on_the_cluster(compat_master: Any, tmp_path: Path) -> None:
    run = run_on_cluster(compat_master, TUTORIAL, "4_distributed.yaml", tmp_path)
    trial = run.trials[0]
    increment_by = trial.detail["trial"]["hparams"]["increment_by"]
    # Every rank's worker adds its increment each step: x grows 8 times as fast.
    assert _values(trial.validation, "x") == [(s, 8 * increment_by * s) for s in TENS]
    assert _checkpoint_steps(run)[-1] == 100
    log = trial_log(compat_master, trial.id)
    assert sum("worker starting" in line for line in log) == 8, log[-40:]
