"""Determined's ``examples/tutorials/mnist_pytorch`` (the Trainer API), imports changed only.

``train.py`` builds ``MNistTrial(context, hparams)`` inside ``pytorch.init()`` and calls
``Trainer(trial, context).fit(max_length=Epoch(1), latest_checkpoint=...,
validation_period=Batch(100))``; ``data.py``'s MNIST download is the synthetic stand-in
(256 training images: 4 batches of 64 an epoch, on 1 slot or 8 slots of 8). Each config
(const, adaptive, distributed, dist_random): the diff against Determined's files, a
``det experiment create --local`` run, and a run on the dev Slurm cluster that must end
COMPLETED with the metrics and checkpoints Determined's trainer reports: training
``loss`` (plus ``batches``, ``epochs``) and validation ``validation_loss`` and ``accuracy``
at batch 4, and a checkpoint at batch 4.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tutorials import (
    BIN,
    ClusterRun,
    LocalRun,
    check_only_allowed_changes,
    make_context,
    parse_dummy_metrics,
    run_local,
    run_on_cluster,
    tool_environ,
    trial_log,
)

pytestmark = pytest.mark.compat

TUTORIAL = "mnist_pytorch"
CONFIGS = ["const.yaml", "adaptive.yaml", "distributed.yaml", "dist_random.yaml"]
FILES = ["train.py", "model.py", "data.py", *CONFIGS]
# data.py's one changed line: the MNIST dataset class (its transform and arguments stay).
DATASET_LINES = [r"^\s*return datasets\.MNIST\($"]
EPOCH = 4  # batches in one epoch of the synthetic set, whatever the slot count
TRAINING = {"loss", "batches", "epochs"}  # what Determined's trainer reports
VALIDATION = {"validation_loss", "accuracy", "batches", "epochs"}
# Given at submission, as test_core_api.py does (the YAML stays Determined's): the dev
# cluster's nodes have 4 CPUs, and without slurm.slots_per_node hpcdet puts all 8 CPU
# slots of a trial on one node (Determined's Slurm launcher reads the same field).
EIGHT_SLOTS_ON_TWO_NODES = ["slurm.slots_per_node=4"]


@pytest.mark.parametrize("name", FILES)
def test_only_imports_and_the_dataset_line_differ(name: str) -> None:
    check_only_allowed_changes(TUTORIAL, name, dataset_patterns=DATASET_LINES)


# --- det experiment create --local ---------------------------------------------------------


def _ok(run: LocalRun) -> LocalRun:
    assert run.returncode == 0, run.explain()
    return run


def _check_local_run(run: LocalRun) -> None:
    """One epoch: training and validation metrics at batch 4, one checkpoint there."""
    (train_step, train), = run.metrics["training"]
    (val_step, val), = run.metrics["validation"]
    assert (train_step, val_step) == (EPOCH, EPOCH), run.explain()
    assert TRAINING <= set(train) and VALIDATION <= set(val), run.explain()
    assert (train["batches"], train["epochs"]) == (EPOCH, 1)
    assert 0 <= val["accuracy"] <= 1
    (checkpoint,) = run.checkpoints
    assert (checkpoint / "state_dict.pth").is_file()
    assert "hpcdet core (dummy): progress 1" in run.stderr


def _load_checkpoint(context: Path, checkpoint: Path) -> str:
    """Rebuild MNistTrial from ``checkpoint`` in a fresh process (Determined's
    ``load_trial_from_checkpoint_path``); the model's class name."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import train; from hpcdet import "
            "pytorch; t = pytorch.load_trial_from_checkpoint_path(sys.argv[2], "
            "trial_class=train.MNistTrial); print(type(t.model).__name__)")
    done = subprocess.run([sys.executable, "-c", code, str(context), str(checkpoint)],
                          env=_no_job(tool_environ()), cwd=context, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _no_job(env: dict[str, str]) -> dict[str, str]:
    for name in ("DET_TRIAL_INFO", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    return env


def test_const_trains_one_epoch_locally(tmp_path: Path) -> None:
    run = _ok(run_local(TUTORIAL, "const.yaml", tmp_path))
    _check_local_run(run)
    assert _load_checkpoint(run.context, run.checkpoints[0]) == "Sequential"


def test_adaptive_trains_locally_and_warns_of_its_length_as_determined(tmp_path: Path) -> None:
    run = _ok(run_local(TUTORIAL, "adaptive.yaml", tmp_path))
    _check_local_run(run)
    # fit(max_length=Epoch(1)) against searcher max_time 937 batches: Determined's warning.
    assert "does not match `searcher.max_time`" in run.stderr


@pytest.mark.parametrize("config", ["distributed.yaml", "dist_random.yaml"])
def test_launcher_configs_train_locally(tmp_path: Path, config: str) -> None:
    _check_local_run(_ok(run_local(TUTORIAL, config, tmp_path)))


def test_train_py_runs_in_local_training_mode(tmp_path: Path) -> None:
    """``python3 train.py --batches 6`` outside any job: Determined's local training mode
    (hparams from ./const.yaml, checkpoint_policy "best" becomes "all")."""
    context = make_context(TUTORIAL, tmp_path)
    done = subprocess.run([str(BIN / "python3"), "train.py", "--batches", "6"],
                          env=_no_job(tool_environ()), cwd=context, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    metrics = parse_dummy_metrics(done.stderr)
    assert [step for step, _ in metrics["validation"]] == [6], done.stderr
    assert "Falling back to 'all'" in done.stderr
    assert len(list((context / "checkpoints").iterdir())) == 1


# --- on the dev Slurm cluster --------------------------------------------------------------


def _check_trial(trial: Any) -> None:
    assert [row["steps_completed"] for row in trial.training] == [EPOCH], trial.training
    assert [row["steps_completed"] for row in trial.validation] == [EPOCH], trial.validation
    assert TRAINING <= set(trial.training[0]["metrics"])
    assert VALIDATION <= set(trial.validation[0]["metrics"])
    steps = [int(c["metadata"]["steps_completed"]) for c in trial.checkpoints]
    assert steps == [EPOCH], trial.checkpoints


def _all_completed(run: ClusterRun, trials: int) -> None:
    assert len(run.trials) == trials
    assert {trial.state for trial in run.trials} == {"COMPLETED"}


@pytest.mark.slurm
def test_const_completes_on_the_cluster(compat_master: Any, tmp_path: Path) -> None:
    run = run_on_cluster(compat_master, TUTORIAL, "const.yaml", tmp_path)
    _all_completed(run, 1)
    _check_trial(run.trials[0])
    assert run.experiment["experiment"]["progress"] == 1.0


@pytest.mark.slurm
def test_distributed_trains_on_eight_ranks_on_the_cluster(compat_master: Any,
                                                          tmp_path: Path) -> None:
    run = run_on_cluster(compat_master, TUTORIAL, "distributed.yaml", tmp_path,
                         overrides=EIGHT_SLOTS_ON_TWO_NODES)
    _all_completed(run, 1)
    trial = run.trials[0]
    _check_trial(trial)
    log = "\n".join(trial_log(compat_master, trial.id))
    assert all(f"rank {rank}/8" in log for rank in range(8)), log[-3000:]


@pytest.mark.slurm
def test_dist_random_completes_its_two_trials_on_the_cluster(compat_master: Any,
                                                             tmp_path: Path) -> None:
    run = run_on_cluster(compat_master, TUTORIAL, "dist_random.yaml", tmp_path)
    _all_completed(run, 2)
    for trial in run.trials:
        _check_trial(trial)
    assert len({str(t.detail["trial"]["hparams"]) for t in run.trials}) == 2


@pytest.mark.slurm
def test_adaptive_search_completes_on_the_cluster(compat_master: Any, tmp_path: Path) -> None:
    """Every trial trains its one synthetic epoch (4 batches, far below the searcher's
    max_time of 937 batches: one epoch of the real MNIST), so ASHA sees one validation per
    trial; how many of its 16 trials it starts is the searcher's business, not checked."""
    run = run_on_cluster(compat_master, TUTORIAL, "adaptive.yaml", tmp_path, timeout=1800)
    assert 1 <= len(run.trials) <= 16
    assert {trial.state for trial in run.trials} <= {"COMPLETED", "STOPPED"}
    for trial in run.trials:
        if trial.state == "COMPLETED":
            _check_trial(trial)
    assert len({str(t.detail["trial"]["hparams"]) for t in run.trials}) == len(run.trials)
