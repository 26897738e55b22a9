"""Unmanaged experiments (Determined's ``core_v2``) against a real app in process.

The script side is the real ``hpcdet.experimental.core_v2`` (its SDK client and its
trial-token clients go through ``httpx.WSGITransport``); the scheduler is the scripted one,
which must never be asked to run these trials.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from hang_guard import HANG_GUARD_S
from lifecycle_helpers import session_of
from master_helpers import assert_error
from sqlalchemy import select

from hpcdet.dispatcher import JobPhase
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.experimental import core_v2
from hpcdet.experimental._determined import Determined
from hpcdet.master.app import create_app
from hpcdet.master.experiments import unmanaged
from hpcdet.master.models import Checkpoint, Experiment, Metric, Trial
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.settings.core import MasterSettings

ALICE = {"X-Hpcdet-User": "alice"}
# What depends on the database (queries by external id, heartbeat times, the linked job)
# runs on both; the rest of the flow is the same code on either.
SQLITE_ONLY = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


@pytest.fixture
def sdk_client(app: Flask, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Determined:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("DET_USER_TOKEN", "DET_TRIAL_INFO", "SLURM_JOB_ID", "PBS_JOBID",
                 "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "RANK"):
        monkeypatch.delenv(name, raising=False)
    determined = Determined("http://localhost:8080", user="alice",
                            transport=httpx.WSGITransport(app=app))
    yield determined
    core_v2.close()
    determined.close()


def _run(client: Determined, steps: range, *, fail: bool = False, **config: Any) -> Any:
    """Determined's 2_checkpoints.py in small: resume, report, checkpoint, close."""
    core_v2.init(config=core_v2.Config(**config), client=client)
    assert core_v2.info is not None and core_v2.train is not None
    assert core_v2.checkpoint is not None
    info = core_v2.info
    start = 0
    if info.latest_checkpoint is not None:
        with core_v2.checkpoint.restore_path(info.latest_checkpoint) as path:
            start = int((path / "state").read_text())
    for i in steps:
        core_v2.train.report_training_metrics(steps_completed=start + i,
                                              metrics={"loss": 1.0 / (start + i + 1)})
    core_v2.train.report_validation_metrics(steps_completed=start + steps[-1],
                                            metrics={"loss": 0.5})
    with core_v2.checkpoint.store_path({"steps_completed": start + steps[-1]}) as (path, _):
        (path / "state").write_text(str(start + len(steps)))
    if fail:
        raise RuntimeError("the script failed")
    core_v2.close()
    return info


def _exp(app: Flask, exp_id: int) -> Experiment:
    with session_of(app) as session:
        exp = session.get_one(Experiment, exp_id)
        session.expunge(exp)
        return exp


def _trials(app: Flask, exp_id: int) -> list[Trial]:
    with session_of(app) as session:
        trials = list(session.scalars(select(Trial).where(Trial.experiment_id == exp_id)))
        for trial in trials:
            session.expunge(trial)
        return trials


def test_a_script_reports_into_an_unmanaged_experiment_the_master_never_runs(
        sdk_client: Determined, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend, tmp_path: Path) -> None:
    info = _run(sdk_client, range(5), name="unmanaged-1", hparams={"lr": 0.1},
                labels=["a"], checkpoint_storage=str(tmp_path / "jobs" / "ckpt"))
    assert info.trial.hparams == {"lr": 0.1} and info._trial_info.experiment_id
    exp = _exp(app, info.experiment_id)
    assert exp.unmanaged and exp.state == "COMPLETED" and exp.labels == ["a"]
    [trial] = _trials(app, exp.id)
    assert trial.state == "COMPLETED" and trial.run_id == 1 and trial.steps_completed == 4
    with session_of(app) as session:
        names = set(session.scalars(select(Metric.group).where(Metric.trial_id == trial.id)))
        [ckpt] = session.scalars(select(Checkpoint).where(Checkpoint.trial_id == trial.id))
        assert names == {"training", "validation"}
        assert (tmp_path / "jobs" / "ckpt" / ckpt.uuid / "state").read_text() == "5"
    reconciler.cycle()
    reconciler.cycle()
    assert fake.submitted == [] and len(_trials(app, exp.id)) == 1


@SQLITE_ONLY
def test_external_ids_resume_the_same_trial_from_its_checkpoint(
        sdk_client: Determined, app: Flask, tmp_path: Path) -> None:
    ids = {"external_experiment_id": "exp-x", "external_trial_id": "trial-x",
           "checkpoint_storage": str(tmp_path / "jobs" / "ckpt")}
    first = _run(sdk_client, range(3), name="resumed", **ids)
    second = _run(sdk_client, range(2), name="resumed", **ids)
    assert second.experiment_id == first.experiment_id
    assert second.trial_id == first.trial_id and second.run_id == 2
    assert second.latest_checkpoint is not None
    [trial] = _trials(app, first.experiment_id)
    assert trial.state == "COMPLETED" and trial.steps_completed == 4  # 3 + 2 - 1


@SQLITE_ONLY
def test_an_exception_in_the_with_block_ends_the_trial_in_error(
        sdk_client: Determined, app: Flask) -> None:
    with pytest.raises(RuntimeError, match="boom"), core_v2.init_context(
            config=core_v2.Config(name="fails"), client=sdk_client) as context:
        context.train.report_training_metrics(steps_completed=1, metrics={"loss": 1.0})
        exp_id = context.info.experiment_id
        raise RuntimeError("boom")
    assert exp_id is not None
    assert _exp(app, exp_id).state == "ERROR"
    assert [t.state for t in _trials(app, exp_id)] == ["ERROR"]


def test_a_run_in_a_users_own_job_ends_when_the_job_ends(
        sdk_client: Determined, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    fake.phases["4242"] = JobPhase.RUNNING
    core_v2.init(config=core_v2.Config(name="in-a-job"), client=sdk_client)
    assert core_v2.info is not None
    exp_id = core_v2.info.experiment_id
    assert exp_id is not None
    reconciler.cycle()
    [trial] = _trials(app, exp_id)
    assert trial.state == "RUNNING" and trial.external_job == "4242"
    assert ["4242"] in fake.poll_calls  # in the one poll of the cycle
    fake.phases["4242"] = JobPhase.FAILED  # e.g. killed by its time limit, no close()
    reconciler.cycle()
    assert [t.state for t in _trials(app, exp_id)] == ["ERROR"]
    assert _exp(app, exp_id).state == "ERROR"


def test_a_silent_run_ends_in_error_after_the_heartbeat_timeout(
        sdk_client: Determined, app: Flask) -> None:
    core_v2.init(config=core_v2.Config(name="silent"), client=sdk_client)
    assert core_v2.info is not None and core_v2.info.trial_id is not None
    trial_id = core_v2.info.trial_id
    with session_of(app) as session:
        later = dt.datetime.now(dt.timezone.utc) + unmanaged.HEARTBEAT_TIMEOUT / 2
        assert unmanaged.end_lost_runs(session, [], {}, now=later) == 0
        later += unmanaged.HEARTBEAT_TIMEOUT
        assert unmanaged.end_lost_runs(session, [], {}, now=later) == 1
        session.commit()
        assert session.get_one(Trial, trial_id).state == "ERROR"


@SQLITE_ONLY
def test_what_the_master_refuses(sdk_client: Determined, app: Flask,
                                 client: FlaskClient) -> None:
    bad = client.post("/api/v1/experiments", headers=ALICE,
                      json={"unmanaged": True, "config": "name: x\nentrypoint: run.sh\n"})
    assert_error(bad, 400, "invalid_config")
    assert "<config>.entrypoint: not used by an unmanaged" in bad.get_json()["error"]["details"][0]
    core_v2.init(config=core_v2.Config(name="refusals"), client=sdk_client)
    assert core_v2.info is not None
    exp_id, trial_id = core_v2.info.experiment_id, core_v2.info.trial_id
    assert "unmanaged" in assert_error(
        client.post(f"/api/v1/experiments/{exp_id}/pause", headers=ALICE), 409, "conflict")
    assert_error(client.post(f"/api/v1/experiments/{exp_id}/trials", headers=ALICE,
                             json={"job": "12;rm -rf /"}), 400, "bad_request")
    assert client.patch(f"/api/v1/trials/{trial_id}", headers=ALICE,
                        json={"state": "COMPLETED"}).status_code in (401, 403)
    core_v2.close()
    assert [t.state for t in _trials(app, exp_id or 0)] == ["COMPLETED"]


@SQLITE_ONLY
def test_a_managed_experiment_takes_no_trials_from_a_script(
        client: FlaskClient, reconciler: Reconciler) -> None:
    from master_helpers import create

    exp_id = create(client).get_json()["experiment"]["id"]
    assert "managed" in assert_error(
        client.post(f"/api/v1/experiments/{exp_id}/trials", headers=ALICE, json={}),
        409, "conflict")


def test_only_the_owner_adds_runs_on_a_master_that_knows_its_users(
        settings: MasterSettings) -> None:
    app = create_app(replace(settings, require_user=True, admins=("root",)),
                     backend=SlurmBackend())
    try:
        client = app.test_client()
        made = client.post("/api/v1/experiments", headers=ALICE,
                           json={"unmanaged": True, "config": "name: mine\n"})
        assert made.status_code == 201, made.get_json()
        exp_id = made.get_json()["experiment"]["id"]
        path = f"/api/v1/experiments/{exp_id}/trials"
        assert_error(client.post(path, headers={"X-Hpcdet-User": "bob"}, json={}),
                     404, "not_found")
        message = assert_error(client.post(path, headers={"X-Hpcdet-User": "root"}, json={}),
                               403, "forbidden")
        assert "only its owner 'alice'" in message
        assert client.post(path, headers=ALICE, json={}).status_code == 201
    finally:
        app.config["HPCDET_ENGINE"].dispose()


@SQLITE_ONLY
def test_a_killed_unmanaged_experiment_tells_its_script_to_stop(
        sdk_client: Determined, app: Flask, client: FlaskClient, reconciler: Reconciler,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCDET_PREEMPT_POLL_SECONDS", "0.05")
    core_v2.init(config=core_v2.Config(name="killed"), client=sdk_client)
    assert core_v2.info is not None and core_v2.preempt is not None
    exp_id = core_v2.info.experiment_id
    assert core_v2.preempt.should_preempt() is False
    assert client.post(f"/api/v1/experiments/{exp_id}/kill", headers=ALICE).status_code == 200
    reconciler.cycle()  # no job to cancel: the trial ends CANCELED at once
    assert [t.state for t in _trials(app, exp_id or 0)] == ["CANCELED"]
    deadline = time.monotonic() + HANG_GUARD_S
    while not core_v2.preempt.should_preempt():
        assert time.monotonic() < deadline, "should_preempt() never turned True"
        time.sleep(0.05)
    core_v2.close()  # reports COMPLETED, which the master ignores: the kill stands
    assert _exp(app, exp_id or 0).state == "CANCELED"


@SQLITE_ONLY
def test_det_shows_an_unmanaged_experiment_and_its_job(
        sdk_client: Determined, client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from hpcdet.cli.experiment import describe_text, experiments_table

    monkeypatch.setenv("SLURM_JOB_ID", "777")
    core_v2.init(config=core_v2.Config(name="shown"), client=sdk_client)
    assert core_v2.info is not None
    exp_id = core_v2.info.experiment_id
    listed = client.get("/api/v1/experiments", headers=ALICE).get_json()["experiments"]
    assert "(unmanaged)" in experiments_table(listed).splitlines()[-1]
    answer = client.get(f"/api/v1/experiments/{exp_id}", headers=ALICE).get_json()
    answer["trials"] = client.get(f"/api/v1/experiments/{exp_id}/trials",
                                  headers=ALICE).get_json()["trials"]
    text = describe_text(answer)
    assert "resource pool:" in text and "(unmanaged)" in text and "777" in text
    assert "None" not in text
    core_v2.close()


@SQLITE_ONLY
def test_an_hp_search_of_its_own_groups_trials_in_one_experiment(
        sdk_client: Determined, app: Flask) -> None:
    """Determined's ray_hp_search.py pattern: each trial its own init with the same
    external experiment id, a non-single searcher config, its own hparams."""
    searcher = {"name": "random", "metric": "loss", "smaller_is_better": True, "max_trials": 2}
    infos = []
    for name, hp in (("trial-a", 1), ("trial-b", 2)):
        core_v2.init(config=core_v2.Config(
            name="search", hparams={"hp": hp}, searcher=searcher,
            external_experiment_id="search-1", external_trial_id=name), client=sdk_client)
        assert core_v2.train is not None and core_v2.info is not None
        core_v2.train.report_validation_metrics(steps_completed=9, metrics={"loss": hp + 0.5})
        infos.append(core_v2.info)
        core_v2.close()
    assert infos[0].experiment_id == infos[1].experiment_id
    assert infos[0].trial_id != infos[1].trial_id
    exp = _exp(app, infos[0].experiment_id or 0)
    assert exp.state == "COMPLETED" and exp.config["searcher"]["name"] == "random"
    assert sorted(t.hparams["hp"] for t in _trials(app, exp.id)) == [1, 2]


@SQLITE_ONLY
def test_the_pages_tag_an_unmanaged_experiment(sdk_client: Determined,
                                               client: FlaskClient) -> None:
    core_v2.init(config=core_v2.Config(name="paged"), client=sdk_client)
    assert core_v2.info is not None
    exp_id = core_v2.info.experiment_id
    core_v2.close()
    listing = client.get("/", headers=ALICE).get_data(as_text=True)
    assert "data-unmanaged" in listing
    page = client.get(f"/experiments/{exp_id}", headers=ALICE).get_data(as_text=True)
    assert 'data-fact="unmanaged"' in page and 'data-fact="resource_pool"' not in page
