"""Reconciler logic against a scripted scheduler (the real Slurm path is the integration tier)."""

from __future__ import annotations

from pathlib import Path

from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import CONFIG, create
from sqlalchemy import select

from hpcdet.dispatcher import JobPhase
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Experiment, Job, StateChange, Trial, TrialLog
from hpcdet.master.scheduling.reconciler import Reconciler


def trial_history(app: Flask, trial_id: int) -> list[str]:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        rows = session.scalars(select(StateChange).where(
            StateChange.entity_kind == "trial", StateChange.entity_id == trial_id)
            .order_by(StateChange.id))
        return [r.to_state for r in rows]


def test_an_experiment_runs_to_completed(client: FlaskClient, app: Flask,
                                         reconciler: Reconciler,
                                         fake: FakeSchedulerBackend) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    report = reconciler.cycle()
    assert (report.trials_created, report.jobs_submitted, report.jobs_polled) == (1, 1, 1)
    job_dir = Path(fake.submitted[0].script_path).parent
    assert (job_dir / "context" / "train.py").exists() and (job_dir / "trial.json").exists()
    assert (job_dir / ".token").stat().st_mode & 0o777 == 0o600
    fake.phases["101"] = JobPhase.RUNNING
    reconciler.cycle()
    fake.phases["101"] = JobPhase.COMPLETED
    (job_dir / "slurm-101.out").write_text("0: epoch 1\n1: epoch 1\nno label\n")
    reconciler.cycle()
    described = client.get(f"/api/v1/experiments/{exp_id}").get_json()
    assert described["experiment"]["state"] == "COMPLETED"
    trial = client.get(f"/api/v1/experiments/{exp_id}/trials").get_json()["trials"][0]
    assert trial["state"] == "COMPLETED" and trial["job_ids"] == ["101"]
    assert trial_history(app, trial["id"]) == ["QUEUED", "RUNNING", "COMPLETED"]
    logs = client.get(f"/api/v1/trials/{trial['id']}/logs").get_json()["logs"]
    assert [(entry["rank"], entry["line"]) for entry in logs if entry["stream"] != "master"] == [
        (0, "epoch 1"), (1, "epoch 1"), (None, "no label")]
    assert [e["line"] for e in logs if e["stream"] == "master"] == [
        "job 101 is pending: Resources"]
    assert all(len(call) == 1 for call in fake.poll_calls)


def test_a_job_that_ends_between_polls_still_shows_it_ran(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    create(client)
    reconciler.cycle()
    fake.phases["101"] = JobPhase.COMPLETED
    reconciler.cycle()
    trial_id = client.get("/api/v1/experiments").get_json()["experiments"][0]["id"]
    assert trial_history(app, trial_id) == ["QUEUED", "RUNNING", "COMPLETED"]


def test_a_failed_job_ends_the_trial_and_experiment_in_error(
        client: FlaskClient, reconciler: Reconciler, fake: FakeSchedulerBackend) -> None:
    exp_id = create(client, CONFIG + "max_restarts: 0\n").get_json()["experiment"]["id"]
    reconciler.cycle()
    fake.phases["101"] = JobPhase.FAILED
    reconciler.cycle()
    listed = client.get(f"/api/v1/experiments/{exp_id}/trials").get_json()
    assert listed["trials"][0]["state"] == "ERROR"
    described = client.get(f"/api/v1/experiments/{exp_id}").get_json()
    history = [h["to"] for h in described["experiment"]["history"]]
    assert history == ["ACTIVE", "STOPPING_ERROR", "ERROR"]


def test_a_refused_submission_is_an_error_with_the_reason_in_the_log(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    fake.fail_submit = True
    create(client)
    reconciler.cycle()
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        trial = session.scalars(select(Trial)).one()
        assert trial.state == "ERROR"
        lines = session.scalars(select(TrialLog.line)).all()
        assert any("invalid partition" in line for line in lines)
        assert session.scalars(select(Job.active)).all() == [False]


def test_kill_cancels_with_one_command_and_ends_canceled(
        client: FlaskClient, reconciler: Reconciler, fake: FakeSchedulerBackend) -> None:
    first = create(client).get_json()["experiment"]["id"]
    second = create(client).get_json()["experiment"]["id"]
    reconciler.cycle()
    assert len(fake.poll_calls[-1]) == 2  # both jobs, one poll
    for exp_id in (first, second):
        client.post(f"/api/v1/experiments/{exp_id}/kill")
    reconciler.cycle()
    assert sorted(fake.cancelled) == ["101", "102"]
    reconciler.cycle()
    assert sorted(fake.cancelled) == ["101", "102"]  # not cancelled twice
    for exp_id in (first, second):
        described = client.get(f"/api/v1/experiments/{exp_id}").get_json()
        assert described["experiment"]["state"] == "CANCELED"
        listed = client.get(f"/api/v1/experiments/{exp_id}/trials").get_json()
        assert listed["trials"][0]["state"] == "CANCELED"


def test_an_unwritable_job_storage_root_is_an_error_with_the_reason(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, tmp_path: Path) -> None:
    from dataclasses import replace

    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    settings = app.config["HPCDET_SETTINGS"]
    settings = replace(settings, resource_manager=replace(
        settings.resource_manager, job_storage_root=str(blocker / "jobs")))
    create(client)
    make_reconciler(settings, make_session_factory(app.config["HPCDET_ENGINE"]), fake).cycle()
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        assert session.scalars(select(Trial.state)).all() == ["ERROR"]
        lines = session.scalars(select(TrialLog.line)).all()
        assert any("submission failed" in line and "Not a directory" in line for line in lines)
    assert fake.submitted == []


def test_a_job_keeps_the_layout_it_was_submitted_with_for_its_log_lines(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]  # 2 slots, slurm.slots_per_node 1
    reconciler.cycle()
    assert "#SBATCH --nodes=2\n" in fake.submitted[0].script
    sessions = make_session_factory(app.config["HPCDET_ENGINE"])
    with sessions.begin() as session:
        job = session.scalars(select(Job)).one()
        assert (job.node_count, job.slots_per_node) == (2, 1)
        # Derived from the config now, both ranks would be on the first node.
        exp = session.get_one(Experiment, exp_id)
        exp.config = {**exp.config, "slurm": {**exp.config["slurm"], "slots_per_node": 2}}
    job_dir = Path(fake.submitted[0].script_path).parent
    (job_dir / "slurm-101.out").write_text("0: first\n1: second\n")
    fake.phases["101"], fake.nodes["101"] = JobPhase.COMPLETED, "node[1-2]"
    reconciler.cycle()
    with sessions() as session:
        placed = session.execute(select(TrialLog.rank, TrialLog.node).where(
            TrialLog.rank.is_not(None)).order_by(TrialLog.id)).all()
    assert [tuple(row) for row in placed] == [(0, "node1"), (1, "node2")]
