"""One process, no process group: the trainer's loop, periods, reducers and stops."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")

from pytorch_trials import FullDatasetTrial, RegressionTrial  # noqa: E402

from hpcdet.core import _preempt  # noqa: E402
from hpcdet.pytorch import Outcome, Trainer, local_core_context  # noqa: E402


def config(length: dict[str, int], **extra: Any) -> dict[str, Any]:
    return {"searcher": {"max_length": length}, "reproducibility": {"experiment_seed": 7}, **extra}


def train(
    tmp_path: pathlib.Path,
    cfg: dict[str, Any],
    hparams: dict[str, Any] | None = None,
    trial_class: type[RegressionTrial] = RegressionTrial,
    latest: str | None = None,
) -> Trainer:
    hp = {"global_batch_size": 8, "lr": 0.01, **(hparams or {})}
    core = local_core_context(
        cfg, hparams=hp, checkpoint_dir=tmp_path / "ckpt", latest_checkpoint=latest
    )
    with core:
        trainer = Trainer(trial_class, core)
        trainer.outcome = trainer.run()  # type: ignore[attr-defined]
    return trainer


def checkpoints(tmp_path: pathlib.Path) -> list[dict[str, Any]]:
    metas = [json.loads(p.read_text()) for p in (tmp_path / "ckpt").glob("*/metadata.json")]
    return sorted(metas, key=lambda m: m["steps_completed"])


def weights(trainer: Trainer) -> list[Any]:
    return [p.detach().clone() for p in trainer.context.models[0].parameters()]


def test_trains_to_max_length_in_epochs_validates_and_checkpoints_at_the_end(
    tmp_path: pathlib.Path,
) -> None:
    trainer = train(tmp_path, config({"epochs": 3}))
    trial = trainer.trial
    assert isinstance(trial, RegressionTrial)
    assert trainer.progress.batches == 24  # 64 records / 8 per batch * 3 epochs
    assert sorted(trial.seen) == sorted(list(range(64)) * 3)
    assert trial.recorder.epochs_ended == [0, 1, 2]
    (final,) = trial.recorder.validation
    assert (final["batches"], final["epochs"], final["records"]) == (24, 3.0, 192)
    assert [m["steps_completed"] for m in checkpoints(tmp_path)] == [24]


def test_the_loss_falls(tmp_path: pathlib.Path) -> None:
    trainer = train(tmp_path, config({"batches": 40}, scheduling_unit=10))
    trial = trainer.trial
    assert isinstance(trial, RegressionTrial)
    losses = [m["loss"] for m in trial.recorder.training]
    assert len(losses) == 4
    assert losses[-1] < losses[0] / 2


def test_records_and_batches_lengths_and_periods(tmp_path: pathlib.Path) -> None:
    cfg = config(
        {"records": 100},  # 12 whole batches of 8 (Determined rounds records down)
        min_validation_period={"batches": 5},
        min_checkpoint_period={"records": 48},  # 6 batches
    )
    trainer = train(tmp_path, cfg)
    trial = trainer.trial
    assert isinstance(trial, RegressionTrial)
    assert trainer.progress.batches == 12
    assert [m["batches"] for m in trial.recorder.validation] == [5, 10, 12]
    assert [m["steps_completed"] for m in checkpoints(tmp_path)] == [6, 12]


def test_max_time_with_time_metric(tmp_path: pathlib.Path) -> None:
    cfg = {"searcher": {"max_time": 2, "time_metric": "epochs"}}
    assert train(tmp_path, cfg).progress.batches == 16


def test_validation_reducers(tmp_path: pathlib.Path) -> None:
    trainer = train(tmp_path, config({"batches": 2}))
    trial = trainer.trial
    assert isinstance(trial, RegressionTrial)
    (metrics,) = trial.recorder.validation
    # 30 validation records in batches of 7: indices 0..4, 30 records in all.
    assert metrics["batch_max"] == 4.0
    assert metrics["count"] == 30.0
    assert metrics["validation_loss"] > 0


def test_full_dataset_evaluation_and_a_custom_reducer(tmp_path: pathlib.Path) -> None:
    trainer = train(tmp_path, config({"batches": 2}), trial_class=FullDatasetTrial)
    trial = trainer.trial
    assert isinstance(trial, FullDatasetTrial)
    (metrics,) = trial.recorder.validation
    assert metrics["records_seen"] == 30
    assert metrics["mae"] > 0


def test_set_stop_requested_stops_at_the_next_check_after_a_checkpoint(
    tmp_path: pathlib.Path,
) -> None:
    trainer = train(tmp_path, config({"batches": 50}, scheduling_unit=4), {"stop_at": 5})
    assert trainer.outcome is Outcome.STOPPED  # type: ignore[attr-defined]
    assert trainer.progress.batches == 8
    assert [m["steps_completed"] for m in checkpoints(tmp_path)] == [8]


def test_preemption_checkpoints_then_resume_matches_an_uninterrupted_run(
    tmp_path: pathlib.Path,
) -> None:
    cfg = config({"batches": 30}, scheduling_unit=4, min_checkpoint_period={"batches": 6})
    full = train(tmp_path / "full", cfg)
    stopped = train(tmp_path / "cut", cfg, {"preempt_at": 9})
    assert stopped.outcome is Outcome.STOPPED  # type: ignore[attr-defined]
    assert stopped.progress.batches == 12
    steps = {
        json.loads(path.read_text())["steps_completed"]: path.parent.name
        for path in (tmp_path / "cut" / "ckpt").glob("*/metadata.json")
    }
    assert sorted(steps) == [6, 12]
    _preempt._reset_for_tests()
    resumed = train(tmp_path / "cut", cfg, latest=steps[12])
    assert resumed.progress.batches == 30
    for a, b in zip(weights(full), weights(resumed), strict=True):
        assert torch.equal(a, b)
    trial = resumed.trial
    assert isinstance(trial, RegressionTrial)
    assert trial.recorder.loaded == 1


def test_two_runs_give_bit_identical_weights(tmp_path: pathlib.Path) -> None:
    cfg = config({"batches": 12})
    first, second = train(tmp_path / "a", cfg), train(tmp_path / "b", cfg)
    for a, b in zip(weights(first), weights(second), strict=True):
        assert torch.equal(a, b)


def test_aggregation_frequency_equals_a_k_times_larger_batch(tmp_path: pathlib.Path) -> None:
    # No dropout randomness difference: lr small, compare 2x4 accumulation with batches of 8.
    accumulated = train(
        tmp_path / "k",
        config({"batches": 16}, optimizations={"aggregation_frequency": 2}),
        {"global_batch_size": 4, "dropout": 0.0},
    )
    large = train(
        tmp_path / "one", config({"batches": 8}), {"global_batch_size": 8, "dropout": 0.0}
    )
    for a, b in zip(weights(accumulated), weights(large), strict=True):
        assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.parametrize(("policy", "expected"), [
    ("all", [4, 8, 12, 16]),   # every validation, plus the end (16 validated at 16)
    ("none", [16]),            # only the end of training
])
def test_checkpoint_policy_all_and_none(tmp_path: pathlib.Path, policy: str,
                                        expected: list[int]) -> None:
    cfg = config({"batches": 16}, min_validation_period={"batches": 4},
                 checkpoint_policy=policy)
    cfg["searcher"]["metric"] = "validation_loss"
    train(tmp_path, cfg)
    assert [m["steps_completed"] for m in checkpoints(tmp_path)] == expected


def test_checkpoint_policy_best_checkpoints_only_validations_that_improve(
        tmp_path: pathlib.Path) -> None:
    cfg = config({"batches": 40}, min_validation_period={"batches": 4}, checkpoint_policy="best")
    cfg["searcher"]["metric"] = "validation_loss"
    trainer = train(tmp_path, cfg)
    trial = trainer.trial
    assert isinstance(trial, RegressionTrial)
    losses = [(m["batches"], m["validation_loss"]) for m in trial.recorder.validation]
    improving, best = [], float("inf")
    for batches, loss in losses:
        if loss < best:
            improving.append(batches)
            best = loss
    saved = [m["steps_completed"] for m in checkpoints(tmp_path)]
    assert saved == sorted(set(improving) | {40})
    # Some validations must not improve (and so not be saved), or "best" and "all" look alike.
    assert set(saved) < {b for b, _ in losses}, losses
