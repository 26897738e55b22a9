"""``det experiment describe`` for a search: hyperparameters, best metric, best trial marked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from click.testing import Result
from conftest import FakeMasterTransport

from hpcdet.cli.trial import format_hparams, trial_note

Det = Callable[..., Result]


def _trial(trial_id: int, loss: float | None, **extra: Any) -> dict[str, Any]:
    best = None if loss is None else {"steps_completed": 10,
                                      "metrics": {"loss": loss, "accuracy": 1 - loss}}
    return {"id": trial_id, "experiment_id": 5, "state": "COMPLETED", "steps_completed": 10,
            "hparams": {"lr": 0.01 * trial_id, "arch": {"width": 16, "depth": 2}},
            "restarts": 0, "best_validation": best, "job_ids": [str(100 + trial_id)],
            "early_exit": None, "stop_reason": None, "created_at": None, "ended_at": None,
            **extra}


def test_the_best_trial_is_marked_and_its_metric_shown(
        det: Det, fake_master: FakeMasterTransport) -> None:
    experiment = {"id": 5, "name": "asha", "state": "COMPLETED", "owner": "alice",
                  "searcher": "adaptive_asha", "num_trials": 3, "progress": 1.0,
                  "best_trial_id": 2, "history": [],
                  "config": {"searcher": {"metric": "loss", "smaller_is_better": True}}}
    trials = [_trial(1, 0.5, stop_reason="early_stopped"), _trial(2, 0.1),
              _trial(3, None, state="ERROR")]
    fake_master.add("GET", "/experiments/5", {"experiment": experiment})
    fake_master.add("GET", "/experiments/5/trials", {"trials": trials})
    result = det("e", "describe", "5")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "  searcher metric: loss (smaller is better)" in lines
    assert "  best trial:      2" in lines and "  progress:        100%" in lines
    header = next(line for line in lines if line.startswith("ID "))
    assert "Best loss" in header
    row = {line.split()[0]: line for line in lines if line[:1].isdigit()}
    assert row["2"].startswith("2 *") and "0.1" in row["2"]
    assert "early-stopped by searcher" in row["1"] and "*" not in row["1"]
    assert "arch.depth=2 arch.width=16 lr=0.01" in row["1"]


def test_hparams_are_flattened_and_notes_name_early_exits() -> None:
    assert format_hparams({"b": 1, "a": {"y": "x", "z": [1, 2]}}) == "a.y=x a.z=[1, 2] b=1"
    assert trial_note({"early_exit": "invalid_hp"}) == "invalid hyperparameters"
    assert trial_note({"early_exit": "errored"}) == "exited early (errored)"
    assert trial_note({"stop_reason": "searcher_done"}) == ""
