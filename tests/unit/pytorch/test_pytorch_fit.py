"""Determined's Trainer API: init(), Trainer(trial, context).fit(), Batch/Epoch, and the
trial built with its hyperparameters."""

from __future__ import annotations

import json
import logging
import os
import pathlib
import socket
import subprocess
import sys
from typing import Any

import pytest
from hang_guard import HANG_GUARD_S

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")

from pytorch_trials import HparamsTrial, RegressionTrial  # noqa: E402

from hpcdet import pytorch  # noqa: E402
from hpcdet.core import Context, DummyDistributedContext, Info, _preempt  # noqa: E402
from hpcdet.core._context import dummy_context  # noqa: E402
from hpcdet.harness import local  # noqa: E402
from hpcdet.pytorch import Batch, Epoch, Outcome, Trainer  # noqa: E402
from hpcdet.pytorch._instantiate import instantiate_trial  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
HPARAMS = {"global_batch_size": 8, "lr": 0.01}  # 64 records: 8 batches an epoch


def saved_steps(directory: pathlib.Path) -> list[int]:
    metas = [json.loads(p.read_text()) for p in directory.glob("*/metadata.json")]
    return sorted(m["steps_completed"] for m in metas)


@pytest.fixture
def in_tmp(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """Outside any job, in tmp_path (local checkpoints go to ./checkpoints)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DET_TRIAL_INFO", raising=False)
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def cluster_context(tmp_path: pathlib.Path, config: dict[str, Any],
                    latest: str | None = None) -> pytorch.PyTorchTrialContext:
    """A context whose info says "trial 1 of experiment 1" (fit's cluster rules apply)."""
    info = Info(trial_id=1, experiment_id=1, trial_seed=5, hparams=dict(HPARAMS),
                latest_checkpoint=latest, experiment_config=config)
    core: Context = dummy_context(DummyDistributedContext(), info, tmp_path / "ckpt")
    return pytorch.PyTorchTrialContext(core)


# Units -------------------------------------------------------------------------------


def test_batch_and_epoch_periods_and_schedules() -> None:
    assert [b for b in range(1, 13) if Batch(4).due(b, 8)] == [4, 8, 12]
    assert [b for b in range(1, 25) if Epoch(1).due(b, 8)] == [8, 16, 24]
    assert [b for b in range(1, 25) if Epoch([1, 3]).due(b, 8)] == [8, 24]
    assert [b for b in range(1, 8) if Batch([2, 5]).due(b, 8)] == [2, 5]
    assert all(Batch(0).due(b, 8) for b in range(1, 4))
    assert Epoch(2).in_batches(8) == 16 and Batch(7).in_batches(8) == 7
    assert Batch(3) == Batch(3) and Batch(3) != Epoch(3)


def test_config_lengths_as_units() -> None:
    assert pytorch.TrainUnit.from_config({"epochs": 2}, "x") == Epoch(2)
    assert pytorch.TrainUnit.from_config({"records": 100}, "x", 8) == Batch(12)
    assert pytorch.TrainUnit.from_config({"records": 3}, "x", 8) == Batch(1)
    with pytest.raises(ValueError, match="x is in records, which needs the global_batch_size"):
        pytorch.TrainUnit.from_config({"records": 100}, "x")
    with pytest.raises(ValueError, match="x: unit must be batches, records or epochs"):
        pytorch.TrainUnit.from_config({"steps": 1}, "x")


# Building the trial ------------------------------------------------------------------


class TakesContext:
    def __init__(self, context: Any) -> None:
        self.args: tuple[Any, ...] = (context,)


class TakesHparams:
    def __init__(self, context: Any, hparams: dict[str, Any]) -> None:
        self.args = (context, hparams)


class TakesPositional:
    def __init__(self, context: Any, hp: dict[str, Any], /) -> None:
        self.args = (context, hp)


class TakesOptional:
    def __init__(self, context: Any, debug: bool = False) -> None:
        self.args = (context, debug)


@pytest.mark.parametrize(("cls", "expected"), [
    (TakesContext, ("ctx",)),
    (TakesHparams, ("ctx", {"lr": 1})),
    (TakesPositional, ("ctx", {"lr": 1})),
    (TakesOptional, ("ctx", False)),
])
def test_the_trial_gets_its_hparams_when_its_init_takes_them(
    cls: type, expected: tuple[Any, ...]
) -> None:
    assert instantiate_trial(cls, "ctx", {"lr": 1}).args == expected


# fit(), locally ------------------------------------------------------------------------


def test_fit_locally_validates_and_checkpoints_on_its_periods(in_tmp: pathlib.Path) -> None:
    with pytorch.init(hparams=HPARAMS) as context:
        trial = HparamsTrial(context, HPARAMS)
        outcome = Trainer(trial, context).fit(
            max_length=Epoch(2), validation_period=Batch(6), checkpoint_period=Epoch(1),
            reporting_period=Batch(4),
        )
    assert outcome is Outcome.COMPLETED
    assert [m["batches"] for m in trial.recorder.validation] == [6, 12, 16]
    assert [m["epochs"] for m in trial.recorder.validation] == [0, 1, 2]
    # Locally "best" becomes "all": every validation checkpoints, and so do epoch ends.
    assert saved_steps(in_tmp / "checkpoints") == [6, 8, 12, 16]
    assert [m["batches"] for m in trial.recorder.training] == [4, 8, 12, 16]


def test_fit_locally_needs_a_whole_length(in_tmp: pathlib.Path) -> None:
    with pytorch.init(hparams=HPARAMS) as context:
        trainer = Trainer(HparamsTrial(context, HPARAMS), context)
        with pytest.raises(ValueError, match="max_length must be defined in local training"):
            trainer.fit()
        with pytest.raises(TypeError, match="max_length must either be"):
            trainer.fit(max_length=Batch([1, 2]))
        with pytest.raises(ValueError, match="checkpoint_policy must be best, all or none"):
            trainer.fit(max_length=Batch(1), checkpoint_policy="most")


def test_test_mode_and_step_zero_validation(in_tmp: pathlib.Path) -> None:
    with pytorch.init(hparams=HPARAMS) as context:
        trial = HparamsTrial(context, HPARAMS)
        trainer = Trainer(trial, context)
        trainer.fit(max_length=Epoch(5), test_mode=True, step_zero_validation=True)
    assert trainer.progress.batches == 1
    assert [m["batches"] for m in trial.recorder.validation] == [0, 1]
    assert saved_steps(in_tmp / "checkpoints") == [1]


def test_batch_metrics_and_progress_are_reported(in_tmp: pathlib.Path) -> None:
    reports: list[tuple[int, dict[str, Any], list[dict[str, Any]]]] = []
    progress: list[float] = []

    def report(steps: int, metrics: dict[str, Any],
               batch_metrics: list[dict[str, Any]] | None = None) -> None:
        reports.append((steps, metrics, batch_metrics or []))

    with pytorch.init(hparams=HPARAMS) as context:
        context._core.train.report_training_metrics = report  # type: ignore[method-assign,assignment]
        context._core.train.report_progress = progress.append  # type: ignore[attr-defined]
        trial = HparamsTrial(context, HPARAMS)
        Trainer(trial, context).fit(max_length=Epoch(2), reporting_period=Epoch(1))
    assert [steps for steps, _, _ in reports] == [8, 16]
    for _, metrics, per_batch in reports:
        assert len(per_batch) == 8
        mean = sum(b["loss"] for b in per_batch) / 8
        assert metrics["loss"] == pytest.approx(mean)
    assert progress == [0.5, 1.0]


def test_init_locally_without_hparams_has_none(in_tmp: pathlib.Path) -> None:
    with pytorch.init(exp_conf={"data": {"x": 1}}) as context:
        assert context.get_hparams() == {}
        assert context.get_data_config() == {"x": 1}
        assert context.distributed.size == 1
        with pytest.raises(KeyError, match="hyperparameter 'lr' is not set"):
            context.get_hparam("lr")


def test_init_under_torchrun_trains_on_every_rank(tmp_path: pathlib.Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    env.pop("DET_TRIAL_INFO", None)
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
               "--master_addr=127.0.0.1", f"--master_port={port}", str(HERE / "fit_script.py"),
               str(tmp_path)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr
    ranks = [json.loads((tmp_path / f"rank-{r}.json").read_text()) for r in range(2)]
    assert [(r["rank"], r["size"], r["outcome"]) for r in ranks] == [
        (0, 2, "completed"), (1, 2, "completed")]
    assert ranks[0]["weights"] == ranks[1]["weights"]
    assert sorted(ranks[0]["seen"] + ranks[1]["seen"]) == sorted(list(range(32)) * 2)
    assert ranks[0]["validations"] == [4, 8]  # 32 records in batches of 4 on 2 ranks


# fit(), in a job -----------------------------------------------------------------------


def test_fit_in_a_job_takes_max_length_from_the_searcher_with_a_warning(
    tmp_path: pathlib.Path,
) -> None:
    context = cluster_context(tmp_path, {"searcher": {"max_length": {"batches": 5},
                                                      "metric": "validation_loss"}})
    trainer = Trainer(RegressionTrial(context), context)
    with pytest.warns(FutureWarning, match="set `fit\\(max_length=X\\)` directly"):
        trainer.fit()
    assert trainer.progress.batches == 5
    with pytest.raises(ValueError, match="test_mode is only supported in local training mode"):
        trainer.fit(max_length=Batch(1), test_mode=True)


def test_fit_in_a_job_warns_of_an_asha_length_mismatch_and_a_forgotten_checkpoint(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture,
) -> None:
    config = {"searcher": {"name": "adaptive_asha", "metric": "validation_loss",
                           "time_metric": "batches", "max_time": 937}}
    context = cluster_context(tmp_path, config, latest="some-uuid")
    trainer = Trainer(RegressionTrial(context), context)
    with caplog.at_level(logging.WARNING, logger="hpcdet.pytorch"):
        trainer.fit(max_length=Epoch(1))
    assert "does not match `searcher.max_time`" in caplog.text
    assert "(Batch(value=937))" in caplog.text
    assert "latest_checkpoint has not been configured" in caplog.text


def test_fit_in_a_job_keeps_checkpoint_policy_best(tmp_path: pathlib.Path) -> None:
    config = {"searcher": {"metric": "validation_loss"}}
    context = cluster_context(tmp_path, config)
    trial = RegressionTrial(context)
    Trainer(trial, context).fit(max_length=Batch(40), validation_period=Batch(4))
    losses = [(m["batches"], m["validation_loss"]) for m in trial.recorder.validation]
    improving, best = [], float("inf")
    for batches, loss in losses:
        if loss < best:
            improving.append(batches)
            best = loss
    assert saved_steps(tmp_path / "ckpt") == sorted(set(improving) | {40})
    assert len(saved_steps(tmp_path / "ckpt")) < len(losses)


# The harness's path --------------------------------------------------------------------


def test_the_harness_path_builds_a_trial_that_takes_hparams(tmp_path: pathlib.Path) -> None:
    config = {"searcher": {"max_length": {"batches": 4}},
              "hyperparameters": {"global_batch_size": 8, "lr": 0.01}}
    code = pytorch.run_trial_class(HparamsTrial, local=True, experiment_config=config,
                                   checkpoint_dir=tmp_path)
    assert code == 0
    (uuid,) = [p.parent.name for p in tmp_path.glob("*/metadata.json")]
    trial = pytorch.load_trial_from_checkpoint_path(tmp_path / uuid)
    assert isinstance(trial, HparamsTrial)
    assert trial.hparams == {"global_batch_size": 8, "lr": 0.01}


def test_init_in_a_job_takes_the_trials_hparams_config_and_seed(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = {"searcher": {"max_length": {"batches": 3}, "metric": "validation_loss"},
              "data": {"where": "job"}}
    trial_json = local.trial_json(local.LocalTrial(config, HPARAMS, 11, tmp_path))
    (tmp_path / "trial.json").write_text(json.dumps(trial_json))
    monkeypatch.setenv("DET_TRIAL_INFO", str(tmp_path / "trial.json"))
    monkeypatch.setenv("DET_JOB_DIR", str(tmp_path))
    with pytorch.init(exp_conf={"data": {"where": "argument"}}) as context:
        assert context.get_hparams() == HPARAMS
        assert context.get_data_config() == {"where": "job"}
        assert context.get_trial_seed() == 11
        first = torch.rand(1)
        trainer = Trainer(RegressionTrial(context), context)
        with pytest.warns(FutureWarning):
            assert trainer.fit() is Outcome.COMPLETED
    torch.manual_seed(11)
    assert torch.equal(first, torch.rand(1))  # init() seeded torch with the trial seed
    assert saved_steps(tmp_path / "checkpoints") == [3]


def test_fit_stops_on_preemption_and_resumes_from_latest_checkpoint(
    in_tmp: pathlib.Path,
) -> None:
    def fit(hparams: dict[str, Any], latest: str | None) -> tuple[Trainer, Outcome]:
        torch.manual_seed(0)  # locally init() seeds nothing (as Determined's): the script does
        with pytorch.init(hparams=hparams) as context:
            trainer = Trainer(HparamsTrial(context, hparams), context)
            outcome = trainer.fit(max_length=Batch(20), checkpoint_period=Batch(5),
                                  reporting_period=Batch(4), latest_checkpoint=latest)
        return trainer, outcome

    full, _ = fit({**HPARAMS, "dropout": 0.0}, None)
    cut, outcome = fit({**HPARAMS, "dropout": 0.0, "preempt_at": 6}, None)
    assert (outcome, cut.progress.batches) == (Outcome.STOPPED, 8)  # the report after 6
    steps = {json.loads(p.read_text())["steps_completed"]: p.parent.name
             for p in (in_tmp / "checkpoints").glob("*/metadata.json")}
    assert {5, 8} <= set(steps)
    _preempt._reset_for_tests()
    resumed, outcome = fit({**HPARAMS, "dropout": 0.0}, steps[8])
    assert (outcome, resumed.progress.batches) == (Outcome.COMPLETED, 20)
    for a, b in zip(full.trial.model.parameters(),  # type: ignore[attr-defined]
                    resumed.trial.model.parameters(), strict=True):  # type: ignore[attr-defined]
        assert torch.equal(a, b)
