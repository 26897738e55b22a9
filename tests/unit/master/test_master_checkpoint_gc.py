"""Checkpoint garbage collection, run by the reconciler after trials end.

The scheduler is the scripted fake; the database is real (SQLite and PostgreSQL), metrics and
checkpoints arrive through the real HTTP routes, and the checkpoints are real directories.
"""

from __future__ import annotations

import shutil
import uuid as uuidlib
from pathlib import Path
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import create, job_token
from sqlalchemy import select

from hpcdet.dispatcher import JobPhase
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Checkpoint, Job, Trial
from hpcdet.master.reports import checkpoint_gc
from hpcdet.master.reports.checkpoint_gc import (
    CheckpointCollector,
    CheckpointFacts,
    GcPolicy,
    checkpoints_to_keep,
    remove_checkpoint_dir,
)
from hpcdet.master.scheduling.reconciler import Reconciler

TWO_TRIALS = """\
name: gc
entrypoint: python3 train.py
hyperparameters:
  width: {{type: categorical, vals: [16, 32]}}
searcher: {{name: grid, metric: loss, smaller_is_better: {smaller}}}
checkpoint_storage:
  type: shared_fs
  host_path: {root}
  save_experiment_best: {best}
  save_trial_best: {trial_best}
  save_trial_latest: {latest}
"""
# Determined's documented example (experiment-config-reference, "Checkpoint Saving Policy"):
# (trial, checkpoint id, searcher metric) in the order they are written.
WORKED_EXAMPLE = [(1, 1, None), (1, 2, None), (1, 3, 0.6), (1, 4, 0.5), (1, 5, 0.4),
                  (2, 6, None), (2, 7, 0.2), (2, 8, 0.3), (2, 9, None), (2, 10, None)]
# (save_experiment_best, save_trial_best, save_trial_latest) -> the ids Determined keeps.
WORKED_TABLE = [
    ((0, 0, 0), set()),
    ((2, 0, 0), {8, 7}),
    ((5, 0, 0), {8, 7, 5, 4, 3}),
    ((0, 1, 0), {7, 5}),
    ((0, 3, 0), {8, 7, 5, 4, 3}),
    ((0, 0, 1), {10, 5}),
    ((0, 0, 3), {10, 9, 8, 5, 4, 3}),
    ((2, 1, 0), {8, 7, 5}),
    ((2, 0, 1), {10, 8, 7, 5}),
    ((0, 1, 1), {10, 7, 5}),
    ((2, 1, 1), {10, 8, 7, 5}),
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "checkpoints"


def start(client: FlaskClient, root: Path, policy: tuple[int, int, int] = (0, 1, 1),
          smaller: bool = True) -> int:
    best, trial_best, latest = policy
    config = TWO_TRIALS.format(root=root, best=best, trial_best=trial_best, latest=latest,
                               smaller=str(smaller).lower())
    response = create(client, config)
    assert response.status_code == 201, response.get_json()
    return int(response.get_json()["experiment"]["id"])


def trials(app: Flask, exp_id: int) -> list[Trial]:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return list(session.scalars(select(Trial).where(Trial.experiment_id == exp_id)
                                    .order_by(Trial.id)))


def checkpoint_rows(app: Flask) -> dict[str, str]:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return {c.uuid: c.state for c in session.scalars(select(Checkpoint))}


def finish(app: Flask, fake: FakeSchedulerBackend, trial: Trial) -> None:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        job_id = session.scalars(select(Job.job_id).where(Job.trial_id == trial.id)).one()
    fake.phases[str(job_id)] = JobPhase.COMPLETED


def auth(trial: Trial) -> dict[str, str]:
    return {"Authorization": f"Bearer {job_token(trial)}"}


def validate(client: FlaskClient, trial: Trial, steps: int, loss: float) -> None:
    response = client.post(f"/api/v1/trials/{trial.id}/metrics", headers=auth(trial), json={
        "group": "validation", "reports": [{"steps_completed": steps, "metrics": {"loss": loss}}]})
    assert response.status_code == 200, response.get_json()


def save(client: FlaskClient, root: Path, trial: Trial, steps: int,
         loss: float | None = None) -> str:
    """Validate (if ``loss``), write a checkpoint directory and register it, like the harness."""
    if loss is not None:
        validate(client, trial, steps, loss)
    uuid = str(uuidlib.uuid4())
    (root / uuid).mkdir(parents=True)
    (root / uuid / "model.pt").write_bytes(b"weights")
    response = client.post(f"/api/v1/trials/{trial.id}/checkpoints", headers=auth(trial),
                           json={"uuid": uuid, "steps_completed": steps})
    assert response.status_code == 201, response.get_json()
    return uuid


def write_worked_example(client: FlaskClient, app: Flask, root: Path,
                         exp_id: int) -> dict[int, str]:
    by_trial = {1: trials(app, exp_id)[0], 2: trials(app, exp_id)[1]}
    steps: dict[int, int] = {1: 0, 2: 0}
    ids = {}
    for trial_no, ckpt_id, loss in WORKED_EXAMPLE:
        steps[trial_no] += 10
        ids[ckpt_id] = save(client, root, by_trial[trial_no], steps[trial_no], loss)
    return ids


def end_all(app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
            exp_id: int) -> None:
    for trial in trials(app, exp_id):
        finish(app, fake, trial)
    reconciler.cycle()
    assert {t.state for t in trials(app, exp_id)} == {"COMPLETED"}


@pytest.mark.parametrize(("policy", "kept"), WORKED_TABLE,
                         ids=[f"{p[0]}-{p[1]}-{p[2]}" for p, _ in WORKED_TABLE])
def test_gc_keeps_exactly_the_checkpoints_the_policy_selects_on_a_worked_example(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
        root: Path, policy: tuple[int, int, int], kept: set[int]) -> None:
    exp_id = start(client, root, policy)
    reconciler.cycle()
    ids = write_worked_example(client, app, root, exp_id)
    end_all(app, fake, reconciler, exp_id)
    rows = checkpoint_rows(app)
    assert {n for n, u in ids.items() if rows[u] == "ACTIVE"} == kept
    assert {n for n, u in ids.items() if (root / u).is_dir()} == kept
    assert {n for n, u in ids.items() if rows[u] == "DELETED"} == set(ids) - kept


def test_larger_is_better_ranks_the_other_way(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
        root: Path) -> None:
    exp_id = start(client, root, (1, 0, 0), smaller=False)
    reconciler.cycle()
    ids = write_worked_example(client, app, root, exp_id)
    end_all(app, fake, reconciler, exp_id)
    assert {n for n, u in ids.items() if (root / u).is_dir()} == {3}  # 0.6 is the best


def test_a_trial_is_collected_when_it_ends_and_a_running_one_is_left_alone(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
        root: Path) -> None:
    exp_id = start(client, root, (0, 1, 1))
    reconciler.cycle()
    first, second = trials(app, exp_id)
    a = [save(client, root, first, s, loss) for s, loss in [(10, 0.5), (20, 0.9), (30, 0.7)]]
    b = [save(client, root, second, s, loss) for s, loss in [(10, 0.5), (20, 0.9), (30, 0.7)]]
    finish(app, fake, first)
    reconciler.cycle()
    assert [t.state for t in trials(app, exp_id)] == ["COMPLETED", "QUEUED"]
    rows = checkpoint_rows(app)
    assert [rows[u] for u in a] == ["ACTIVE", "DELETED", "ACTIVE"]  # best and latest kept
    assert [rows[u] for u in b] == ["ACTIVE"] * 3
    assert not (root / a[1]).exists() and all((root / u).is_dir() for u in b)


def test_gc_is_idempotent_and_survives_a_restart(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
        root: Path) -> None:
    exp_id = start(client, root, (0, 1, 1))
    reconciler.cycle()
    ids = write_worked_example(client, app, root, exp_id)
    end_all(app, fake, reconciler, exp_id)
    after_first = checkpoint_rows(app)
    assert reconciler.checkpoint_gc.collect().deleted == []
    restarted = CheckpointCollector(make_session_factory(app.config["HPCDET_ENGINE"]),
                                    app.config["HPCDET_SETTINGS"])
    report = restarted.collect()  # the start-up sweep finds nothing left to delete
    assert (report.experiments, report.deleted) == (1, [])
    assert checkpoint_rows(app) == after_first
    assert sorted(p.name for p in root.iterdir()) == sorted(
        ids[n] for n in (10, 7, 5))


def test_a_missing_directory_is_fine_and_its_row_is_marked_deleted(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
        root: Path) -> None:
    exp_id = start(client, root, (0, 0, 1))
    reconciler.cycle()
    trial = trials(app, exp_id)[0]
    old, new = save(client, root, trial, 10, 0.1), save(client, root, trial, 20, 0.2)
    shutil.rmtree(root / old)
    end_all(app, fake, reconciler, exp_id)
    assert checkpoint_rows(app)[old] == "DELETED"
    assert checkpoint_rows(app)[new] == "ACTIVE"


def test_an_undeletable_directory_stays_active_and_is_retried_with_backoff(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    reconciler.checkpoint_gc.clock = lambda: now[0]
    exp_id = start(client, root, (0, 0, 1))
    reconciler.cycle()
    trial = trials(app, exp_id)[0]
    old, new = save(client, root, trial, 10, 0.1), save(client, root, trial, 20, 0.2)

    def refuse(path: Any, *args: Any, **kwargs: Any) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(shutil, "rmtree", refuse)
    end_all(app, fake, reconciler, exp_id)
    assert checkpoint_rows(app)[old] == "ACTIVE" and (root / old).is_dir()
    monkeypatch.undo()
    assert reconciler.checkpoint_gc.collect().experiments == 0  # not yet: backing off
    now[0] += checkpoint_gc.RETRY_FIRST
    report = reconciler.checkpoint_gc.collect()
    assert report.deleted == [old]
    assert checkpoint_rows(app) == {old: "DELETED", new: "ACTIVE"}
    assert not (root / old).exists()


def test_validation_reported_after_the_checkpoint_still_counts(
        client: FlaskClient, app: Flask, fake: FakeSchedulerBackend, reconciler: Reconciler,
        root: Path) -> None:
    exp_id = start(client, root, (0, 1, 0))
    reconciler.cycle()
    trial = trials(app, exp_id)[0]
    early = save(client, root, trial, 10, 0.9)
    late = save(client, root, trial, 20)  # registered before its validation arrived
    validate(client, trial, 20, 0.1)
    end_all(app, fake, reconciler, exp_id)
    rows = checkpoint_rows(app)
    assert (rows[early], rows[late]) == ("DELETED", "ACTIVE")


def test_nothing_outside_the_checkpoint_directory_is_ever_deleted(tmp_path: Path) -> None:
    root, outside = tmp_path / "ckpts", tmp_path / "precious"
    root.mkdir()
    outside.mkdir()
    (outside / "data").write_text("keep me")
    link = "11111111-0000-4000-8000-000000000000"
    (root / link).symlink_to(outside)
    for bad in ("..", ".", "../precious", "a/b", "", "link", "state_dict.pth"):
        assert remove_checkpoint_dir(root, bad) is False
    assert remove_checkpoint_dir(root, link) is True
    assert not (root / link).exists() and (outside / "data").read_text() == "keep me"
    assert remove_checkpoint_dir(root, "22222222-0000-4000-8000-000000000000") is True


def test_checkpoints_at_the_same_step_share_a_latest_place() -> None:
    facts = [CheckpointFacts("a", 1, 10, None), CheckpointFacts("b", 1, 20, None),
             CheckpointFacts("c", 1, 20, None), CheckpointFacts("d", 2, 5, 1.0)]
    assert checkpoints_to_keep(facts, GcPolicy(0, 0, 1)) == {"b", "c", "d"}
    assert checkpoints_to_keep(facts, GcPolicy(1, 0, 0)) == {"d"}


def test_policy_defaults_are_determineds() -> None:
    assert GcPolicy.from_config({"checkpoint_storage": {"type": "shared_fs"}}) == GcPolicy(0, 1, 1)
    assert GcPolicy.from_config({"checkpoint_storage": {"save_trial_latest": 0}}).trial_latest == 0
