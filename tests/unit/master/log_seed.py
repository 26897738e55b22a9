"""Rows for the log tests: an experiment, trials and jobs inserted directly (no searcher)."""

from __future__ import annotations

from typing import Any

from flask import Flask
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Experiment, Job, Trial, TrialLog

# Four ranks, two per node: ranks 0-1 on the first host, 2-3 on the second.
TWO_BY_TWO: dict[str, Any] = {"resources": {"slots_per_trial": 4},
                              "slurm": {"slots_per_node": 2}}


def sessions(app: Flask) -> sessionmaker[Session]:
    return make_session_factory(app.config["HPCDET_ENGINE"])


def add_experiment(session: Session, config: dict[str, Any] | None = None) -> Experiment:
    exp = Experiment(name="logs", owner="alice", state="ACTIVE", config=config or TWO_BY_TWO,
                     original_config="", context=b"", searcher_name="single")
    session.add(exp)
    session.flush()
    return exp


def add_trial(session: Session, exp: Experiment, state: str = "RUNNING",
              job_dir: str = "") -> Trial:
    trial = Trial(experiment_id=exp.id, state=state, hparams={}, seed=1, token="t",
                  job_dir=job_dir)
    session.add(trial)
    session.flush()
    return trial


def add_job(session: Session, trial: Trial, job_id: str | None = "101",
            nodes: str | None = "node[1-2]", **extra: Any) -> Job:
    job = Job(trial_id=trial.id, run_id=trial.run_id + 1, job_id=job_id, nodes=nodes, **extra)
    trial.run_id += 1
    session.add(job)
    session.flush()
    return job


def add_lines(session: Session, trial: Trial, count: int, **extra: Any) -> None:
    session.add_all(TrialLog(trial_id=trial.id, job_id="101", stream="stdout",
                             line=f"line {i}", **extra) for i in range(count))
    session.flush()
