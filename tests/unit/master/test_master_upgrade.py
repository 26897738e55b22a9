"""An upgrade of a database the oldest released schema's code wrote (tests/data/upgrade/, made
from the git history by scripts/make-upgrade-fixture): every object reads back through the
API after the master's own migration, and the RUNNING experiment runs on to COMPLETED."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask.testing import FlaskClient
from upgrade_fixture import load_fixture

from hpcdet.dispatcher import JobPhase
from hpcdet.master.db import HEAD_REVISION, migrate, schema_revision
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings

ALICE = {"X-Hpcdet-User": "alice"}
# What the old code left: experiment name -> (its state, its trial's state, steps, logs).
EXPECTED = {"running": ("ACTIVE", "RUNNING", 5, 2), "queued": ("ACTIVE", "QUEUED", 0, 0),
            "paused": ("PAUSED", "PAUSED", 0, 0), "completed": ("COMPLETED", "COMPLETED", 10, 2),
            "canceled": ("CANCELED", "CANCELED", 5, 2), "error": ("ERROR", "ERROR", 5, 2)}
REPORTED = {"running", "completed", "canceled", "error"}  # metrics and a checkpoint


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> MasterSettings:
    """The master's settings on the OLD database, upgraded by the master's own migration."""
    load_fixture(db_url, tmp_path / "jobs")
    assert schema_revision(db_url) == "0001"
    migrate(db_url)
    rm = replace(ResourceManagerSettings(), job_storage_root=str(tmp_path / "jobs"),
                 master_host="master.example", cluster_name="unit")
    return MasterSettings(db_url=db_url, resource_manager=rm, state_dir=str(tmp_path))


def _experiments(client: FlaskClient) -> dict[str, dict[str, Any]]:
    answer = client.get("/api/v1/experiments?limit=100", headers=ALICE)
    assert answer.status_code == 200, answer.get_json()
    return {e["name"]: e for e in answer.get_json()["experiments"]}


def _trial(client: FlaskClient, experiment_id: int) -> dict[str, Any]:
    trials = client.get(f"/api/v1/experiments/{experiment_id}/trials",
                        headers=ALICE).get_json()["trials"]
    assert len(trials) == 1
    answer = client.get(f"/api/v1/trials/{trials[0]['id']}", headers=ALICE)
    assert answer.status_code == 200, answer.get_json()
    return dict(answer.get_json())


def test_every_object_reads_back_after_the_upgrade(client: FlaskClient,
                                                   settings: MasterSettings) -> None:
    assert schema_revision(settings.db_url) == HEAD_REVISION
    experiments = _experiments(client)
    assert {name: e["state"] for name, e in experiments.items()} == \
        {name: want[0] for name, want in EXPECTED.items()}
    assert {e["owner"] for e in experiments.values()} == {"alice"}
    # Older than workspaces (0007): in none, their owner's alone, as 0007 leaves them.
    assert {e["workspace_id"] for e in experiments.values()} == {None}
    for name, (_, trial_state, steps, log_lines) in EXPECTED.items():
        described = _trial(client, experiments[name]["id"])
        trial = described["trial"]
        assert (trial["state"], trial["steps_completed"]) == (trial_state, steps), name
        assert len(trial["jobs"]) == 1 and trial["jobs"][0]["job_id"], name
        metrics = client.get(f"/api/v1/trials/{trial['id']}/metrics?group=training",
                             headers=ALICE).get_json()["metrics"]
        checkpoints = described["checkpoints"]
        logs = client.get(f"/api/v1/trials/{trial['id']}/logs", headers=ALICE).get_json()
        if name in REPORTED:
            assert len(metrics) == steps and metrics[-1]["metrics"]["loss"] == 1.0 / steps
            assert [c["steps_completed"] for c in checkpoints] == [steps], name
            assert checkpoints[0]["uuid"] == trial["latest_checkpoint"]
        else:
            assert metrics == [] and checkpoints == [], name
        assert len([x for x in logs["logs"] if x["stream"] == "stdout"]) == log_lines, name


def test_a_running_experiment_continues_after_the_upgrade(
        client: FlaskClient, reconciler: Reconciler, fake: FakeSchedulerBackend) -> None:
    running = _experiments(client)["running"]
    job_id = _trial(client, running["id"])["trial"]["jobs"][0]["job_id"]
    fake.phases.update({job_id: JobPhase.RUNNING, "1002": JobPhase.PENDING})
    reconciler.cycle()  # the new master adopts the old master's job as it is
    assert _experiments(client)["running"]["state"] == "ACTIVE"
    fake.phases[job_id] = JobPhase.COMPLETED
    for _ in range(3):
        reconciler.cycle()
    assert _trial(client, running["id"])["trial"]["state"] == "COMPLETED"
    assert _experiments(client)["running"]["state"] == "COMPLETED"
    assert fake.submitted == []  # nothing was submitted again
