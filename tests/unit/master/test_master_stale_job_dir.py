"""A trial's first run starts from an empty job directory, even where an earlier database
under the same job root left one (same experiment and trial ids, other code)."""

from __future__ import annotations

import json
from pathlib import Path

from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from lifecycle_helpers import end_job, job_dir, start, trial_of
from master_helpers import CONFIG, create

from hpcdet.dispatcher import JobPhase
from hpcdet.jobfiles import PREEMPTED, write_exit_reason, write_latest_checkpoint
from hpcdet.master.scheduling.job_dirs import trial_job_dir
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.settings.core import MasterSettings


def test_the_first_run_removes_what_an_earlier_database_left(
        client: FlaskClient, app: Flask, reconciler: Reconciler, settings: MasterSettings) -> None:
    # This database's first experiment and trial are 1 and 1, like the earlier one's.
    stale = Path(trial_job_dir(settings, 1, 1))
    (stale / "context").mkdir(parents=True)
    (stale / "context" / "model_def.py").write_text("raise SystemExit('old code')\n")
    write_latest_checkpoint(stale, "0b7f6a52-1111-4222-8333-944455556666", 40)
    response = create(client, CONFIG)
    assert response.status_code == 201, response.get_json()
    reconciler.cycle()
    assert job_dir(app, trial_of(app, response.get_json()["experiment"]["id"]).id) == stale
    assert not (stale / "context" / "model_def.py").exists()
    assert not (stale / "latest_checkpoint.json").exists()
    assert json.loads((stale / "trial.json").read_text())["latest_checkpoint"] is None


def test_a_later_run_keeps_its_job_directory(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    here = job_dir(app, trial_id)
    write_latest_checkpoint(here, "0b7f6a52-1111-4222-8333-944455556666", 40)
    write_exit_reason(here, "101", 0, PREEMPTED, rank=0)
    end_job(app, fake, reconciler, trial_id, JobPhase.COMPLETED)
    reconciler.cycle()
    assert trial_of(app, exp_id).run_id == 2
    assert (here / "latest_checkpoint.json").exists()
