"""Fill a database through an OLD commit's own code (run by scripts/make-upgrade-fixture with
that commit's tree first on sys.path; never imported by the current package).

Written against the API of 9a2c6eb (schema 0001; the first commit whose master runs: e814e6b
made the schema but had no scheduler backend to render a job with): the experiments are
created through its REST API (Flask test client), its own reconciler creates, submits and
polls their trials against a scripted scheduler, metrics and checkpoints are reported with
each trial's token as the harness does, and an experiment is killed through the API.

    python upgrade_fixture_fill.py DB_URL JOB_ROOT
"""

from __future__ import annotations

import base64
import io
import sys
import tarfile
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

CONFIG = """\
name: {name}
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {{name: single, metric: validation_loss, max_length: {{batches: 10}}}}
resources: {{slots_per_trial: 1}}
max_restarts: 0
"""

# Each experiment's job: its phase while running, and at the end (None: left as it is).
NAMES = ["running", "queued", "paused", "completed", "canceled", "error"]
RUNS = {"running", "completed", "canceled", "error"}
ENDS = {"completed": "COMPLETED", "error": "FAILED"}


def context() -> str:
    """A base64 tar.gz context, as the CLI sends."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b"print('hi')\n"
        info = tarfile.TarInfo("train.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buffer.getvalue()).decode()


def fixture_backend() -> Any:
    """A fake scheduler (the commit's Slurm backend renders; submit and poll are scripted)."""
    from hpcdet.dispatcher import JobPhase, JobStatus
    from hpcdet.dispatcher.slurm import SlurmBackend

    class FixtureBackend(SlurmBackend):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.phases: dict[str, str] = {}

        def submit(self, submission: Any) -> str:
            job_id = str(1001 + len(self.phases))
            self.phases[job_id] = "PENDING"
            return job_id

        def poll(self, jobs: Any) -> dict[str, Any]:
            return {j.job_id: JobStatus(j.job_id, JobPhase(self.phases[j.job_id]),
                                        self.phases[j.job_id], nodes="node1",
                                        exit_code=1 if self.phases[j.job_id] == "FAILED" else 0)
                    for j in jobs}

        def cancel(self, job_ids: Any) -> None:
            for job_id in job_ids:
                self.phases[job_id] = "CANCELLED"

    return FixtureBackend()


def main(db_url: str, job_root: str) -> None:
    from hpcdet.master.reconciler import Reconciler

    from hpcdet.master.app import create_app
    from hpcdet.master.db import migrate
    from hpcdet.master.settings import MasterSettings, ResourceManagerSettings

    migrate(db_url)
    rm = replace(ResourceManagerSettings(), job_storage_root=job_root,
                 master_host="master.example", cluster_name="fixture")
    settings = MasterSettings(db_url=db_url, resource_manager=rm, state_dir=job_root)
    backend = fixture_backend()
    app = create_app(settings, backend=backend)
    client = app.test_client()
    reconciler = Reconciler(settings, app.config["HPCDET_SESSION_FACTORY"], backend)
    ids = {}
    for name in NAMES:
        answer = client.post("/api/v1/experiments", headers=USER,
                             json={"config": CONFIG.format(name=name), "context": context()})
        assert answer.status_code == 201, answer.get_json()
        ids[name] = answer.get_json()["experiment"]["id"]
    reconciler.cycle()  # trials created and submitted: one job each
    trials = {name: only_trial(client, ids[name]) for name in NAMES}
    jobs = {name: str(1001 + index) for index, name in enumerate(NAMES)}
    pause(app, ids["paused"])
    for name in RUNS:
        backend.phases[jobs[name]] = "RUNNING"
        # What the job itself writes: its output, which the reconciler stores as logs.
        job_dir = Path(job_root) / f"exp-{ids[name]}" / f"trial-{trials[name]['id']}"
        (job_dir / f"slurm-{jobs[name]}.out").write_text(f"training {name}\nstep 5\n")
    reconciler.cycle()  # their trials RUNNING
    for name in sorted(RUNS):
        report(client, trials[name], finished=name == "completed")
    for name, phase in ENDS.items():
        backend.phases[jobs[name]] = phase
    answer = client.post(f"/api/v1/experiments/{ids['canceled']}/kill", headers=USER)
    assert answer.status_code == 200, answer.get_json()
    for _ in range(3):
        reconciler.cycle()
    app.config["HPCDET_ENGINE"].dispose()


USER = {"X-Hpcdet-User": "alice"}


def pause(app: Any, experiment_id: int) -> None:
    """PAUSED through the commit's own transition (it has no pause route yet): the trial's
    job withdrawn, as a pause does."""
    from sqlalchemy import select

    from hpcdet.master.db import session_scope
    from hpcdet.master.models import Experiment, Job, Trial
    from hpcdet.master.transitions import transition
    from hpcdet.states import State

    with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
        experiment = session.get(Experiment, experiment_id)
        trial = session.scalars(select(Trial).where(Trial.experiment_id == experiment_id)).one()
        for job in session.scalars(select(Job).where(Job.trial_id == trial.id)):
            job.active, job.phase = False, "CANCELLED"
        transition(session, trial, State.PAUSED, cause="paused by alice", actor="alice")
        transition(session, experiment, State.PAUSED, cause="paused by alice", actor="alice")


def only_trial(client: Any, experiment_id: int) -> dict[str, Any]:
    """The experiment's one trial, with its token read from the database."""
    trials = client.get(f"/api/v1/experiments/{experiment_id}/trials",
                        headers={"X-Hpcdet-User": "alice"}).get_json()["trials"]
    assert len(trials) == 1, trials
    return dict(trials[0])


def report(client: Any, trial: dict[str, Any], *, finished: bool) -> None:
    """Metrics and a checkpoint, through the routes the harness uses (Bearer token)."""
    from sqlalchemy import select

    from hpcdet.master.db import make_session_factory, session_scope
    from hpcdet.master.models import Trial

    with session_scope(make_session_factory(client.application.config["HPCDET_ENGINE"])) as s:
        token = s.execute(select(Trial.token).where(Trial.id == trial["id"])).scalar_one()
    auth = {"Authorization": f"Bearer {token}"}
    steps = 10 if finished else 5
    training = [{"steps_completed": step, "metrics": {"loss": 1.0 / step}}
                for step in range(1, steps + 1)]
    answer = client.post(f"/api/v1/trials/{trial['id']}/metrics", headers=auth,
                         json={"group": "training", "reports": training})
    assert answer.status_code == 200, answer.get_json()
    answer = client.post(f"/api/v1/trials/{trial['id']}/metrics", headers=auth,
                         json={"group": "validation", "reports": [
                             {"steps_completed": steps, "metrics": {"validation_loss": 0.5}}]})
    assert answer.status_code == 200, answer.get_json()
    answer = client.post(f"/api/v1/trials/{trial['id']}/checkpoints", headers=auth,
                         json={"uuid": str(uuid.UUID(int=trial["id"])), "steps_completed": steps,
                               "metadata": {"framework": "fixture"},
                               "resources": {"state.pt": 1234}})
    assert answer.status_code == 201, answer.get_json()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
