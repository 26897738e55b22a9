"""Job arrays for searches (docs/job-arrays.md): a search's trials queued together go as one
array; each task is its trial's job; crashes around the sbatch are recovered.

The scheduler is the scripted fake (tests/unit/master/fake_scheduler.py) with arrays turned
on; the real Slurm path is tests/integration/test_it_arrays.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from fake_scheduler import FakePbsIdsBackend, FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import create
from sqlalchemy import select

from hpcdet.dispatcher import ArrayLimits, JobPhase
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.transport.local import LOCAL
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Job, Trial
from hpcdet.master.scheduling import arrays
from hpcdet.master.scheduling.jobspec import TrialRun, build_job_spec
from hpcdet.master.scheduling.reconciler import Reconciler

SEARCH = """\
name: search
entrypoint: python3 train.py
reproducibility: {experiment_seed: 42}
hyperparameters:
  lr: {type: double, minval: 0.001, maxval: 0.1}
searcher: {name: random, metric: loss, max_trials: 6, max_concurrent_trials: 6}
"""


def new_reconciler(app: Flask, fake: FakeSchedulerBackend, **rm: object) -> Reconciler:
    settings = app.config["HPCDET_SETTINGS"]
    if rm:
        settings = replace(settings, resource_manager=replace(settings.resource_manager, **rm))
    return make_reconciler(settings, make_session_factory(app.config["HPCDET_ENGINE"]), fake)


def jobs(app: Flask) -> list[tuple[int, str | None, str, bool]]:
    """(trial id, job id, name, active) of every job row, in trial order."""
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        rows = session.execute(select(Job.trial_id, Job.job_id, Job.name, Job.active)
                               .order_by(Job.trial_id, Job.id)).all()
        return [tuple(row) for row in rows]  # type: ignore[misc]


def layouts(app: Flask) -> list[tuple[int | None, int | None]]:
    """(nodes, slots per node) stored with every job row, in trial order."""
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        rows = session.execute(select(Job.node_count, Job.slots_per_node)
                               .order_by(Job.trial_id, Job.id)).all()
        return [(nodes, per_node) for nodes, per_node in rows]


def trial_states(app: Flask) -> list[str]:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return list(session.scalars(select(Trial.state).order_by(Trial.id)))


@pytest.fixture
def arrays_on(fake: FakeSchedulerBackend) -> FakeSchedulerBackend:
    fake.arrays = ArrayLimits(max_array_size=1001, max_job_count=10000)
    return fake


def test_a_search_goes_as_one_array_whose_tasks_are_its_trials(
        client: FlaskClient, app: Flask, arrays_on: FakeSchedulerBackend) -> None:
    fake = arrays_on
    create(client, SEARCH)
    report = new_reconciler(app, fake).cycle()
    assert report.jobs_submitted == 6
    assert len(fake.submitted) == 1 and len(fake.submitted_arrays) == 1
    submission, array = fake.submitted_arrays[0]
    assert "#SBATCH --array=0-5\n" in submission.script
    assert f"#SBATCH --job-name={array.name}\n" in submission.script
    assert "#SBATCH --comment=hpcdet:" in submission.script
    assert ":experiment-1:array" in submission.script
    rows = jobs(app)
    assert [job_id for _, job_id, _, _ in rows] == [f"101_{i}" for i in range(6)]
    assert layouts(app) == [(1, 1)] * 6  # each task's, as its spec asked
    assert [name for _, _, name, _ in rows] == [f"{array.name}@{i}" for i in range(6)]
    for (trial_id, _, _, _), script in zip(rows, array.scripts, strict=True):
        job_dir = Path(script).parent
        assert job_dir.name == f"trial-{trial_id}" and Path(script).name == "job-1.sh"
        assert (job_dir / "trial.json").exists() and (job_dir / ".token").exists()
        assert "#SBATCH --array" not in Path(script).read_text()


def test_each_task_is_polled_ended_and_killed_as_its_own_trial(
        client: FlaskClient, app: Flask, arrays_on: FakeSchedulerBackend) -> None:
    fake = arrays_on
    exp_id = create(client, SEARCH).get_json()["experiment"]["id"]
    reconciler = new_reconciler(app, fake)
    reconciler.cycle()
    assert sorted(fake.poll_calls[-1]) == sorted(f"101_{i}" for i in range(6))
    for index in range(6):
        fake.phases[f"101_{index}"] = JobPhase.RUNNING
    reconciler.cycle()
    trials = client.get(f"/api/v1/experiments/{exp_id}/trials").get_json()["trials"]
    victim = trials[2]["id"]
    client.post(f"/api/v1/trials/{victim}/kill")
    reconciler.cycle()
    assert fake.cancelled == ["101_2"]  # one task; the array's others run on
    states = trial_states(app)
    assert states[2] == "CANCELED" and states.count("RUNNING") == 5


def test_arrays_are_chunked_at_max_array_size_and_a_lone_rest_goes_singly(
        client: FlaskClient, app: Flask, arrays_on: FakeSchedulerBackend) -> None:
    fake = arrays_on
    fake.arrays = ArrayLimits(max_array_size=5, max_job_count=10000)
    create(client, SEARCH)
    new_reconciler(app, fake).cycle()
    assert [len(array.scripts) for _, array in fake.submitted_arrays] == [5]
    assert [job_id for _, job_id, _, _ in jobs(app)] == [
        "101_0", "101_1", "101_2", "101_3", "101_4", "102"]


def test_trials_over_the_max_job_count_share_wait_for_a_later_cycle(
        client: FlaskClient, app: Flask, arrays_on: FakeSchedulerBackend) -> None:
    fake = arrays_on
    fake.arrays = ArrayLimits(max_array_size=1001, max_job_count=5)  # 90 %: 4 jobs
    create(client, SEARCH)
    new_reconciler(app, fake).cycle()
    assert fake.submitted == [] and jobs(app) == []
    assert trial_states(app) == ["QUEUED"] * 6


def test_the_switch_off_submits_one_job_per_trial(
        client: FlaskClient, app: Flask, arrays_on: FakeSchedulerBackend) -> None:
    create(client, SEARCH)
    new_reconciler(app, arrays_on, job_arrays=False).cycle()
    assert arrays_on.submitted_arrays == [] and len(arrays_on.submitted) == 6


def test_a_restart_is_a_new_single_job(
        client: FlaskClient, app: Flask, arrays_on: FakeSchedulerBackend) -> None:
    fake = arrays_on
    create(client, SEARCH)
    reconciler = new_reconciler(app, fake)
    reconciler.cycle()
    fake.phases["101_1"] = JobPhase.NODE_FAIL  # max_restarts 5: the trial runs again
    reconciler.cycle()  # the job's end is seen: the trial is queued again
    reconciler.cycle()  # ... and submitted
    rows = [row for row in jobs(app) if row[0] == 2]
    assert [(job_id, active) for _, job_id, _, active in rows] == [("101_1", False),
                                                                    ("102", True)]
    assert len(fake.submitted_arrays) == 1


def test_an_array_sbatch_that_reached_slurm_before_a_crash_is_adopted(
        client: FlaskClient, app: Flask, arrays_on: FakeSchedulerBackend) -> None:
    fake = arrays_on
    create(client, SEARCH)
    fake.crash = "after"
    with pytest.raises(KeyboardInterrupt):
        new_reconciler(app, fake).cycle()
    assert {job_id for _, job_id, _, _ in jobs(app)} == {None}
    report = new_reconciler(app, fake).cycle()  # the restarted master
    assert report.intents_recovered == 6 and report.jobs_submitted == 0
    name = fake.submitted_arrays[0][1].name
    assert fake.find_calls == [[name]]  # one name for the whole array
    assert [job_id for _, job_id, _, _ in jobs(app)] == [f"101_{i}" for i in range(6)]


def test_an_array_sbatch_that_never_ran_is_submitted_again(
        client: FlaskClient, app: Flask, arrays_on: FakeSchedulerBackend) -> None:
    fake = arrays_on
    create(client, SEARCH)
    fake.crash = "before"
    with pytest.raises(KeyboardInterrupt):
        new_reconciler(app, fake).cycle()
    new_reconciler(app, fake).cycle()
    active = [(job_id, name) for _, job_id, name, is_active in jobs(app) if is_active]
    assert [job_id for job_id, _ in active] == [f"101_{i}" for i in range(6)]
    assert all(name.endswith(f"@{i}") for i, (_, name) in enumerate(active))


def test_a_refused_array_fails_its_trials_with_the_reason(
        client: FlaskClient, app: Flask, arrays_on: FakeSchedulerBackend) -> None:
    arrays_on.fail_submit = True
    create(client, SEARCH)
    new_reconciler(app, arrays_on).cycle()
    assert trial_states(app) == ["ERROR"] * 6


def test_trials_of_one_experiment_render_the_same_job_but_for_their_own_parts(
        app: Flask) -> None:
    """Why an experiment's first runs may share one array's options."""
    from master_helpers import CONFIG

    from hpcdet.master.scheduling.submission import effective_config, parse_config

    settings = app.config["HPCDET_SETTINGS"]
    config = effective_config(settings, parse_config(CONFIG))
    one, two = (build_job_spec(settings, config, TrialRun(3, trial, 1, f"/jobs/trial-{trial}"),
                               files=LOCAL)
                for trial in (7, 8))
    assert one != two
    assert arrays.shared_part(one) == arrays.shared_part(two)


@pytest.mark.parametrize(("name", "split"), [
    ("det-array-1-2-abc@3", ("det-array-1-2-abc", 3)),
    ("det-1-2-1-abc", None), ("x@", None), ("@4", None), ("a@b", None)])
def test_intent_names_say_array_and_index(name: str,
                                          split: tuple[str, int] | None) -> None:
    assert arrays.split_intent_name(name) == split


def test_recovery_maps_an_array_found_by_name_onto_its_tasks() -> None:
    names = ["det-array-1-2@0", "det-array-1-2@1", "det-1-9-1", "det-array-1-7@0"]
    assert arrays.names_to_find(names) == ["det-array-1-2", "det-1-9-1", "det-array-1-7"]
    found = arrays.recovered_ids(names, {"det-array-1-2": "40", "det-1-9-1": "41"},
                                 SlurmBackend.array_task_id)
    assert found == {"det-array-1-2@0": "40_0", "det-array-1-2@1": "40_1", "det-1-9-1": "41"}


def test_pbs_subjob_ids_name_the_trials_and_an_adopted_array(
        client: FlaskClient, app: Flask) -> None:
    """The master names tasks through the backend: PBS's ``101[i].vm``, not Slurm's."""
    fake = FakePbsIdsBackend()
    fake.arrays = ArrayLimits(max_array_size=10000, max_job_count=10000)
    exp_id = create(client, SEARCH).get_json()["experiment"]["id"]
    fake.crash = "after"
    with pytest.raises(KeyboardInterrupt):
        new_reconciler(app, fake).cycle()
    reconciler = new_reconciler(app, fake)  # the restarted master finds the array
    assert reconciler.cycle().intents_recovered == 6
    subjobs = [f"101[{i}].vm" for i in range(6)]
    assert [job_id for _, job_id, _, _ in jobs(app)] == subjobs
    for job_id in subjobs:
        fake.phases[job_id] = JobPhase.RUNNING
    reconciler.cycle()
    victim = client.get(f"/api/v1/experiments/{exp_id}/trials").get_json()["trials"][3]["id"]
    client.post(f"/api/v1/trials/{victim}/kill")
    reconciler.cycle()
    assert fake.cancelled == ["101[3].vm"]
    assert trial_states(app).count("RUNNING") == 5
