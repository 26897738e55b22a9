"""examples/digits: standalone with dummy contexts, and as a 2-rank trial under the harness."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable

import pytest
import yaml
from harness_fakes import (
    REPO_ROOT,
    FakeMaster,
    one_node_step,
    run_harness,
    start_harness,
    wait_harness,
    write_job_dir,
)

pytestmark = pytest.mark.torch

EXAMPLE = REPO_ROOT / "examples" / "digits"
ACCURACY = re.compile(r"validation steps_completed=(\d+) .*accuracy=([0-9.]+)")


def test_standalone_run_learns_the_digits(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DET_", "SLURM_"))}
    env.update(PYTHONPATH=str(REPO_ROOT), OMP_NUM_THREADS="2")
    result = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLE / "train.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    validations = ACCURACY.findall(result.stderr)
    assert len(validations) == 5  # one per epoch
    assert float(validations[-1][1]) > 0.8
    assert len(list((tmp_path / "checkpoints").iterdir())) == 5


def test_two_rank_trial_under_the_harness(tmp_path: pathlib.Path, fake_master: FakeMaster) -> None:
    job = _digits_job(tmp_path, fake_master)
    ranks = run_harness(job, one_node_step(job), timeout=300)
    for rank in ranks:
        assert rank.returncode == 0, rank.stderr
    validations = fake_master.reports("validation")
    assert [v["steps_completed"] for v in validations] == [23, 46, 69, 92, 115]
    assert validations[-1]["metrics"]["accuracy"] > 0.8
    assert len(fake_master.checkpoints()) == 5


def test_preempted_trial_checkpoints_exits_0_and_resumes(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    job = _digits_job(tmp_path, fake_master)
    procs = start_harness(job, one_node_step(job))
    # Once epoch 1's checkpoint is registered, warn rank 1 only, as Slurm's --signal would.
    _wait_for(lambda: bool(fake_master.checkpoints()) or procs[1].poll() is not None)
    procs[1].send_signal(signal.SIGUSR2)
    for rank in wait_harness(job, procs, timeout=300):
        assert rank.returncode == 0, rank.stderr
    done = [c["steps_completed"] for c in fake_master.checkpoints()]
    assert 23 in done and done[-1] < 115  # stopped early, right after a checkpoint
    assert fake_master.reports("validation")[-1]["steps_completed"] == done[-1]

    _next_run(job, latest_checkpoint=fake_master.checkpoints()[-1]["uuid"])
    for rank in run_harness(job, one_node_step(job), timeout=300):
        assert rank.returncode == 0, rank.stderr
    steps = [v["steps_completed"] for v in fake_master.reports("validation")]
    assert steps == list(range(23, 116, 23))  # each epoch exactly once over the two runs


def _digits_job(tmp_path: pathlib.Path, fake_master: FakeMaster) -> pathlib.Path:
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    config = yaml.safe_load((EXAMPLE / "const.yaml").read_text())
    job = write_job_dir(
        tmp_path / "job",
        fake_master.url,
        experiment_config=config,
        hparams=config["hyperparameters"],
    )
    for name in ("train.py", "const.yaml"):
        shutil.copy(EXAMPLE / name, job / "context" / name)
    return job


def _next_run(job: pathlib.Path, latest_checkpoint: str) -> None:
    """What the master does before resubmitting: rewrite trial.json."""
    trial = json.loads((job / "trial.json").read_text())
    trial.update(run_id=2, latest_checkpoint=latest_checkpoint)
    (job / "trial.json").write_text(json.dumps(trial))


def _wait_for(condition: Callable[[], bool]) -> None:
    pause = threading.Event()
    for _ in range(3000):
        if condition():
            return
        pause.wait(0.05)
    raise AssertionError("the trial never got that far")
