"""The master runs the searchers: trials from the seed, stops, replacements, restarts.

The scheduler is the scripted fake (tests/unit/master/fake_scheduler.py); the database is
real (SQLite and PostgreSQL), and validations arrive through the real HTTP route.
"""

from __future__ import annotations

from typing import Any

from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import create, job_token
from sqlalchemy import select, update

from hpcdet.dispatcher import JobPhase
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Experiment, Job, SearcherEvent, StateChange, Trial, utcnow
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.searcher import grid_points, make_searcher

HEAD = """\
name: search
entrypoint: python3 train.py
reproducibility: {experiment_seed: 42}
"""
GRID = HEAD + """\
hyperparameters:
  lr: {type: log, minval: -3, maxval: -1, base: 10, count: 2}
  width: {type: categorical, vals: [16, 32]}
searcher: {name: grid, metric: loss}
"""
RANDOM = HEAD + """\
hyperparameters:
  lr: {type: double, minval: 0.001, maxval: 0.1}
  layers: {type: int, minval: 1, maxval: 4}
searcher: {name: random, metric: loss, max_trials: 3, max_concurrent_trials: 2}
"""
ASHA = HEAD + """\
hyperparameters:
  lr: {type: double, minval: 0.001, maxval: 0.1}
searcher:
  name: adaptive_asha
  metric: loss
  time_metric: epochs
  max_time: 4
  max_trials: 4
  divisor: 2
  mode: aggressive
  max_concurrent_trials: 4
"""


def new_reconciler(app: Flask, fake: FakeSchedulerBackend) -> Reconciler:
    return make_reconciler(app.config["HPCDET_SETTINGS"],
                           make_session_factory(app.config["HPCDET_ENGINE"]), fake)


def trials(app: Flask, exp_id: int) -> list[Trial]:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return list(session.scalars(select(Trial).where(Trial.experiment_id == exp_id)
                                    .order_by(Trial.id)))


def experiment(app: Flask, exp_id: int) -> Experiment:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return session.get_one(Experiment, exp_id)


def history_causes(app: Flask, trial_id: int) -> list[str]:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return list(session.scalars(select(StateChange.cause).where(
            StateChange.entity_kind == "trial", StateChange.entity_id == trial_id)
            .order_by(StateChange.id)))


def job_of(app: Flask, trial_id: int) -> str:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return str(session.scalars(select(Job.job_id).where(Job.trial_id == trial_id)
                                   .order_by(Job.id.desc())).first())


def finish(app: Flask, fake: FakeSchedulerBackend, trial_id: int,
           phase: JobPhase = JobPhase.COMPLETED) -> None:
    fake.phases[job_of(app, trial_id)] = phase


def report(client: FlaskClient, trial: Trial, steps: int, metrics: dict[str, float]) -> None:
    response = client.post(f"/api/v1/trials/{trial.id}/metrics",
                           json={"group": "validation",
                                 "reports": [{"steps_completed": steps, "metrics": metrics}]},
                           headers={"Authorization": f"Bearer {job_token(trial)}"})
    assert response.status_code == 200, response.get_json()


def start(client: FlaskClient, config: str) -> int:
    response = create(client, config)
    assert response.status_code == 201, response.get_json()
    return int(response.get_json()["experiment"]["id"])


def run_all(app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler, exp_id: int,
            phase_of: Any = None, cycles: int = 30) -> None:
    """Cycle until the experiment ends, finishing every running job as it appears."""
    for _ in range(cycles):
        reconciler.cycle()
        if experiment(app, exp_id).ended_at is not None:
            return
        for t in trials(app, exp_id):
            live = t.state in ("QUEUED", "RUNNING", "STOPPING_COMPLETED")
            if live and job_of(app, t.id) != "None":
                finish(app, fake, t.id, phase_of(t) if phase_of else JobPhase.COMPLETED)
    raise AssertionError("the experiment did not end")


def test_grid_creates_one_trial_per_point_in_launch_order(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = start(client, GRID)
    report_ = reconciler.cycle()
    assert (report_.trials_created, report_.jobs_submitted) == (4, 4)
    points = grid_points({"lr": {"type": "log", "minval": -3, "maxval": -1, "base": 10, "count": 2},
                          "width": {"type": "categorical", "vals": [16, 32]}})
    assert [t.hparams for t in trials(app, exp_id)] == list(reversed(points))
    run_all(app, fake, reconciler, exp_id)
    exp = experiment(app, exp_id)
    assert (exp.state, exp.progress) == ("COMPLETED", 1.0)
    assert len(trials(app, exp_id)) == 4


def test_trials_are_those_the_searcher_draws_from_the_seed(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = start(client, RANDOM)
    run_all(app, fake, reconciler, exp_id)
    expected = make_searcher({"name": "random", "max_trials": 3, "max_concurrent_trials": 2},
                             {"lr": {"type": "double", "minval": 0.001, "maxval": 0.1},
                              "layers": {"type": "int", "minval": 1, "maxval": 4}}, 42)
    wanted = expected.initial_trials()
    wanted += [a.request for a in expected.on_trial_exited(wanted[0].request_id, "completed")]
    got = trials(app, exp_id)
    assert [(t.request_id, t.hparams, t.seed) for t in got] == [
        (r.request_id, r.hparams, r.seed) for r in wanted]
    assert experiment(app, exp_id).state == "COMPLETED"


def test_random_keeps_at_most_max_concurrent_trials_and_stops_at_max_trials(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = start(client, RANDOM)
    reconciler.cycle()
    first = trials(app, exp_id)
    assert len(first) == 2
    finish(app, fake, first[0].id)
    reconciler.cycle()  # the poll sees the exit
    reconciler.cycle()  # the searcher refills
    assert len(trials(app, exp_id)) == 3
    run_all(app, fake, reconciler, exp_id)
    assert len(trials(app, exp_id)) == 3


def test_asha_stops_a_trial_outside_the_rung_top_and_it_ends_completed(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = start(client, ASHA)
    reconciler.cycle()
    a, b, *_ = trials(app, exp_id)
    fake.phases[job_of(app, a.id)] = fake.phases[job_of(app, b.id)] = JobPhase.RUNNING
    reconciler.cycle()
    report(client, a, 10, {"loss": 1.0, "epochs": 1})
    report(client, b, 10, {"loss": 2.0, "epochs": 1})
    cycle = reconciler.cycle()
    assert (cycle.search.events_consumed, cycle.search.trials_stopped) == (2, 1)
    stopped = trials(app, exp_id)[1]
    assert (stopped.state, stopped.stop_reason) == ("STOPPING_COMPLETED", "early_stopped")
    assert history_causes(app, b.id)[-1] == (
        "stopped early by the searcher: its loss at epochs 1 ranked outside its rung's top")
    assert trials(app, exp_id)[0].state == "RUNNING"
    assert fake.cancelled == []  # it is running: asked through should_preempt, not scancel
    finish(app, fake, b.id)
    reconciler.cycle()
    assert trials(app, exp_id)[1].state == "COMPLETED"


def test_asha_stop_of_a_job_still_pending_cancels_it(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = start(client, ASHA)
    reconciler.cycle()
    a, b, *_ = trials(app, exp_id)
    report(client, a, 10, {"loss": 1.0, "epochs": 1})
    report(client, b, 10, {"loss": 2.0, "epochs": 1})
    reconciler.cycle()
    assert fake.cancelled == [job_of(app, b.id)]
    reconciler.cycle()
    assert trials(app, exp_id)[1].state == "COMPLETED"


def test_a_stopped_trial_past_its_preemption_timeout_is_cancelled(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = start(client, ASHA + "preemption_timeout: 60\n")
    reconciler.cycle()
    a, b, *_ = trials(app, exp_id)
    fake.phases[job_of(app, b.id)] = JobPhase.RUNNING
    reconciler.cycle()
    report(client, a, 10, {"loss": 1.0, "epochs": 1})
    report(client, b, 10, {"loss": 2.0, "epochs": 1})
    reconciler.cycle()
    assert fake.cancelled == []
    with make_session_factory(app.config["HPCDET_ENGINE"]).begin() as session:
        an_hour_ago = utcnow().replace(year=utcnow().year - 1)
        session.execute(update(Trial).where(Trial.id == b.id)
                        .values(stop_requested_at=an_hour_ago))
    reconciler.cycle()
    assert fake.cancelled == [job_of(app, b.id)]


def test_a_report_without_the_searcher_metric_is_logged_and_ignored(
        client: FlaskClient, app: Flask, reconciler: Reconciler) -> None:
    exp_id = start(client, ASHA)
    reconciler.cycle()
    a = trials(app, exp_id)[0]
    report(client, a, 10, {"accuracy": 0.5, "epochs": 1})
    cycle = reconciler.cycle()
    assert (cycle.search.events_consumed, cycle.search.trials_stopped) == (1, 0)
    logs = client.get(f"/api/v1/trials/{a.id}/logs").get_json()["logs"]
    assert any("no 'loss' (searcher.metric)" in line["line"] for line in logs)


def test_invalid_hyperparameters_are_replaced_without_spending_the_budget(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = start(client, RANDOM)
    reconciler.cycle()
    first = trials(app, exp_id)[0]
    with make_session_factory(app.config["HPCDET_ENGINE"]).begin() as session:
        session.execute(update(Trial).where(Trial.id == first.id).values(early_exit="invalid_hp"))
    run_all(app, fake, reconciler, exp_id)
    assert len(trials(app, exp_id)) == 4  # 3 valid trials + the invalid one
    assert experiment(app, exp_id).state == "COMPLETED"


def test_errored_trials_count_as_finished_and_one_success_completes_it(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = start(client, RANDOM)
    run_all(app, fake, reconciler, exp_id,
            phase_of=lambda t: JobPhase.COMPLETED if t.id % 3 == 0 else JobPhase.FAILED)
    states = [t.state for t in trials(app, exp_id)]  # three consecutive ids: one % 3 == 0
    assert sorted(states) == ["COMPLETED", "ERROR", "ERROR"]
    assert experiment(app, exp_id).state == "COMPLETED"


def test_all_trials_failing_ends_the_experiment_in_error(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    exp_id = start(client, RANDOM)
    run_all(app, fake, reconciler, exp_id, phase_of=lambda t: JobPhase.FAILED)
    assert [t.state for t in trials(app, exp_id)] == ["ERROR"] * 3
    assert experiment(app, exp_id).state == "ERROR"


def test_a_restarted_master_continues_the_same_search(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend) -> None:
    """Two identical experiments: one driven by a reconciler replaced every cycle."""
    steady_id, restarted_id = start(client, RANDOM), start(client, RANDOM)
    steady = new_reconciler(app, fake)
    for _ in range(12):
        steady.cycle()
        new_reconciler(app, fake).cycle()  # a new process each time: state from the DB only
        for t in trials(app, steady_id) + trials(app, restarted_id):
            if t.state in ("QUEUED", "RUNNING"):
                finish(app, fake, t.id)
    one, two = trials(app, steady_id), trials(app, restarted_id)
    assert [(t.hparams, t.seed) for t in one] == [(t.hparams, t.seed) for t in two]
    assert len(two) == 3


def test_events_are_consumed_once(client: FlaskClient, app: Flask, reconciler: Reconciler,
                                  fake: FakeSchedulerBackend) -> None:
    exp_id = start(client, ASHA)
    reconciler.cycle()
    a = trials(app, exp_id)[0]
    report(client, a, 10, {"loss": 1.0, "epochs": 1})
    assert reconciler.cycle().search.events_consumed == 1
    assert reconciler.cycle().search.events_consumed == 0
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        assert session.scalars(select(SearcherEvent.processed)).all() == [True]


def test_the_experiments_best_validation_is_served_to_its_trials(
        client: FlaskClient, app: Flask, reconciler: Reconciler) -> None:
    exp_id = start(client, ASHA)
    reconciler.cycle()
    a, b, *_ = trials(app, exp_id)

    def best(trial: Trial, token: str | None = None) -> Any:
        return client.get(f"/api/v1/trials/{trial.id}/experiment_best_validation",
                          headers={"Authorization": f"Bearer {token or job_token(trial)}"})

    assert best(a).get_json() == {"best": None}
    report(client, a, 10, {"loss": 0.7, "epochs": 1})
    report(client, b, 10, {"loss": 0.4, "epochs": 1})
    report(client, b, 20, {"loss": 0.9, "epochs": 2})
    assert best(a).get_json() == {"best": 0.4}
    assert best(a, token="wrong").status_code == 401


def test_a_searcher_that_fails_ends_its_experiment_not_every_cycle(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    broken, healthy = start(client, RANDOM), start(client, GRID)
    reconciler.cycle()  # both searches start; the random one has 2 trials running
    running = trials(app, broken)
    assert len(running) == 2
    with make_session_factory(app.config["HPCDET_ENGINE"]).begin() as session:
        # A stored state the searcher cannot read (say, written by a faulty release).
        session.execute(update(Experiment).where(Experiment.id == broken)
                        .values(searcher_state={"rng": "garbage"}, searcher_etag="x"))
    finish(app, fake, running[0].id)
    reconciler.cycle()  # the broken experiment's exit event fails its searcher: only its own
    exp = experiment(app, broken)
    assert exp.state in ("STOPPING_ERROR", "ERROR")
    assert {t.state for t in trials(app, broken)} <= {"STOPPING_ERROR", "ERROR", "COMPLETED"}
    run_all(app, fake, reconciler, healthy)  # the other search still runs to its end
    assert experiment(app, healthy).state == "COMPLETED"
    for _ in range(3):
        reconciler.cycle()
    assert experiment(app, broken).state == "ERROR"
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        causes = list(session.scalars(select(StateChange.cause).where(
            StateChange.entity_kind == "experiment", StateChange.entity_id == broken)))
    assert any(c.startswith("its searcher failed:") for c in causes), causes
