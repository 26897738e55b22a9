"""A login node that drops mid-cycle costs one missed cycle and no state (docs/admin/ssh.md).

The reconciler runs against the scripted scheduler with a transport that can be switched
off: every job-directory operation (and the poll) then raises TransportUnavailableError,
as the SSH transport does when its login node is unreachable.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import create
from sqlalchemy import select
from test_master_reconciler import trial_history

from hpcdet.dispatcher import JobPhase, JobRef, JobStatus
from hpcdet.dispatcher.transport import Entry, LocalTransport, TransportUnavailableError
from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Job
from hpcdet.master.scheduling.reconciler import Reconciler


class SwitchedTransport(LocalTransport):
    """The local transport, except while ``down``: then nothing can be reached."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.refused = 0

    def _check(self) -> None:
        if self.down:
            self.refused += 1
            raise TransportUnavailableError((), "cannot reach the login node test:22")

    def make_dirs(self, path: str, mode: int) -> None:
        self._check()
        super().make_dirs(path, mode)

    def write_file(self, path: str, data: bytes, mode: int, *, atomic: bool = True) -> None:
        self._check()
        super().write_file(path, data, mode, atomic=atomic)

    def read_file(self, path: str, offset: int = 0, limit: int | None = None) -> bytes:
        self._check()
        return super().read_file(path, offset, limit)

    def file_size(self, path: str) -> int | None:
        self._check()
        return super().file_size(path)

    def exists(self, path: str) -> bool:
        self._check()
        return super().exists(path)

    def list_dir(self, path: str) -> list[Entry]:
        self._check()
        return super().list_dir(path)


@pytest.fixture
def switched(fake: FakeSchedulerBackend) -> SwitchedTransport:
    fake.transport = SwitchedTransport()
    return fake.transport


def jobs(app: Flask) -> list[tuple[str | None, bool, str | None]]:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        rows = session.scalars(select(Job).order_by(Job.id))
        return [(j.job_id, j.active, j.phase) for j in rows]


def test_a_submission_cut_off_is_retried_not_failed(
        client: FlaskClient, app: Flask, reconciler: Reconciler, fake: FakeSchedulerBackend,
        switched: SwitchedTransport) -> None:
    exp_id = create(client).get_json()["experiment"]["id"]
    switched.down = True
    with pytest.raises(TransportUnavailableError):
        reconciler.cycle()
    trial = client.get(f"/api/v1/experiments/{exp_id}/trials").get_json()["trials"][0]
    assert trial["state"] == "QUEUED" and not fake.submitted  # not ERROR: nothing was lost
    assert jobs(app) == [(None, True, None)]  # the intent stays for the next cycle
    switched.down = False
    reconciler.cycle()  # finds no job under the intent's name: submits again
    assert len(fake.submitted) == 1 and fake.find_calls
    fake.phases["101"] = JobPhase.COMPLETED
    reconciler.cycle()
    assert trial_history(app, trial["id"]) == ["QUEUED", "RUNNING", "COMPLETED"]


def test_an_unreachable_poll_changes_no_trial(
        client: FlaskClient, app: Flask, reconciler: Reconciler, fake: FakeSchedulerBackend,
        switched: SwitchedTransport, monkeypatch: pytest.MonkeyPatch) -> None:
    create(client)
    reconciler.cycle()
    fake.phases["101"] = JobPhase.RUNNING
    reconciler.cycle()
    trial_id = client.get("/api/v1/experiments").get_json()["experiments"][0]["id"]
    before = (trial_history(app, trial_id), jobs(app))

    def unreachable(jobs: Sequence[JobRef]) -> dict[str, JobStatus]:
        raise TransportUnavailableError(["squeue"], "cannot reach the login node test:22")

    monkeypatch.setattr(fake, "poll", unreachable)
    fake.phases["101"] = JobPhase.COMPLETED  # it ends while the login node is away
    for _ in range(3):
        with pytest.raises(TransportUnavailableError):
            reconciler.cycle()
    assert (trial_history(app, trial_id), jobs(app)) == before
    monkeypatch.undo()
    reconciler.cycle()
    assert trial_history(app, trial_id) == ["QUEUED", "RUNNING", "COMPLETED"]


def test_job_files_out_of_reach_leave_an_ended_job_for_the_next_cycle(
        client: FlaskClient, app: Flask, reconciler: Reconciler, fake: FakeSchedulerBackend,
        switched: SwitchedTransport) -> None:
    """The poll answers but the job's files cannot be read: its end is not applied (a
    preemption must not be taken for a failure, nor logs lost) until they can."""
    create(client)
    reconciler.cycle()
    job_dir = Path(fake.submitted[0].script_path).parent
    (job_dir / "slurm-101.out").write_text("0: last words\n")
    fake.phases["101"] = JobPhase.COMPLETED
    switched.down = True
    with pytest.raises(TransportUnavailableError):
        reconciler.cycle()
    assert jobs(app) == [("101", True, "PENDING")]  # as the first cycle saw it
    switched.down = False
    reconciler.cycle()
    trial_id = client.get("/api/v1/experiments").get_json()["experiments"][0]["id"]
    assert trial_history(app, trial_id) == ["QUEUED", "RUNNING", "COMPLETED"]
    logs = client.get(f"/api/v1/trials/{trial_id}/logs").get_json()["logs"]
    assert [e["line"] for e in logs if e["stream"] == "stdout"] == ["last words"]


def test_a_request_that_needs_the_cluster_answers_503_with_why(
        client: FlaskClient, app: Flask) -> None:
    """A dry run writes a scratch job directory: with the login node away, 503 and the
    transport's one-line reason, no 500 and no traceback."""
    down = SwitchedTransport()
    down.down = True
    app.config["HPCDET_BACKEND"].transport = down
    answer = create(client, dry_run=True)
    body = answer.get_json()
    assert answer.status_code == 503, body
    assert body["error"]["code"] == "cluster_unreachable"
    assert body["error"]["message"] == "cannot reach the login node test:22"
