"""Determined's ``examples/tutorials/core_api_pytorch_mnist``, with only imports and the
MNIST lines changed (``synthetic_mnist.MNIST``: 256 training and 128 test images).

With 256 images an epoch is 4 batches of 64, so the tutorials' training-metric reports
(every ``--log-interval`` = 100 batches, as Determined wrote them) never fire; their
validation metrics (every epoch) and checkpoints are what the tests check.

``distributed.yaml`` is GPU-only as Determined wrote it (``init_process_group("nccl")``
and ``DistributedDataParallel(device_ids=[device])``): on CPU nodes it must fail exactly
where it would under Determined, at torch's "NCCL needs GPUs", after the harness has
handed its process group over to the script (not "initialize the default process group
twice"). ``test_script_owned_group.py`` runs the same pattern on gloo over 4 ranks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tutorials import (
    LocalRun,
    check_only_allowed_changes,
    run_local,
    run_on_cluster,
    trial_log,
)

pytestmark = [pytest.mark.compat, pytest.mark.torch]

TUTORIAL = "core_api_pytorch_mnist"
SCRIPTS = ["model_def", "model_def_metrics", "model_def_checkpoints", "model_def_adaptive",
           "model_def_distributed"]
CONFIGS = ["const", "metrics", "checkpoints", "adaptive", "distributed"]
DATASET_LINES = [r"datasets\.MNIST\("]
BATCHES_PER_EPOCH = 4  # 256 synthetic images, batch size 64
EPOCHS = 14  # the scripts' default --epochs
NCCL_NEEDS_GPUS = "ProcessGroupNCCL is only supported with GPUs"


@pytest.mark.parametrize("script", SCRIPTS)
def test_only_imports_and_mnist_lines_differ(script: str) -> None:
    check_only_allowed_changes(TUTORIAL, f"{script}.py", dataset_patterns=DATASET_LINES)


@pytest.mark.parametrize("config", CONFIGS)
def test_configs_are_determineds(config: str) -> None:
    check_only_allowed_changes(TUTORIAL, f"{config}.yaml")


def _ok(run: LocalRun) -> LocalRun:
    assert run.returncode == 0, run.explain()
    return run


def _per_epoch(epochs: int) -> list[int]:
    return [BATCHES_PER_EPOCH * e for e in range(1, epochs + 1)]


def _losses_fall(rows: list[tuple[int, dict[str, float]]]) -> bool:
    return rows[-1][1]["test_loss"] < rows[0][1]["test_loss"]


# --- det experiment create --local --------------------------------------------------------


def test_const_trains_locally(tmp_path: Path) -> None:
    run = _ok(run_local(TUTORIAL, "const.yaml", tmp_path))
    assert run.stdout.count("Test set: Average loss") == EPOCHS, run.explain()


def test_metrics_reports_validation_every_epoch_locally(tmp_path: Path) -> None:
    run = _ok(run_local(TUTORIAL, "metrics.yaml", tmp_path))
    rows = run.metrics["validation"]
    assert [steps for steps, _ in rows] == _per_epoch(EPOCHS), run.explain()
    assert _losses_fall(rows)


def test_checkpoints_saves_every_epoch_locally(tmp_path: Path) -> None:
    run = _ok(run_local(TUTORIAL, "checkpoints.yaml", tmp_path))
    assert len(run.checkpoints) == EPOCHS, run.explain()
    assert (run.checkpoints[-1] / "state").read_text() == f"{EPOCHS},0"
    assert (run.checkpoints[-1] / "checkpoint.pt").stat().st_size > 0


def test_adaptive_trains_the_first_trial_locally(tmp_path: Path) -> None:
    run = _ok(run_local(TUTORIAL, "adaptive.yaml", tmp_path))
    rows = run.metrics["validation"]
    assert [row["epochs"] for _, row in rows] == list(range(1, 21)), run.explain()


def test_distributed_fails_only_for_want_of_a_gpu_locally(tmp_path: Path) -> None:
    run = run_local(TUTORIAL, "distributed.yaml", tmp_path)
    assert run.returncode != 0
    assert NCCL_NEEDS_GPUS in run.stderr, run.explain()
    assert "initialize the default process group twice" not in run.stderr


# --- on the dev Slurm cluster --------------------------------------------------------------


def _validation(run: Any) -> list[tuple[int, float]]:
    return [(row["steps_completed"], row["metrics"]["test_loss"])
            for row in run.trials[0].validation]


@pytest.mark.slurm
def test_const_completes_on_the_cluster(compat_master: Any, tmp_path: Path) -> None:
    run = run_on_cluster(compat_master, TUTORIAL, "const.yaml", tmp_path)
    log = trial_log(compat_master, run.trials[0].id)
    assert sum("Test set: Average loss" in line for line in log) == EPOCHS


@pytest.mark.slurm
def test_metrics_reach_the_master(compat_master: Any, tmp_path: Path) -> None:
    run = run_on_cluster(compat_master, TUTORIAL, "metrics.yaml", tmp_path)
    rows = _validation(run)
    assert [steps for steps, _ in rows] == _per_epoch(EPOCHS)
    assert rows[-1][1] < rows[0][1]


@pytest.mark.slurm
def test_checkpoints_reach_the_master(compat_master: Any, tmp_path: Path) -> None:
    run = run_on_cluster(compat_master, TUTORIAL, "checkpoints.yaml", tmp_path)
    steps = sorted(c["metadata"]["steps_completed"] for c in run.trials[0].checkpoints)
    assert steps and steps[-1] == BATCHES_PER_EPOCH * EPOCHS, run.trials[0].checkpoints
    assert [s for s, _ in _validation(run)] == _per_epoch(EPOCHS)


@pytest.mark.slurm
def test_adaptive_search_completes_on_the_cluster(compat_master: Any, tmp_path: Path) -> None:
    # 12 of the tutorial's 50 trials (a submission-time override, the YAML stays
    # Determined's): the same ASHA code path in a quarter of the CI time. The first trial
    # to reach a rung has no rival there, so one still trains through every rung.
    run = run_on_cluster(compat_master, TUTORIAL, "adaptive.yaml", tmp_path, timeout=1800,
                         overrides=["searcher.max_trials=12"])
    assert len(run.trials) == 12
    longest = max(run.trials, key=lambda t: len(t.validation))
    assert [row["metrics"]["epochs"] for row in longest.validation] == list(range(1, 21))


@pytest.mark.slurm
def test_distributed_hands_the_group_to_the_script_on_the_cluster(
        compat_master: Any, tmp_path: Path) -> None:
    run = run_on_cluster(compat_master, TUTORIAL, "distributed.yaml", tmp_path,
                         expect_state="ERROR")
    log = "\n".join(trial_log(compat_master, run.trials[0].id))
    # All 4 ranks handed the harness's group over, then asked for NCCL on a CPU node.
    assert log.count("creates its own process group") == 4, log[-3000:]
    assert NCCL_NEEDS_GPUS in log
    assert "initialize the default process group twice" not in log
