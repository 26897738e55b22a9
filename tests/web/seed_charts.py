"""Seeding for the chart tests: a finished search of a few trials with hyperparameters of each
kind (log, int, categorical) and a constant one, their validation curves and best values, and
one long trial with training metrics, the trainer's counters and profiler samples; and a
second, smaller search (other hyperparameters) for the comparison across experiments."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from hpcdet.master.models import Experiment, Metric, Trial

OWNER = "alice"
AT = dt.datetime(2026, 11, 20, 9, 0, 0, tzinfo=dt.timezone.utc)
CONFIG: dict[str, Any] = {
    "name": "charts search",
    "searcher": {"name": "random", "metric": "validation_loss", "smaller_is_better": True,
                 "max_trials": 6},
    "hyperparameters": {
        "lr": {"type": "log", "base": 10, "minval": -4, "maxval": -1},
        "hidden": {"type": "int", "minval": 16, "maxval": 256},
        "optimizer": {"type": "categorical", "vals": ["adam", "sgd", "rmsprop"]},
        "batch_size": 64,
    },
}
HPARAMS = [{"lr": 0.0003, "hidden": 32, "optimizer": "adam", "batch_size": 64},
           {"lr": 0.001, "hidden": 64, "optimizer": "sgd", "batch_size": 64},
           {"lr": 0.003, "hidden": 128, "optimizer": "adam", "batch_size": 64},
           {"lr": 0.01, "hidden": 256, "optimizer": "rmsprop", "batch_size": 64},
           {"lr": 0.03, "hidden": 48, "optimizer": "sgd", "batch_size": 64},
           {"lr": 0.08, "hidden": 200, "optimizer": "rmsprop", "batch_size": 64}]
# The second search: the same lr and batch size as the first's first trial, other the rest.
OTHER_HPARAMS = [{"lr": 0.0003, "batch_size": 64, "dropout": 0.1},
                 {"lr": 0.002, "batch_size": 64, "dropout": 0.3}]
TRAINING_STEPS = 3000
PROFILING_NAMES = ("system.cpu_util_pct", "system.memory_used_bytes", "gpu.0.util_pct",
                   "timing.train_batch.mean_ms@rank0", "timing.train_batch.mean_ms@rank1")


@dataclass
class Seeded:
    experiment_id: int
    trial_ids: list[int]
    long_trial_id: int


def _row(trial_id: int, group: str, step: int, name: str, value: float,
         seconds: float) -> dict[str, Any]:
    return {"trial_id": trial_id, "group": group, "steps_completed": step, "name": name,
            "value": value, "reported_at": AT + dt.timedelta(seconds=seconds)}


def _validation_rows(trial_id: int, index: int) -> list[dict[str, Any]]:
    rows = []
    for k, step in enumerate(range(100, 1100, 100)):
        loss = 0.2 + index * 0.05 + 1.5 / (k + 1)
        rows.append(_row(trial_id, "validation", step, "validation_loss", loss, step * 2))
        rows.append(_row(trial_id, "validation", step, "accuracy", 1 - loss / 3, step * 2))
    return rows


def _training_rows(trial_id: int) -> list[dict[str, Any]]:
    rows = []
    for step in range(1, TRAINING_STEPS + 1):
        loss = 2.5 * math.exp(-step / 700) + 0.05 + 0.04 * math.sin(step / 9)
        for name, value in (("loss", loss), ("batches", float(step)),
                            ("epochs", float(step // 250)), ("records", step * 64.0)):
            rows.append(_row(trial_id, "training", step, name, value, step * 0.5))
    for window, step in enumerate(range(50, TRAINING_STEPS + 1, 50)):
        for name in PROFILING_NAMES:
            timing = 12 + window % 5 + 3 * name.endswith("rank1")  # rank 1 is slower
            value = (60 + 30 * math.sin(window / 4) if "pct" in name else
                     8e9 + 1e8 * window if "memory" in name else timing)
            rows.append(_row(trial_id, "profiling", step, name, value, step * 0.5))
    return rows


def seed_search(sessions: Callable[[], Session], hparam_sets: list[dict[str, Any]] | None = None,
                *, training: bool = True) -> Seeded:
    """The search and its trials, all finished (the reconciler leaves them alone); another
    search of ``hparam_sets`` and no training rows with ``training=False``."""
    with sessions() as session, session.begin():
        exp = Experiment(name=CONFIG["name"], owner=OWNER, state="COMPLETED", config=CONFIG,
                         original_config="", context=b"", searcher_name="random",
                         ended_at=AT + dt.timedelta(hours=1))
        session.add(exp)
        session.flush()
        trials, rows = [], []
        for index, hparams in enumerate(hparam_sets or HPARAMS):
            best = 0.2 + index * 0.05 + 0.15
            trial = Trial(experiment_id=exp.id, state="COMPLETED", hparams=hparams, seed=index,
                          token="t", job_dir="", steps_completed=1000,
                          best_validation={"steps_completed": 1000,
                                           "metrics": {"validation_loss": best}},
                          ended_at=AT + dt.timedelta(hours=1))
            session.add(trial)
            session.flush()
            trials.append(trial.id)
            rows += _validation_rows(trial.id, index)
        rows += _training_rows(trials[0]) if training else []
        session.execute(insert(Metric), rows)
        return Seeded(experiment_id=exp.id, trial_ids=trials, long_trial_id=trials[0])
