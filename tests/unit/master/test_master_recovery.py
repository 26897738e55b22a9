"""A master that dies and restarts: intents, adoption by name, and a fresh reconciler.

The reconciler commits the intent to submit (a job row with a name and no id) before it
runs sbatch. The fake scheduler simulates the master dying inside sbatch with a
KeyboardInterrupt (a BaseException, which nothing catches), either before the job reached
Slurm or after Slurm queued it; a new Reconciler on the same database then plays the
restarted master. The database is real (SQLite and PostgreSQL).
"""

from __future__ import annotations

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from lifecycle_helpers import (
    end_job,
    jobs_of,
    master_lines,
    start,
    trial_json,
    trial_of,
    trial_states,
)
from master_helpers import create

from hpcdet.dispatcher import JobPhase
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory, session_scope
from hpcdet.master.scheduling.reconciler import Reconciler


def restarted(app: Flask, fake: FakeSchedulerBackend) -> Reconciler:
    """A new reconciler on the same database and the same Slurm: the restarted master."""
    return make_reconciler(app.config["HPCDET_SETTINGS"],
                           make_session_factory(app.config["HPCDET_ENGINE"]), fake)


def _crash_in_sbatch(client: FlaskClient, reconciler: Reconciler, fake: FakeSchedulerBackend,
                     when: str) -> int:
    """Create an experiment; the master dies while submitting its trial. Its id."""
    exp_id = create(client).get_json()["experiment"]["id"]
    fake.crash = when
    with pytest.raises(KeyboardInterrupt):
        reconciler.cycle()
    return int(exp_id)


def job_name(app: Flask, exp_id: int, run_id: int) -> str:
    trial = trial_of(app, exp_id)
    return f"det-{exp_id}-{trial.id}-{run_id}-{str(trial.request_id)[:8]}"


def test_the_intent_is_committed_before_sbatch(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = _crash_in_sbatch(client, reconciler, fake, "before")
    trial = trial_of(app, exp_id)
    [job] = jobs_of(app, trial.id)
    assert (job.job_id, job.active, job.run_id, trial.run_id) == (None, True, 1, 1)
    # The trial's searcher request id tells it from the same ids in another database.
    assert job.name == f"det-{exp_id}-{trial.id}-1-{trial.request_id[:8]}"


def test_a_job_queued_before_the_crash_is_adopted_not_submitted_again(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = _crash_in_sbatch(client, reconciler, fake, "after")
    trial_id = trial_of(app, exp_id).id
    name = job_name(app, exp_id, 1)
    assert len(fake.submitted) == 1 and fake.names == {name: "101"}
    report = restarted(app, fake).cycle()
    assert report.intents_recovered == 1
    assert fake.find_calls == [[name]]
    assert len(fake.submitted) == 1  # no second sbatch
    [job] = jobs_of(app, trial_id)
    assert (job.job_id, job.active, job.run_id) == ("101", True, 1)
    assert fake.poll_calls[-1] == ["101"]
    assert master_lines(app, trial_id)[0] == (
        f"found Slurm job 101 ({name}), submitted before the master restarted; following it")
    fresh = restarted(app, fake)
    fresh.cycle()
    assert fake.find_calls == [[name]]  # nothing left to recover
    fake.phases["101"] = JobPhase.RUNNING
    fresh.cycle()
    end_job(app, fake, fresh, trial_id, JobPhase.COMPLETED)
    assert trial_states(app, trial_id) == ["QUEUED", "RUNNING", "COMPLETED"]
    assert len(fake.submitted) == 1


def test_an_intent_slurm_never_saw_is_dropped_and_submitted_afresh(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = _crash_in_sbatch(client, reconciler, fake, "before")
    trial_id = trial_of(app, exp_id).id
    assert fake.submitted == []
    restarted(app, fake).cycle()
    assert fake.find_calls == [[job_name(app, exp_id, 1)]]
    jobs = jobs_of(app, trial_id)
    assert [(j.run_id, j.job_id, j.active, j.phase) for j in jobs] == [
        (1, None, False, JobPhase.NOT_SUBMITTED.value), (2, "101", True, "PENDING")]
    assert jobs[0].phase == "NOT_SUBMITTED"  # the enum's value, as stored before it had one
    assert jobs[0].ended_at is not None
    assert len(fake.submitted) == 1
    assert f"#SBATCH --job-name={job_name(app, exp_id, 2)}" in fake.submitted[0].script
    assert trial_json(app, trial_id)["run_id"] == 2
    assert any("did not reach Slurm" in line for line in master_lines(app, trial_id))
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts, trial.run_id) == ("QUEUED", 0, 2)


def test_all_intents_are_looked_up_with_one_find(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    first = create(client).get_json()["experiment"]["id"]
    second = create(client).get_json()["experiment"]["id"]
    fake.crash = "after"  # the first trial's job reaches Slurm; the master dies
    with pytest.raises(KeyboardInterrupt):
        reconciler.cycle()
    queued = trial_of(app, second).id
    assert jobs_of(app, queued) == []
    with session_scope(reconciler.sessions) as session:  # the second intent, never sent
        assert reconciler.submitter._record_intent(session, queued) is not None
    restarted(app, fake).cycle()
    adopted = trial_of(app, first).id
    assert len(fake.find_calls) == 1
    assert sorted(fake.find_calls[0]) == sorted([job_name(app, first, 1),
                                                 job_name(app, second, 1)])
    assert [(j.job_id, j.active) for j in jobs_of(app, adopted)] == [("101", True)]
    assert [(j.run_id, j.job_id, j.active) for j in jobs_of(app, queued)] == [
        (1, None, False), (2, "102", True)]
    assert len(fake.submitted) == 2


def test_an_adopted_job_of_a_killed_trial_is_cancelled(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = _crash_in_sbatch(client, reconciler, fake, "after")
    client.post(f"/api/v1/experiments/{exp_id}/kill")
    restarted(app, fake).cycle()
    assert fake.cancelled == ["101"]
    assert trial_of(app, exp_id).state == "CANCELED"


def test_a_dropped_intent_of_a_killed_trial_is_not_submitted(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = _crash_in_sbatch(client, reconciler, fake, "before")
    client.post(f"/api/v1/experiments/{exp_id}/kill")
    restarted(app, fake).cycle()
    assert fake.submitted == [] and fake.cancelled == []
    assert trial_of(app, exp_id).state == "CANCELED"


def test_without_intents_find_is_never_called(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    _exp_id, trial_id = start(client, reconciler, fake)
    end_job(app, fake, reconciler, trial_id, JobPhase.COMPLETED)
    assert fake.find_calls == []


def test_a_fresh_reconciler_keeps_polling_the_jobs_of_the_previous_one(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    fake.restarts["101"] = 1  # a requeue the first reconciler adopts
    reconciler.cycle()
    assert trial_of(app, exp_id).restarts == 1
    fresh = restarted(app, fake)
    fresh.cycle()
    assert fake.poll_calls[-1] == ["101"]
    assert trial_of(app, exp_id).restarts == 1  # the same requeue is not counted again
    end_job(app, fake, fresh, trial_id, JobPhase.COMPLETED)
    assert trial_of(app, exp_id).state == "COMPLETED"
    assert len(fake.submitted) == 1 and fake.find_calls == []
