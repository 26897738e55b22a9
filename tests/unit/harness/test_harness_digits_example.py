"""examples/digits: the PyTorchTrial (model_def.py) as a 2-rank trial under the harness,
stopped by the searcher and with ``det experiment create --local``; the Core API script
(train.py) standalone with dummy contexts, as a 2-rank trial under the harness, as a trial
of a search (hyperparameters from the searcher, stopped by the master), and driven
in-process by bench/searcher.py."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import yaml
from hang_guard import HANG_GUARD_S, wait_until
from harness_fakes import (
    REPO_ROOT,
    FakeMaster,
    one_node_step,
    run_harness,
    start_harness,
    wait_harness,
    write_job_dir,
)

from hpcdet.searcher import make_searcher

pytestmark = pytest.mark.torch

EXAMPLE = REPO_ROOT / "examples" / "digits"
SEARCH_CONFIGS = ("grid.yaml", "random.yaml", "asha.yaml")
TRIAL_CLASS_CONFIGS = ("const.yaml", *SEARCH_CONFIGS)
ACCURACY = re.compile(r"validation steps_completed=(\d+) .*accuracy=([0-9.]+)")


def _load(name: str, path: pathlib.Path) -> ModuleType:
    """A script as a module (registered, so its dataclasses work)."""
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def digits() -> ModuleType:
    return _load("digits_train", EXAMPLE / "train.py")


def _config(name: str) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((EXAMPLE / name).read_text())
    return config


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
        timeout=HANG_GUARD_S,
    )
    assert result.returncode == 0, result.stderr
    validations = ACCURACY.findall(result.stderr)
    assert len(validations) == 5  # one per epoch
    assert float(validations[-1][1]) > 0.8
    assert len(list((tmp_path / "checkpoints").iterdir())) == 5


def test_two_rank_trial_under_the_harness(tmp_path: pathlib.Path, fake_master: FakeMaster) -> None:
    job = _digits_job(tmp_path, fake_master)
    ranks = run_harness(job, one_node_step(job), timeout=HANG_GUARD_S)
    for rank in ranks:
        assert rank.returncode == 0, rank.stderr
    validations = fake_master.reports("validation")
    assert [v["steps_completed"] for v in validations] == [23, 46, 69, 92, 115]
    assert [v["metrics"]["epochs"] for v in validations] == [1, 2, 3, 4, 5]
    assert validations[-1]["metrics"]["accuracy"] > 0.8
    assert len(fake_master.checkpoints()) == 5


def test_preempted_trial_checkpoints_exits_0_and_resumes(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    job = _digits_job(tmp_path, fake_master)
    procs = start_harness(job, one_node_step(job))
    # Once epoch 1's checkpoint is registered, warn rank 1 only, as Slurm's --signal would.
    try:
        _wait_for(lambda: bool(fake_master.checkpoints()) or procs[1].poll() is not None)
    except AssertionError:
        for proc in procs:  # none outlives the test
            proc.kill()
            proc.wait()
        raise
    procs[1].send_signal(signal.SIGUSR2)
    for rank in wait_harness(job, procs, timeout=HANG_GUARD_S):
        assert rank.returncode == 0, rank.stderr
    done = [c["steps_completed"] for c in fake_master.checkpoints()]
    assert 23 in done and done[-1] < 115  # stopped early, right after a checkpoint
    assert fake_master.reports("validation")[-1]["steps_completed"] == done[-1]

    _next_run(job, latest_checkpoint=fake_master.checkpoints()[-1]["uuid"])
    for rank in run_harness(job, one_node_step(job), timeout=HANG_GUARD_S):
        assert rank.returncode == 0, rank.stderr
    steps = [v["steps_completed"] for v in fake_master.reports("validation")]
    assert steps == list(range(23, 116, 23))  # each epoch exactly once over the two runs


def test_a_trial_the_searcher_stops_checkpoints_and_exits_0(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    config = {**_config("asha.yaml"), "entrypoint": "python3 train.py"}
    [first, *_] = make_searcher(config["searcher"], config["hyperparameters"], 5).initial_trials()
    # What the master does: the searcher's sample goes through JSON into trial.json.
    job = _digits_job(tmp_path, fake_master, config, hparams=json.loads(json.dumps(
        first.hparams)), trial_seed=first.seed)
    fake_master.preempt = True  # the master has put the trial in STOPPING_COMPLETED
    [rank] = run_harness(job, [{**one_node_step(job, ntasks=1)[0],
                                "HPCDET_PREEMPT_POLL_SECONDS": "0.05"}], timeout=HANG_GUARD_S)
    assert rank.returncode == 0, rank.stderr
    assert "digits: asked to stop after epoch" in rank.stdout
    epochs = [v["metrics"]["epochs"] for v in fake_master.reports("validation")]
    assert epochs and epochs == list(range(1, len(epochs) + 1))
    assert epochs[-1] < config["searcher"]["max_time"]
    assert fake_master.checkpoints()[-1]["metadata"]["epoch"] == epochs[-1]


def test_trial_class_under_the_harness_on_two_ranks(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    job = _digits_job(tmp_path, fake_master, _config("const.yaml"))
    ranks = run_harness(job, one_node_step(job), timeout=HANG_GUARD_S)
    for rank in ranks:
        assert rank.returncode == 0, rank.stderr
    validations = fake_master.reports("validation")
    assert [v["steps_completed"] for v in validations] == [23, 46, 69, 92, 115]
    assert [v["metrics"]["epochs"] for v in validations] == [1, 2, 3, 4, 5]
    assert validations[-1]["metrics"]["accuracy"] > 0.8
    assert [c["steps_completed"] for c in fake_master.checkpoints()] == [23, 46, 69, 92, 115]


def test_a_trial_class_the_searcher_stops_exits_0(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    config = _config("asha.yaml")
    [first, *_] = make_searcher(config["searcher"], config["hyperparameters"], 5).initial_trials()
    job = _digits_job(tmp_path, fake_master, config, hparams=json.loads(json.dumps(
        first.hparams)), trial_seed=first.seed)
    fake_master.preempt = True  # the master has put the trial in STOPPING_COMPLETED
    [rank] = run_harness(job, [{**one_node_step(job, ntasks=1)[0],
                                "HPCDET_PREEMPT_POLL_SECONDS": "0.05"}], timeout=HANG_GUARD_S)
    assert rank.returncode == 0, rank.stderr
    epochs = [v["metrics"]["epochs"] for v in fake_master.reports("validation")]
    assert epochs[-1] < config["searcher"]["max_time"]
    assert fake_master.checkpoints()


def test_det_experiment_create_local_trains_the_trial_class(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("sklearn")
    context = tmp_path / "digits"
    shutil.copytree(EXAMPLE, context, ignore=shutil.ignore_patterns("checkpoints", "__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DET_", "SLURM_"))}
    env.update(PYTHONPATH=str(REPO_ROOT), OMP_NUM_THREADS="2")
    result = subprocess.run(
        [sys.executable, "-c", "from hpcdet.cli import main; main()", "experiment", "create",
         "--local",
         str(context / "const.yaml"), str(context), "--config", "searcher.max_length.epochs=2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S,
    )
    assert result.returncode == 0, result.stderr
    validations = ACCURACY.findall(result.stderr)
    assert [int(steps) for steps, _ in validations] == [23, 46]
    assert float(validations[-1][1]) > 0.8
    assert len(list((context / "checkpoints").iterdir())) == 2


def test_configs_name_the_trial_class_and_the_core_api_script() -> None:
    for name in TRIAL_CLASS_CONFIGS:
        assert _config(name)["entrypoint"] == "model_def:DigitsTrial"
        assert _config(name)["min_validation_period"] == {"epochs": 1}
    assert _config("core_api.yaml")["entrypoint"] == "python3 train.py"


def test_search_configs_run_one_slot_trials_of_a_known_length(digits: ModuleType) -> None:
    lengths = {name: digits.training_epochs(_config(name)) for name in SEARCH_CONFIGS}
    assert lengths == {"grid.yaml": 5, "random.yaml": 10, "asha.yaml": 32}
    assert digits.training_epochs(_config("const.yaml")) == 5
    assert digits.training_epochs(_config("core_api.yaml")) == 5
    for name in SEARCH_CONFIGS:
        assert _config(name)["resources"]["slots_per_trial"] == 1


@pytest.mark.parametrize("searcher, message", [
    ({"max_time": 8, "time_metric": "batches"}, "counts epochs, not 'batches'"),
    ({"max_length": {"batches": 100}}, "set searcher.max_time"),
    ({"max_time": None, "max_length": None}, "set searcher.max_time"),
])
def test_training_length_must_be_in_epochs(digits: ModuleType, searcher: dict[str, Any],
                                           message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        digits.training_epochs({"searcher": searcher})


@pytest.mark.parametrize("name", SEARCH_CONFIGS)
def test_searcher_hyperparameters_arrive_as_numbers(digits: ModuleType, name: str) -> None:
    config = _config(name)
    searcher = make_searcher(config["searcher"], config["hyperparameters"], 3)
    for request in searcher.initial_trials():
        hparams = digits.HParams.parse(json.loads(json.dumps(request.hparams)))
        assert type(hparams.lr) is float and 1e-4 <= hparams.lr <= 0.1
        assert type(hparams.hidden_size) is int and 16 <= hparams.hidden_size <= 256
        assert hparams.global_batch_size in (16, 32, 64)


@pytest.mark.parametrize("raw, message", [
    ({"lr": "0.1", "hidden_size": 8, "global_batch_size": 8}, "'lr' must be int or float"),
    ({"lr": 0.1, "hidden_size": 8.0, "global_batch_size": 8}, "'hidden_size' must be int"),
    ({"lr": 0.1, "hidden_size": 8, "global_batch_size": True}, "'global_batch_size' must"),
    ({"lr": 0.1, "hidden_size": 8}, "'global_batch_size' must be int, got None"),
])
def test_hyperparameters_that_are_not_numbers_are_refused(
    digits: ModuleType, raw: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        digits.HParams.parse(raw)


def test_a_trial_trains_and_validates_in_process(digits: ModuleType) -> None:
    train_data, val_data = digits.load_data()
    hparams = digits.HParams(lr=0.01, hidden_size=32, global_batch_size=64)
    trial = digits.make_trial(hparams, 7, train_data)
    losses = [digits.fit_epoch(trial, epoch) for epoch in range(3)]
    metrics = digits.validate(trial.model, val_data, 0, 1)
    assert losses[-1] < losses[0]
    assert metrics["accuracy"] > 0.8 and math.isfinite(metrics["validation_loss"])


def test_the_quality_benchmark_compares_asha_and_random_at_one_budget() -> None:
    bench = _load("bench_searcher", REPO_ROOT / "bench" / "searcher.py")
    settings = bench.QualitySettings(seeds=(0,), max_trials=4, max_time=2, divisor=2.0,
                                     max_rungs=2, mode="aggressive", max_concurrent_trials=2)
    result = bench.run_quality(settings)
    asha, rand = result["runs"]
    assert (asha["method"], rand["method"]) == ("asha", "random")
    assert asha["trials"] == 4 and asha["stopped_early"] >= 1
    assert asha["epochs"] < 4 * 2  # early stopping saved some of the full budget
    assert rand["trials"] == max(1, asha["epochs"] // 2) and rand["epochs"] == 2 * rand["trials"]
    for run in (asha, rand):
        assert 0 < run["best_validation_loss"] < 3 and 0 < run["best_accuracy"] <= 1
    assert [m["method"] for m in result["mean"]] == ["asha", "random"]
    assert "best validation_loss" in bench.render_quality(result)


def _digits_job(tmp_path: pathlib.Path, fake_master: FakeMaster,
                config: dict[str, Any] | None = None, **trial: Any) -> pathlib.Path:
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    config = config or _config("core_api.yaml")
    trial.setdefault("hparams", config["hyperparameters"])
    job = write_job_dir(tmp_path / "job", fake_master.url, experiment_config=config, **trial)
    for name in ("train.py", "core_api.yaml", "model_def.py"):
        shutil.copy(EXAMPLE / name, job / "context" / name)
    return job


def _next_run(job: pathlib.Path, latest_checkpoint: str) -> None:
    """What the master does before resubmitting: rewrite trial.json."""
    trial = json.loads((job / "trial.json").read_text())
    trial.update(run_id=2, latest_checkpoint=latest_checkpoint)
    (job / "trial.json").write_text(json.dumps(trial))


def _wait_for(condition: Callable[[], bool]) -> None:
    wait_until(condition, "the trial's step")
