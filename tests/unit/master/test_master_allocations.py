"""Allocation mode against a scripted scheduler: one allocation job, trials as its steps,
their states, release, and the fallback to jobs (the dev cluster runs it for real in
tests/integration/test_allocation_mode.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error, create
from sqlalchemy import select

from hpcdet.dispatcher import JobPhase
from hpcdet.errors import ConfigError
from hpcdet.master.allocation_models import Allocation, AllocationStep
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Trial
from hpcdet.master.scheduling.allocation_config import check_allocation
from hpcdet.master.scheduling.reconciler import Reconciler

CONFIG = """\
name: alloc
entrypoint: python3 train.py
hyperparameters:
  lr: {type: double, minval: 0.01, maxval: 0.1}
searcher: {name: random, metric: loss, max_trials: 3, max_length: {batches: 10}}
resources:
  slots_per_trial: 1
  allocation: {slots: 2, walltime: "00:30:00"}
max_restarts: 1
"""
ALLOCATION_JOB = "101"


class Agent:
    """Plays the allocation's agent through the test client."""

    def __init__(self, client: FlaskClient, app: Flask, allocation_id: int = 1) -> None:
        self.client, self.allocation_id = client, allocation_id
        with _session(app) as session:
            job_dir = session.get_one(Allocation, allocation_id).job_dir
        self.token = (Path(job_dir) / ".token").read_text().strip()

    def exchange(self, *events: dict[str, Any], token: str | None = None) -> Any:
        response = self.client.post(
            f"/api/v1/allocations/{self.allocation_id}/exchange", json={"events": list(events)},
            headers={"Authorization": f"Bearer {token or self.token}"})
        return response

    def start_all(self) -> list[tuple[int, int]]:
        launched = self.exchange().get_json()["launch"]
        keys = [(item["trial_id"], item["run_id"]) for item in launched]
        self.exchange(*[started(*key) for key in keys])
        return keys


def started(trial_id: int, run_id: int) -> dict[str, Any]:
    return {"trial_id": trial_id, "run_id": run_id, "event": "started", "step": "101.0"}


def exited(trial_id: int, run_id: int, code: int | None) -> dict[str, Any]:
    return {"trial_id": trial_id, "run_id": run_id, "event": "exited", "exit_code": code}


def _session(app: Flask) -> Any:
    return make_session_factory(app.config["HPCDET_ENGINE"])()


def trial_states(app: Flask) -> dict[int, str]:
    with _session(app) as session:
        return dict(session.execute(select(Trial.id, Trial.state)).all())


def running_allocation(client: FlaskClient, app: Flask, reconciler: Reconciler,
                       fake: FakeSchedulerBackend) -> Agent:
    assert create(client, CONFIG).status_code == 201
    report = reconciler.cycle()
    assert report.allocations.submitted == 1 and report.jobs_submitted == 0
    fake.phases[ALLOCATION_JOB] = JobPhase.RUNNING
    reconciler.cycle()
    return Agent(client, app)


def test_one_allocation_job_runs_every_trial_as_a_step(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    agent = running_allocation(client, app, reconciler, fake)
    script = fake.submitted[0].script
    assert "#SBATCH --ntasks=2" in script and "#SBATCH --time=00:30:00" in script
    assert "hpcdet.launch.allocation_agent" in script and "--no-requeue" in script
    first = agent.start_all()
    assert len(first) == 2  # two slots, two trials placed; the third waits
    assert sorted(trial_states(app).values()) == ["QUEUED", "RUNNING", "RUNNING"]
    for trial_id, run_id in first:
        with _session(app) as session:
            job_dir = session.get_one(Trial, trial_id).job_dir
        assert (Path(job_dir) / f"job-{run_id}.sh").exists()
        assert (Path(job_dir) / "trial.json").exists()
    Path(job_dir, f"slurm-{ALLOCATION_JOB}.{run_id}.out").write_text("0: step output\n")
    agent.exchange(*[exited(*key, 0) for key in first])
    reconciler.cycle()  # applies both exits, places the third trial
    last = agent.start_all()
    assert len(last) == 1 and last[0][0] not in {t for t, _ in first}
    agent.exchange(exited(*last[0], 0))
    reconciler.cycle()
    assert set(trial_states(app).values()) == {"COMPLETED"}
    reconciler.cycle()  # the experiment ended: the allocation is released
    assert agent.exchange().get_json()["exit"] is True
    fake.phases[ALLOCATION_JOB] = JobPhase.COMPLETED
    reconciler.cycle()
    assert len(fake.submitted) == 1  # no trial ever got a job of its own
    described = client.get("/api/v1/experiments/1").get_json()
    assert described["experiment"]["state"] == "COMPLETED"
    allocations = client.get("/api/v1/experiments/1/allocations").get_json()["allocations"]
    assert [(a["phase"], a["end_cause"], a["steps"]) for a in allocations] == [
        ("ENDED", "released", 3)]
    logs = client.get(f"/api/v1/trials/{first[1][0]}/logs").get_json()["logs"]
    assert "step output" in [entry["line"] for entry in logs]


def test_trials_wait_for_a_pending_allocation_instead_of_getting_jobs(
        client: FlaskClient, reconciler: Reconciler, fake: FakeSchedulerBackend) -> None:
    create(client, CONFIG)
    reconciler.cycle()
    reconciler.cycle()
    assert len(fake.submitted) == 1
    assert "--ntasks=2" in fake.submitted[0].script


def test_a_failed_step_restarts_in_the_allocation_and_counts(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    agent = running_allocation(client, app, reconciler, fake)
    (trial_id, run_id), _ = agent.start_all()
    agent.exchange(exited(trial_id, run_id, 1))
    reconciler.cycle()
    assert trial_states(app)[trial_id] == "QUEUED"
    relaunched = agent.exchange().get_json()["launch"]  # the freed slot, at once
    assert (trial_id, run_id + 1) in [(i["trial_id"], i["run_id"]) for i in relaunched]
    with _session(app) as session:
        trial = session.get_one(Trial, trial_id)
        assert (trial.restarts, trial.run_id) == (1, run_id + 1)
    assert len(fake.submitted) == 1


def test_a_killed_trial_ends_through_the_agent(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    agent = running_allocation(client, app, reconciler, fake)
    (trial_id, run_id), _ = agent.start_all()
    response = client.post(f"/api/v1/trials/{trial_id}/kill",
                           headers={"X-Hpcdet-User": "alice"})
    assert response.status_code < 300, response.get_json()
    reconciler.cycle()
    assert trial_states(app)[trial_id] == "STOPPING_KILLED"  # the step still runs
    answer = agent.exchange().get_json()
    assert answer["cancel"] == [{"trial_id": trial_id, "run_id": run_id}]
    agent.exchange(exited(trial_id, run_id, 143))
    reconciler.cycle()
    assert trial_states(app)[trial_id] == "CANCELED"  # a kill ends CANCELED, as for a job


def test_an_allocation_that_ends_early_sends_its_trials_to_jobs(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    agent = running_allocation(client, app, reconciler, fake)
    agent.start_all()
    fake.phases[ALLOCATION_JOB] = JobPhase.TIMEOUT
    report = reconciler.cycle()
    assert report.allocations.fell_back == 1
    # Both trials that ran are back (a walltime is an interruption, not a restart) and,
    # with the third, now run as jobs; no new allocation is asked for.
    assert report.jobs_submitted == 3 and len(fake.submitted) == 4
    assert all("--ntasks=2" not in s.script for s in fake.submitted[1:])
    with _session(app) as session:
        trials = session.scalars(select(Trial)).all()
        assert sorted(t.interruptions for t in trials) == [0, 1, 1]
        assert all(t.restarts == 0 for t in trials)
        steps = session.scalars(select(AllocationStep.phase)).all()
        assert set(steps) == {"CLOSED"}
    reconciler.cycle()
    assert len(fake.submitted) == 4


def test_the_agent_needs_the_allocations_token_and_sane_events(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    agent = running_allocation(client, app, reconciler, fake)
    assert_error(agent.exchange(token="wrong"), 401, "unauthorized")
    assert_error(agent.exchange({"trial_id": "1", "run_id": 1, "event": "started"}),
                 400, "bad_request")
    assert_error(agent.exchange({"trial_id": 1, "run_id": 1, "event": "exploded"}),
                 400, "bad_request")


def test_a_repeated_report_changes_nothing(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    agent = running_allocation(client, app, reconciler, fake)
    (trial_id, run_id), _ = agent.start_all()
    agent.exchange(exited(trial_id, run_id, 0))
    agent.exchange(exited(trial_id, run_id, 0), started(trial_id, run_id))
    reconciler.cycle()
    assert trial_states(app)[trial_id] == "COMPLETED"


def test_configs_allocation_mode_cannot_run_are_refused(client: FlaskClient) -> None:
    too_big = CONFIG.replace("slots_per_trial: 1", "slots_per_trial: 4")
    response = create(client, too_big)
    assert response.status_code == 400
    assert "fewer than a trial needs" in str(response.get_json())
    response = create(client, CONFIG.replace('"00:30:00"', '"30m"'))
    assert response.status_code == 400 and "HH:MM:SS" in str(response.get_json())
    config = {"resources": {"allocation": {"slots": 2, "walltime": "01:00:00"}}}
    with pytest.raises(ConfigError, match="needs Slurm"):
        check_allocation(config, "pbs")
    with pytest.raises(ConfigError, match="run as their owners"):
        check_allocation(config, "slurm", owner_mode=True)
    check_allocation(config, "slurm")


def test_dry_run_shows_the_allocation_job_and_submits_nothing(
        client: FlaskClient, fake: FakeSchedulerBackend) -> None:
    response = create(client, CONFIG, dry_run=True)
    answer = response.get_json()
    assert response.status_code == 200 and answer["dry_run"] is True
    script = answer["allocation"]["script"]
    assert "#SBATCH --ntasks=2" in script and "hpcdet.launch.allocation_agent" in script
    assert answer["allocation"]["argv"][:2] == ["sbatch", "--parsable"]
    assert len(answer["jobs"]) == 1 and not fake.submitted
    plain = create(client, CONFIG.replace('  allocation: {slots: 2, walltime: "00:30:00"}\n', ""),
                   dry_run=True).get_json()
    assert "allocation" not in plain


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_master_that_dies_in_sbatch_follows_or_resubmits_its_allocation(
        client: FlaskClient, app: Flask, reconciler: Reconciler, fake: FakeSchedulerBackend,
        when: str) -> None:
    create(client, CONFIG)
    fake.crash = when
    with pytest.raises(KeyboardInterrupt):
        reconciler.cycle()
    restarted = make_reconciler(app.config["HPCDET_SETTINGS"],
                                make_session_factory(app.config["HPCDET_ENGINE"]), fake)
    restarted.cycle()
    restarted.cycle()
    assert len(fake.submitted) == 1  # adopted by its name, or submitted once it never was
    with _session(app) as session:
        rows = session.scalars(select(Allocation)).all()
        assert [(a.job_id, a.phase) for a in rows] == [(ALLOCATION_JOB, "PENDING")]
    fake.phases[ALLOCATION_JOB] = JobPhase.RUNNING
    restarted.cycle()
    agent = Agent(client, app, rows[0].id)
    assert len(agent.start_all()) == 2  # the restarted master places trials into it


def test_an_allocation_no_source_knows_ends_only_when_a_second_poll_agrees(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    agent = running_allocation(client, app, reconciler, fake)
    agent.start_all()
    fake.phases[ALLOCATION_JOB] = JobPhase.MISSING
    assert reconciler.cycle().allocations.fell_back == 0
    assert len(fake.submitted) == 1
    assert reconciler.cycle().allocations.fell_back == 1
    assert len(fake.submitted) == 4
