"""Seeding for the "pages" area's Chromium tests: experiments, trials and their jobs written
straight into a live master's database (nothing trains), and a model through the API.

Seeded experiments are ACTIVE with RUNNING trials whose jobs have ended (no active job for
the reconciler to poll), or ended with ended trials: the master's reconciler leaves both be.
An ACTIVE one carries a complete config and a started searcher's state, as a submitted
experiment does: a search the master had to start would fail on a partial config (and now
end its experiment in ERROR).
"""

from __future__ import annotations

import datetime as dt
import json
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.orm import Session

from hpcdet.master.experiments.searcher_store import build_searcher
from hpcdet.master.models import (
    CommandTask,
    Experiment,
    Job,
    Metric,
    StateChange,
    Trial,
    as_utc,
)

Sessions = Callable[[], Session]
ENDED = ("COMPLETED", "CANCELED", "ERROR")
CONFIG = {"name": "seeded", "entrypoint": "model_def:Trial",
          "reproducibility": {"experiment_seed": 1},
          "searcher": {"name": "grid", "metric": "loss", "smaller_is_better": True,
                       "max_length": {"batches": 100}},
          "hyperparameters": {"lr": {"type": "log", "minval": -3, "maxval": -1, "base": 10,
                                     "count": 3}},
          "resources": {"slots_per_trial": 1, "resource_pool": None}, "labels": None}
ORIGINAL = ("name: seeded\nentrypoint: model_def:Trial\nsearcher:\n  name: grid\n"
            "  metric: loss\n  max_length: {batches: 100}\n")


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def add_experiment(sessions: Sessions, *, name: str = "exp", owner: str = "tester",
                   state: str = "ACTIVE", losses: Sequence[float] = (0.5,),
                   labels: Sequence[str] = (), progress: float = 0.5) -> int:
    """An experiment with one trial per loss (its best validation), each with an ended job."""
    ended = state in ENDED
    with sessions() as session, session.begin():
        exp = Experiment(name=name, owner=owner, state=state, labels=list(labels),
                         config={**CONFIG, "name": name}, original_config=ORIGINAL,
                         context=b"", searcher_name="grid", progress=progress,
                         searcher_state=build_searcher(CONFIG).to_state(),
                         ended_at=now() if ended else None)
        session.add(exp)
        session.flush()
        session.add(StateChange(entity_kind="experiment", entity_id=exp.id, from_state=None,
                                to_state="ACTIVE", cause="created", actor=owner))
        for n, loss in enumerate(losses):
            trial = Trial(experiment_id=exp.id, state="COMPLETED" if ended else "RUNNING",
                          hparams={"lr": 10 ** -(n + 1)}, seed=n, token=f"t{exp.id}-{n}",
                          steps_completed=100,
                          best_validation={"steps_completed": 100, "metrics": {"loss": loss}},
                          latest_validation={"steps_completed": 100, "metrics": {"loss": loss}},
                          ended_at=now() if ended else None)
            session.add(trial)
            session.flush()
            session.add(Job(trial_id=trial.id, run_id=0, job_id=str(90000 + trial.id),
                            active=False, native_state="COMPLETED", exit_code=0,
                            nodes="node1", ended_at=now()))
        return exp.id


def backdate(sessions: Sessions, exp_id: int, created_at: dt.datetime) -> None:
    """Moves an experiment to ``created_at``: its times, its trials' and their jobs' and
    state changes' all shift by the same amount (older times read as dates, not "just now")."""
    with sessions() as session, session.begin():
        exp = session.get_one(Experiment, exp_id)
        shift = created_at - as_utc(exp.created_at)
        trials = session.query(Trial).filter_by(experiment_id=exp_id).all()
        jobs = session.query(Job).filter(Job.trial_id.in_([t.id for t in trials])).all()
        changes = session.query(StateChange).filter_by(entity_kind="experiment",
                                                       entity_id=exp_id).all()
        for row, names in [(exp, ("created_at", "ended_at")), *((t, ("created_at", "ended_at"))
                           for t in trials), *((j, ("submitted_at", "ended_at")) for j in jobs),
                           *((c, ("at",)) for c in changes)]:
            for name in names:
                if getattr(row, name) is not None:
                    setattr(row, name, as_utc(getattr(row, name)) + shift)


def add_training(sessions: Sessions, trial_id: int, start: dt.datetime,
                 steps: int = 20) -> None:
    """Training losses a minute apart from ``start``: the trial page's charts and its
    throughput over time (an axis of times) have something to draw."""
    with sessions() as session, session.begin():
        session.add_all(Metric(trial_id=trial_id, group="training", steps_completed=step,
                               name="loss", value=1.0 / step,
                               reported_at=start + dt.timedelta(minutes=step))
                        for step in range(1, steps + 1))


def add_task(sessions: Sessions, *, name: str = "cmd", state: str = "COMPLETED") -> int:
    """A command task that has ended (no job left for the reconciler to poll)."""
    with sessions() as session, session.begin():
        task = CommandTask(owner="tester", name=name, state=state, job_id=None, job_dir="/tmp",
                           cwd="/tmp", workdir="/tmp", output_pattern="out", kind="command",
                           ended_at=now(), exit_code=0)
        session.add(task)
        session.flush()
        return task.id


def experiment_states(sessions: Sessions, ids: Sequence[int]) -> dict[int, str]:
    with sessions() as session:
        return {i: session.get_one(Experiment, i).state for i in ids}


def first_trial(sessions: Sessions, exp_id: int) -> int:
    with sessions() as session:
        trial = session.query(Trial).filter_by(experiment_id=exp_id).order_by(Trial.id).first()
        assert trial is not None
        return trial.id


def api_post(url: str, path: str, body: dict[str, Any], user: str = "tester") -> Any:
    """POST JSON to the live master as ``user``."""
    request = urllib.request.Request(
        url + path, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "X-Hpcdet-User": user})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())
