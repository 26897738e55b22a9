"""An upgrade of databases old commits' code wrote (tests/data/upgrade/, made from the git
history by scripts/make-upgrade-fixture): schema 0001 (the oldest released) and schema 0015
(workspaces, the model registry, command tasks, notebooks and tokens). Every object reads back
through the API after the master's own migration, the RUNNING experiment runs on to
COMPLETED, and the old tasks and model version are still usable."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask.testing import FlaskClient
from upgrade_fixture import ALL, WITH_REGISTRY, Fixture, load_fixture

from hpcdet.dispatcher import JobPhase
from hpcdet.master.db import HEAD_REVISION, migrate, schema_revision
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings

ALICE = {"X-Hpcdet-User": "alice"}
BOB = {"X-Hpcdet-User": "bob"}
# What the old code left: experiment name -> (its state, its trial's state, steps, logs).
EXPECTED = {"running": ("ACTIVE", "RUNNING", 5, 2), "queued": ("ACTIVE", "QUEUED", 0, 0),
            "paused": ("PAUSED", "PAUSED", 0, 0), "completed": ("COMPLETED", "COMPLETED", 10, 2),
            "canceled": ("CANCELED", "CANCELED", 5, 2), "error": ("ERROR", "ERROR", 5, 2)}
REPORTED = {"running", "completed", "canceled", "error"}  # metrics and a checkpoint
# The 0015 fixture's tasks (bob's): name -> (kind, state, exit code as the old code stored it:
# its scripted scheduler said 0 for a live job, 1 for a failed or cancelled one).
TASKS = {"cmd-running": ("command", "RUNNING", 0), "cmd-completed": ("command", "COMPLETED", 0),
         "cmd-error": ("command", "ERROR", 1), "cmd-canceled": ("command", "CANCELED", 1),
         "nb": ("notebook", "QUEUED", 0)}


@pytest.fixture(params=ALL, ids=[f.stem for f in ALL])
def old(request: pytest.FixtureRequest) -> Fixture:
    fixture: Fixture = request.param
    return fixture


@pytest.fixture
def settings(db_url: str, tmp_path: Path, old: Fixture) -> MasterSettings:
    """The master's settings on the OLD database, upgraded by the master's own migration."""
    load_fixture(db_url, tmp_path / "jobs", old)
    assert schema_revision(db_url) == old.revision
    migrate(db_url)
    rm = replace(ResourceManagerSettings(), job_storage_root=str(tmp_path / "jobs"),
                 master_host="master.example", cluster_name="unit")
    return MasterSettings(db_url=db_url, resource_manager=rm, state_dir=str(tmp_path))


def _get(client: FlaskClient, path: str, headers: dict[str, str] = ALICE) -> dict[str, Any]:
    answer = client.get(path, headers=headers)
    assert answer.status_code == 200, (path, answer.get_json())
    return dict(answer.get_json())


def _experiments(client: FlaskClient) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in _get(client, "/api/v1/experiments?limit=100")["experiments"]}


def _trial(client: FlaskClient, experiment_id: int) -> dict[str, Any]:
    trials = _get(client, f"/api/v1/experiments/{experiment_id}/trials")["trials"]
    assert len(trials) == 1
    return _get(client, f"/api/v1/trials/{trials[0]['id']}")


def _tasks(client: FlaskClient) -> dict[str, dict[str, Any]]:
    listed = [_get(client, f"/api/v1/tasks/{t['id']}", BOB)["task"]
              for kind in ("command", "notebook")
              for t in _get(client, f"/api/v1/tasks?kind={kind}&limit=100", BOB)["tasks"]]
    return {t["name"]: t for t in listed}


def test_every_object_reads_back_after_the_upgrade(client: FlaskClient, settings: MasterSettings,
                                                   old: Fixture) -> None:
    assert schema_revision(settings.db_url) == HEAD_REVISION
    experiments = _experiments(client)
    assert {name: e["state"] for name, e in experiments.items()} == \
        {name: want[0] for name, want in EXPECTED.items()}
    assert {e["owner"] for e in experiments.values()} == {"alice"}
    if old.workspace is None:
        # Older than workspaces (0007): in none, their owner's alone, as 0007 leaves them.
        assert {e["workspace_id"] for e in experiments.values()} == {None}
    else:
        workspace, project = old.workspace
        described = _get(client, f"/api/v1/workspaces/{workspace}")["workspace"]
        assert described["members"] == [{"user": "alice", "role": "admin"},
                                        {"user": "bob", "role": "editor"}]
        assert [p["name"] for p in described["projects"]] == [project]
        assert (described["archived"], described["num_experiments"]) == (False, 6)
        assert {e["workspace_id"] for e in experiments.values()} == {described["id"]}
        listed = _get(client, f"/api/v1/experiments?workspace={workspace}&project={project}")
        assert {e["name"] for e in listed["experiments"]} == set(EXPECTED)
        # bob, an editor there, sees alice's experiments too
        assert set(_experiments_of(client, BOB)) == set(EXPECTED)
    for name, (_, trial_state, steps, log_lines) in EXPECTED.items():
        described = _trial(client, experiments[name]["id"])
        trial = described["trial"]
        assert (trial["state"], trial["steps_completed"]) == (trial_state, steps), name
        assert len(trial["jobs"]) == 1 and trial["jobs"][0]["job_id"], name
        metrics = _get(client, f"/api/v1/trials/{trial['id']}/metrics?group=training")["metrics"]
        checkpoints = described["checkpoints"]
        logs = _get(client, f"/api/v1/trials/{trial['id']}/logs")
        if name in REPORTED:
            assert len(metrics) == steps and metrics[-1]["metrics"]["loss"] == 1.0 / steps
            assert [c["steps_completed"] for c in checkpoints] == [steps], name
            assert checkpoints[0]["uuid"] == trial["latest_checkpoint"]
        else:
            assert metrics == [] and checkpoints == [], name
        assert len([x for x in logs["logs"] if x["stream"] == "stdout"]) == log_lines, name


def _experiments_of(client: FlaskClient, headers: dict[str, str]) -> list[str]:
    return [e["name"] for e in
            _get(client, "/api/v1/experiments?limit=100", headers)["experiments"]]


@pytest.mark.parametrize("old", [WITH_REGISTRY], ids=[WITH_REGISTRY.stem])
def test_models_tasks_and_tokens_read_back_after_the_upgrade(client: FlaskClient) -> None:
    """Only the 0015 fixture has them (0001 predates workspaces, models, tasks and tokens)."""
    model = _get(client, "/api/v1/models/classifier")["model"]
    assert (model["name"], model["description"], model["labels"], model["metadata"]) == (
        "classifier", "the completed run", ["prod"], {"task": "vision"})
    versions = _get(client, "/api/v1/models/classifier/versions")["model_versions"]
    assert [(v["version"], v["name"], v["comment"]) for v in versions] == [(1, "v1", "first")]
    # The version's checkpoint resolves: the completed experiment's, with its trial.
    completed = _trial(client, _experiments(client)["completed"]["id"])["trial"]
    version = _get(client, "/api/v1/models/classifier/versions/1")["model_version"]
    uuid = version["checkpoint"]["uuid"]
    assert uuid == completed["latest_checkpoint"]
    checkpoint = _get(client, f"/api/v1/checkpoints/{uuid}")["checkpoint"]
    assert (checkpoint["trial_id"], checkpoint["steps_completed"]) == (completed["id"], 10)
    # The old model takes its next version at head (numbering goes on from the old one).
    again = client.post("/api/v1/models/classifier/versions", headers=ALICE,
                        json={"checkpoint_uuid": uuid, "name": "v2"})
    assert again.status_code == 201, again.get_json()
    assert again.get_json()["model_version"]["version"] == 2
    tasks = _tasks(client)
    assert {name: (t["kind"], t["state"], t["exit_code"]) for name, t in tasks.items()} == TASKS
    assert {t["owner"] for t in tasks.values()} == {"bob"}
    tokens = _get(client, "/api/v1/auth/tokens")["tokens"]
    assert [(t["kind"], t["name"], t["username"]) for t in tokens] == [("api", "ci", "alice")]


def test_a_running_experiment_continues_after_the_upgrade(
        client: FlaskClient, reconciler: Reconciler, fake: FakeSchedulerBackend,
        old: Fixture) -> None:
    experiments = _experiments(client)
    running = experiments["running"]
    job_id = _trial(client, running["id"])["trial"]["jobs"][0]["job_id"]
    queued = _trial(client, experiments["queued"]["id"])["trial"]["jobs"][0]["job_id"]
    fake.phases.update({job_id: JobPhase.RUNNING, queued: JobPhase.PENDING})
    tasks = _tasks(client) if old.registry_and_tasks else {}
    for task in tasks.values():  # the old master's live tasks' jobs, as the scheduler has them
        if task["state"] in ("RUNNING", "QUEUED"):
            fake.phases[task["job_id"]] = JobPhase(task["state"].replace("QUEUED", "PENDING"))
    reconciler.cycle()  # the new master adopts the old master's jobs as they are
    assert _experiments(client)["running"]["state"] == "ACTIVE"
    fake.phases[job_id] = JobPhase.COMPLETED
    if tasks:  # the old running command is killed through the API; the notebook's job ends
        killed = client.post(f"/api/v1/tasks/{tasks['cmd-running']['id']}/kill", headers=BOB)
        assert killed.status_code == 200, killed.get_json()
        fake.phases[tasks["nb"]["job_id"]] = JobPhase.COMPLETED
    for _ in range(3):
        reconciler.cycle()
    assert _trial(client, running["id"])["trial"]["state"] == "COMPLETED"
    assert _experiments(client)["running"]["state"] == "COMPLETED"
    if tasks:
        after = _tasks(client)
        assert (after["cmd-running"]["state"], after["nb"]["state"]) == ("CANCELED",
                                                                         "COMPLETED")
        assert fake.cancelled == [tasks["cmd-running"]["job_id"]]
    assert fake.submitted == []  # nothing was submitted again
