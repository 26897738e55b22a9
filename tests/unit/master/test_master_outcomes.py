"""How a job's end, or a Slurm requeue, moves its trial (hpcdet/master/scheduling/job_outcomes.py).

Every end of a run is DONE, INTERRUPTED (preempted after checkpointing, walltime after a
new checkpoint: resubmitted, not counted) or FAILED (restarted while ``restarts <
max_restarts`` and no ``cancel_retries``, else ERROR). The scheduler is the scripted fake;
the database is real (SQLite and PostgreSQL); the exit-reason files are real files in the
trial's job directory, written with the functions the harness uses.
"""

from __future__ import annotations

import datetime as dt

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from lifecycle_helpers import (
    causes,
    end_job,
    job_dir,
    jobs_of,
    master_lines,
    session_of,
    set_trial,
    start,
    trial_json,
    trial_of,
    trial_states,
)
from master_helpers import CONFIG

from hpcdet.dispatcher import JobPhase
from hpcdet.jobfiles import PREEMPTED, write_exit_reason
from hpcdet.master.models import Checkpoint, Experiment, utcnow
from hpcdet.master.scheduling.reconciler import Reconciler

FAILURES = [JobPhase.FAILED, JobPhase.NODE_FAIL, JobPhase.OUT_OF_MEMORY, JobPhase.BOOT_FAIL,
            JobPhase.MISSING, JobPhase.CANCELLED]


def _preempted(app: Flask, trial_id: int, job_id: str = "101", execution: int = 0) -> None:
    """What the harness leaves when the code checkpointed and exited after a stop signal."""
    write_exit_reason(job_dir(app, trial_id), job_id, execution, PREEMPTED, rank=0)


def _add_checkpoint(app: Flask, trial_id: int, uuid: str, reported_at: dt.datetime) -> None:
    with session_of(app) as session:
        session.add(Checkpoint(uuid=uuid, trial_id=trial_id, steps_completed=10,
                               reported_at=reported_at))
        session.commit()
    set_trial(app, trial_id, latest_checkpoint=uuid)


def _experiment_state(app: Flask, exp_id: int) -> str:
    with session_of(app) as session:
        return session.get_one(Experiment, exp_id).state


# failures and restarts ----------------------------------------------------------------
def test_a_failed_job_restarts_the_trial_from_its_latest_checkpoint(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    set_trial(app, trial_id, latest_checkpoint="ckpt-7")
    end_job(app, fake, reconciler, trial_id, JobPhase.FAILED)
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts, trial.interruptions) == ("QUEUED", 1, 0)
    assert trial_states(app, trial_id) == ["QUEUED", "RUNNING", "QUEUED"]
    assert len(fake.submitted) == 1  # resubmitted by the next cycle, not this one
    assert [(j.job_id, j.active) for j in jobs_of(app, trial_id)] == [("101", False)]
    reconciler.cycle()
    jobs = jobs_of(app, trial_id)
    assert [(j.job_id, j.run_id, j.active) for j in jobs] == [("101", 1, False),
                                                              ("102", 2, True)]
    assert len(fake.submitted) == 2
    info = trial_json(app, trial_id)
    assert (info["run_id"], info["latest_checkpoint"]) == (2, "ckpt-7")
    assert any("restart 1 of 5 from checkpoint ckpt-7" in line
               for line in causes(app, trial_id))


def test_a_trial_whose_every_run_fails_ends_error_after_max_restarts(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake, CONFIG + "max_restarts: 2\n",
                             running=False)
    for job_id in ("101", "102", "103"):
        assert [j.job_id for j in jobs_of(app, trial_id)][-1] == job_id
        fake.phases[job_id] = JobPhase.FAILED
        reconciler.cycle()  # sees the failure
        reconciler.cycle()  # submits the next run, if there is one
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts, trial.interruptions) == ("ERROR", 2, 0)
    assert [j.run_id for j in jobs_of(app, trial_id)] == [1, 2, 3]
    assert len(fake.submitted) == 3
    assert "max_restarts (2) reached" in causes(app, trial_id)[-1]
    assert _experiment_state(app, exp_id) == "ERROR"


def test_with_max_restarts_0_the_first_failure_is_an_error(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake, CONFIG + "max_restarts: 0\n")
    end_job(app, fake, reconciler, trial_id, JobPhase.FAILED)
    reconciler.cycle()
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts) == ("ERROR", 0)
    assert len(fake.submitted) == 1


def test_cancel_retries_from_a_log_policy_stops_the_restarts(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    config = CONFIG + "log_policies:\n  - {pattern: 'NCCL error', action: cancel_retries}\n"
    exp_id, trial_id = start(client, reconciler, fake, config)
    # The line arrives in the same poll that sees the failure: the policy must act first.
    (job_dir(app, trial_id) / "slurm-101.out").write_text("0: NCCL error: unhandled\n")
    end_job(app, fake, reconciler, trial_id, JobPhase.FAILED)
    reconciler.cycle()
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts, trial.cancel_retries) == ("ERROR", 0, True)
    assert "a log policy cancelled retries" in causes(app, trial_id)[-1]
    assert len(fake.submitted) == 1


def test_cancel_retries_set_on_the_trial_stops_the_restarts(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    set_trial(app, trial_id, cancel_retries=True)
    end_job(app, fake, reconciler, trial_id, JobPhase.FAILED)
    assert (trial_of(app, exp_id).state, len(fake.submitted)) == ("ERROR", 1)


# how each ending is classified --------------------------------------------------------
def test_a_clean_exit_after_preemption_is_an_interruption(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    _preempted(app, trial_id)
    end_job(app, fake, reconciler, trial_id, JobPhase.COMPLETED)
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.interruptions, trial.restarts) == ("QUEUED", 1, 0)
    reconciler.cycle()
    assert [(j.job_id, j.run_id) for j in jobs_of(app, trial_id)] == [("101", 1), ("102", 2)]
    assert "not counted as a restart" in causes(app, trial_id)[-1]


def test_interruptions_do_not_use_up_max_restarts(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake, CONFIG + "max_restarts: 0\n",
                             running=False)
    for job_id in ("101", "102", "103"):
        _preempted(app, trial_id, job_id)
        fake.phases[job_id] = JobPhase.COMPLETED
        reconciler.cycle()
        reconciler.cycle()
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.interruptions, trial.restarts) == ("QUEUED", 3, 0)
    assert len(fake.submitted) == 4


def test_a_job_slurm_preempted_is_an_interruption(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    end_job(app, fake, reconciler, trial_id, JobPhase.PREEMPTED)
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.interruptions, trial.restarts) == ("QUEUED", 1, 0)


def test_a_timeout_after_a_new_checkpoint_is_an_interruption(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    _add_checkpoint(app, trial_id, "during-run", utcnow())
    end_job(app, fake, reconciler, trial_id, JobPhase.TIMEOUT)
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.interruptions, trial.restarts) == ("QUEUED", 1, 0)
    reconciler.cycle()
    assert trial_json(app, trial_id)["latest_checkpoint"] == "during-run"


def test_a_timeout_without_a_checkpoint_is_a_failure(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    end_job(app, fake, reconciler, trial_id, JobPhase.TIMEOUT)
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.interruptions, trial.restarts) == ("QUEUED", 0, 1)


def test_a_timeout_after_only_an_older_checkpoint_is_a_failure(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    submitted = jobs_of(app, trial_id)[0].submitted_at
    _add_checkpoint(app, trial_id, "before-run", submitted - dt.timedelta(hours=1))
    end_job(app, fake, reconciler, trial_id, JobPhase.TIMEOUT)
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.interruptions, trial.restarts) == ("QUEUED", 0, 1)


@pytest.mark.parametrize("phase", FAILURES, ids=[p.name for p in FAILURES])
def test_other_endings_are_failures(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend, phase: JobPhase) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    end_job(app, fake, reconciler, trial_id, phase)
    if phase is JobPhase.MISSING:  # one empty read is not final: the next poll decides
        assert trial_of(app, exp_id).restarts == 0
        reconciler.cycle()
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.interruptions, trial.restarts) == ("QUEUED", 0, 1)
    reconciler.cycle()
    assert len(fake.submitted) == 2


def test_a_job_missing_once_and_then_found_goes_on(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    end_job(app, fake, reconciler, trial_id, JobPhase.MISSING)
    end_job(app, fake, reconciler, trial_id, JobPhase.RUNNING)
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts, len(fake.submitted)) == ("RUNNING", 0, 1)


@pytest.mark.parametrize(("job_id", "execution"), [("101", 1), ("999", 0)])
def test_an_exit_reason_of_another_execution_does_not_count(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend, job_id: str, execution: int) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    _preempted(app, trial_id, job_id, execution)
    end_job(app, fake, reconciler, trial_id, JobPhase.FAILED)
    trial = trial_of(app, exp_id)
    assert (trial.interruptions, trial.restarts) == (0, 1)


def test_a_completed_job_without_an_exit_reason_completes_the_trial(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    end_job(app, fake, reconciler, trial_id, JobPhase.COMPLETED)
    reconciler.cycle()
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.interruptions, trial.restarts) == ("COMPLETED", 0, 0)
    assert len(fake.submitted) == 1
    assert _experiment_state(app, exp_id) == "COMPLETED"


# Slurm requeues ----------------------------------------------------------------------
def test_a_slurm_requeue_is_adopted_as_a_restart_of_the_same_job(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    fake.restarts["101"], fake.phases["101"] = 1, JobPhase.PENDING
    reconciler.cycle()
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts, trial.interruptions) == ("QUEUED", 1, 0)
    reconciler.cycle()  # QUEUED, but its job is still Slurm's: nothing to submit
    assert len(fake.submitted) == 1
    [job] = jobs_of(app, trial_id)
    assert (job.job_id, job.requeues, job.active) == ("101", 1, True)
    assert fake.poll_calls[-1] == ["101"]
    fake.phases["101"] = JobPhase.RUNNING
    reconciler.cycle()
    assert trial_states(app, trial_id) == ["QUEUED", "RUNNING", "QUEUED", "RUNNING"]
    assert trial_of(app, exp_id).restarts == 1  # the same requeue is not counted twice
    end_job(app, fake, reconciler, trial_id, JobPhase.COMPLETED)
    assert trial_of(app, exp_id).state == "COMPLETED"


def test_a_requeue_after_a_preemption_is_an_interruption(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    _preempted(app, trial_id, "101", 0)
    fake.restarts["101"], fake.phases["101"] = 1, JobPhase.PENDING
    reconciler.cycle()
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts, trial.interruptions) == ("QUEUED", 0, 1)
    assert len(fake.submitted) == 1


def test_a_requeue_seen_running_again_shows_both_moves(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    fake.restarts["101"] = 1  # requeued and started again between two polls
    reconciler.cycle()
    assert trial_states(app, trial_id) == ["QUEUED", "RUNNING", "QUEUED", "RUNNING"]
    assert trial_of(app, exp_id).restarts == 1
    assert jobs_of(app, trial_id)[0].requeues == 1


def test_each_requeue_is_classified_by_its_own_execution(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake)
    fake.restarts["101"] = 1  # execution 0 failed
    reconciler.cycle()
    _preempted(app, trial_id, "101", 1)  # execution 1 was preempted
    fake.restarts["101"] = 2
    reconciler.cycle()
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts, trial.interruptions) == ("RUNNING", 1, 1)
    _preempted(app, trial_id, "101", 2)  # execution 2 checkpointed and exited 0
    end_job(app, fake, reconciler, trial_id, JobPhase.COMPLETED)
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts, trial.interruptions) == ("QUEUED", 1, 2)


def test_requeues_beyond_max_restarts_cancel_the_job_and_end_in_error(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake, CONFIG + "max_restarts: 1\n")
    fake.restarts["101"], fake.phases["101"] = 1, JobPhase.PENDING
    reconciler.cycle()
    assert (trial_of(app, exp_id).state, trial_of(app, exp_id).restarts) == ("QUEUED", 1)
    fake.restarts["101"], fake.phases["101"] = 2, JobPhase.RUNNING
    reconciler.cycle()
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts) == ("STOPPING_ERROR", 1)
    assert fake.cancelled == []
    reconciler.cycle()
    assert fake.cancelled == ["101"]
    assert trial_of(app, exp_id).state == "ERROR"
    assert [j.active for j in jobs_of(app, trial_id)] == [False]
    assert len(fake.submitted) == 1
    reconciler.cycle()
    assert _experiment_state(app, exp_id) == "ERROR"


def test_a_job_slurm_holds_after_its_failure_is_that_failure_and_is_cancelled(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    """Slurm 25.11 holds an expedited job whose execution failed (the dispatcher reads it
    FAILED and lingering): one restart counted, the held job cancelled, a new job; the last
    failure ends the trial ERROR and its held job is cancelled too."""
    fake.expedite = True
    exp_id, trial_id = start(client, reconciler, fake, CONFIG + "max_restarts: 1\n")
    assert "#SBATCH --requeue=expedite\n" in fake.submitted[0].script
    for job_id, state in (("101", "QUEUED"), ("102", "ERROR")):
        fake.phases[job_id] = JobPhase.FAILED
        fake.lingering.add(job_id)
        reconciler.cycle()
        assert fake.cancelled[-1] == job_id
        assert (trial_of(app, exp_id).state, trial_of(app, exp_id).restarts) == (state, 1)
        reconciler.cycle()  # submits the next run, if there is one
    assert fake.cancelled == ["101", "102"]
    assert [(j.job_id, j.active) for j in jobs_of(app, trial_id)] == [("101", False),
                                                                      ("102", False)]
    assert "max_restarts (1) reached" in causes(app, trial_id)[-1]


def test_two_requeues_in_one_poll_are_both_counted(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id, trial_id = start(client, reconciler, fake, CONFIG + "max_restarts: 1\n")
    fake.restarts["101"], fake.phases["101"] = 2, JobPhase.PENDING
    reconciler.cycle()
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.restarts) == ("STOPPING_ERROR", 1)
    assert jobs_of(app, trial_id)[0].requeues == 2


# the pending reason -------------------------------------------------------------------
def test_the_pending_reason_is_logged_once_per_change(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    fake.reasons["101"] = "Priority"
    exp_id, trial_id = start(client, reconciler, fake, running=False)
    for reason in ("Priority", "Resources", "Resources", "Priority"):
        fake.reasons["101"] = reason
        reconciler.cycle()
    assert master_lines(app, trial_id) == ["job 101 is pending: Priority",
                                           "job 101 is pending: Resources",
                                           "job 101 is pending: Priority"]
    described = client.get(f"/api/v1/trials/{trial_id}").get_json()["trial"]
    assert described["pending_reason"] == "Priority"
    [listed] = client.get(f"/api/v1/experiments/{exp_id}/trials").get_json()["trials"]
    assert listed["pending_reason"] == "Priority"
    fake.phases["101"] = JobPhase.RUNNING
    reconciler.cycle()
    assert len(master_lines(app, trial_id)) == 3
    assert client.get(f"/api/v1/trials/{trial_id}").get_json()["trial"]["pending_reason"] is None


def test_a_failed_job_whose_chief_recorded_a_preemption_is_a_failure(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    # One rank exited 1; srun SIGTERMed the chief, which checkpointed and wrote "preempted".
    exp_id, trial_id = start(client, reconciler, fake)
    _preempted(app, trial_id)
    end_job(app, fake, reconciler, trial_id, JobPhase.FAILED)
    trial = trial_of(app, exp_id)
    assert (trial.state, trial.interruptions, trial.restarts) == ("QUEUED", 0, 1)
    assert "failed; restart 1 of" in causes(app, trial_id)[-1]
