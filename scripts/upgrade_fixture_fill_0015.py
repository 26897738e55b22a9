"""Fill a database through the code of dcd3ab7 (schema 0015: workspaces, the model registry,
command tasks, notebooks, users and tokens), run by scripts/make-upgrade-fixture with that
commit's tree first on sys.path; never imported by the current package.

Everything goes through that commit's own REST API (Flask test client) and its own
reconciler, against its own scripted scheduler (its tests/unit/master/fake_scheduler.py, the
named fake): alice makes a workspace with a project and bob as an editor, six experiments in
it end in every experiment state, the trials report metrics and checkpoints with the tokens
the reconciler wrote into their job directories, a model's version names the completed
experiment's checkpoint, commands end RUNNING, COMPLETED, ERROR and CANCELED, a notebook
stays QUEUED, and alice has an API token.

    python upgrade_fixture_fill_0015.py DB_URL JOB_ROOT
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

# The 0001 fill's experiments: config, context, names (this script's directory is on sys.path).
from upgrade_fixture_fill import CONFIG, NAMES, context

RUNS = ["running", "completed", "canceled", "error"]  # their jobs start; they report
ENDS = {"completed": "COMPLETED", "error": "FAILED"}
ALICE = {"X-Hpcdet-User": "alice"}
BOB = {"X-Hpcdet-User": "bob"}
# Commands: name -> (entrypoint, the job's phase at the end; None: killed through the API).
COMMANDS = {"cmd-running": (["sleep", "1000"], "RUNNING"),
            "cmd-completed": (["true"], "COMPLETED"),
            "cmd-error": (["false"], "FAILED"),
            "cmd-canceled": (["sleep", "1000"], None)}


def ok(answer: Any, status: int = 200) -> dict[str, Any]:
    assert answer.status_code == status, (answer.status_code, answer.get_json())
    return dict(answer.get_json())


def main(db_url: str, job_root: str) -> None:
    sys.path.insert(0, str(Path.cwd() / "tests" / "unit" / "master"))
    from fake_scheduler import FakeSchedulerBackend

    from hpcdet.dispatcher import JobPhase
    from hpcdet.master.app import create_app
    from hpcdet.master.db import make_session_factory, migrate
    from hpcdet.master.scheduling.job_dirs import trial_job_dir
    from hpcdet.master.scheduling.reconciler import Reconciler
    from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings

    migrate(db_url)
    rm = replace(ResourceManagerSettings(), job_storage_root=job_root,
                 master_host="master.example", cluster_name="fixture")
    settings = MasterSettings(db_url=db_url, resource_manager=rm, state_dir=job_root)
    fake = FakeSchedulerBackend()
    app = create_app(settings, backend=fake)
    client = app.test_client()
    reconciler = Reconciler(app.config["HPCDET_SETTINGS"],
                            make_session_factory(app.config["HPCDET_ENGINE"]), fake)

    ok(client.post("/api/v1/workspaces", json={"name": "research"}, headers=ALICE), 201)
    ok(client.put("/api/v1/workspaces/research/members/bob", json={"role": "editor"},
                  headers=ALICE))
    ok(client.post("/api/v1/workspaces/research/projects",
                   json={"name": "vision", "description": "image models"}, headers=ALICE), 201)
    ok(client.post("/api/v1/auth/tokens", json={"name": "ci", "expires_days": 3650},
                   headers=ALICE), 201)
    ids = {}
    for name in NAMES:
        body = {"config": CONFIG.format(name=name), "context": context(),
                "workspace": "research", "project": "vision"}
        ids[name] = ok(client.post("/api/v1/experiments", headers=ALICE, json=body),
                       201)["experiment"]["id"]
    reconciler.cycle()  # trials created and submitted: one job each
    trials = {name: only_trial(client, ids[name]) for name in NAMES}
    jobs = {name: trials[name]["jobs"][0]["job_id"] for name in NAMES}
    ok(client.post(f"/api/v1/experiments/{ids['paused']}/pause", headers=ALICE))
    for name in RUNS:
        fake.phases[jobs[name]] = JobPhase.RUNNING
        job_dir = Path(trial_job_dir(settings, ids[name], trials[name]["id"], "alice"))
        (job_dir / f"slurm-{jobs[name]}.out").write_text(f"training {name}\nstep 5\n")
    reconciler.cycle()  # their trials RUNNING
    for name in RUNS:
        job_dir = Path(trial_job_dir(settings, ids[name], trials[name]["id"], "alice"))
        report(client, trials[name], job_dir, finished=name == "completed")
    for name, phase in ENDS.items():
        fake.phases[jobs[name]] = JobPhase(phase)
    ok(client.post(f"/api/v1/experiments/{ids['canceled']}/kill", headers=ALICE))

    tasks = {}
    for name, (entrypoint, _) in COMMANDS.items():
        tasks[name] = ok(client.post("/api/v1/commands", headers=BOB, json={
            "entrypoint": entrypoint, "config": {"description": name}}), 201)["task"]
    notebook = ok(client.post("/api/v1/notebooks", json={"config": {"description": "nb"}},
                              headers=BOB), 201)["task"]
    for name in COMMANDS:
        fake.phases[tasks[name]["job_id"]] = JobPhase.RUNNING
    fake.phases[notebook["job_id"]] = JobPhase.PENDING
    reconciler.cycle()
    for name, (_, phase) in COMMANDS.items():
        if phase is None:
            ok(client.post(f"/api/v1/tasks/{tasks[name]['id']}/kill", headers=BOB))
        else:
            fake.phases[tasks[name]["job_id"]] = JobPhase(phase)
    for _ in range(3):
        reconciler.cycle()
    fake.phases[tasks["cmd-canceled"]["job_id"]] = JobPhase.CANCELLED
    for _ in range(2):
        reconciler.cycle()

    completed = only_trial(client, ids["completed"])["latest_checkpoint"]
    ok(client.post("/api/v1/models", headers=ALICE, json={
        "name": "classifier", "description": "the completed run", "workspace": "research",
        "labels": ["prod"], "metadata": {"task": "vision"}}), 201)
    ok(client.post("/api/v1/models/classifier/versions", headers=ALICE, json={
        "checkpoint_uuid": completed, "name": "v1", "comment": "first"}), 201)
    app.config["HPCDET_ENGINE"].dispose()


def only_trial(client: Any, experiment_id: int) -> dict[str, Any]:
    """The experiment's one trial, described (with its jobs)."""
    trials = ok(client.get(f"/api/v1/experiments/{experiment_id}/trials",
                           headers=ALICE))["trials"]
    assert len(trials) == 1, trials
    return dict(ok(client.get(f"/api/v1/trials/{trials[0]['id']}", headers=ALICE))["trial"])


def report(client: Any, trial: dict[str, Any], job_dir: Path, *, finished: bool) -> None:
    """Metrics and a checkpoint through the harness's routes, with the token the reconciler
    wrote into the job directory."""
    token = (job_dir / ".token").read_text().strip()
    auth = {"Authorization": f"Bearer {token}"}
    steps = 10 if finished else 5
    training = [{"steps_completed": step, "metrics": {"loss": 1.0 / step}}
                for step in range(1, steps + 1)]
    ok(client.post(f"/api/v1/trials/{trial['id']}/metrics", headers=auth,
                   json={"group": "training", "reports": training}))
    ok(client.post(f"/api/v1/trials/{trial['id']}/metrics", headers=auth,
                   json={"group": "validation", "reports": [
                       {"steps_completed": steps, "metrics": {"validation_loss": 0.5}}]}))
    ok(client.post(f"/api/v1/trials/{trial['id']}/checkpoints", headers=auth,
                   json={"uuid": str(uuid.UUID(int=trial["id"])), "steps_completed": steps,
                         "metadata": {"framework": "fixture"},
                         "resources": {"state.pt": 1234}}), 201)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
