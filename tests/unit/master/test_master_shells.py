"""Shells (det shell) on the master: POST /shells, the job files, the owner-only keys.

The scheduler is scripted (fake_scheduler.py); the dev cluster runs a real shell in
tests/integration/test_it_shells.py.
"""

from __future__ import annotations

import json
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient

from hpcdet.dispatcher import JobPhase
from hpcdet.master.app import create_app
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory
from hpcdet.master.errors import Invalid
from hpcdet.master.models import ShellKey
from hpcdet.master.queue.job_queue import COMMAND, Ownership, job_type
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.scheduling.shell_keys import authorized_keys, make_keys
from hpcdet.master.scheduling.shells import parse_duration
from hpcdet.master.settings.core import MasterSettings

pytestmark = pytest.mark.interactive

ALICE = {"X-Hpcdet-User": "alice"}
BOB = {"X-Hpcdet-User": "bob"}


@pytest.fixture
def shell_app(settings: MasterSettings, fake: FakeSchedulerBackend) -> Iterator[Flask]:
    app = create_app(settings, backend=fake)
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def api(shell_app: Flask) -> FlaskClient:
    return shell_app.test_client()


@pytest.fixture
def cycle(shell_app: Flask, fake: FakeSchedulerBackend) -> Reconciler:
    return make_reconciler(shell_app.config["HPCDET_SETTINGS"],
                           make_session_factory(shell_app.config["HPCDET_ENGINE"]), fake)


def started(api: FlaskClient, **body: Any) -> dict[str, Any]:
    answer = api.post("/api/v1/shells", json=body, headers=ALICE)
    assert answer.status_code == 201, answer.json
    task: dict[str, Any] = answer.json["task"]
    return task


def public_of(private_pem: str) -> str:
    key = serialization.load_ssh_private_key(private_pem.encode(), password=None)
    assert isinstance(key, Ed25519PrivateKey)
    return key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                         serialization.PublicFormat.OpenSSH).decode()


def test_keys_are_fresh_ed25519_pairs_in_openssh_formats() -> None:
    first, second = make_keys(), make_keys()
    assert first.client_private != second.client_private
    assert first.host_public != second.host_public
    assert public_of(first.host_private) == first.host_public
    assert public_of(first.client_private) == first.client_public
    assert first.client_public.startswith("ssh-ed25519 ")
    assert "PRIVATE" not in repr(first)
    line = authorized_keys(first.client_public)
    assert line.count("\n") == 1 and first.client_public in line
    with pytest.raises(ValueError):
        authorized_keys("ssh-ed25519 AAAA\ncommand=\"id\" ssh-ed25519 BBBB")


def test_ssh_keygen_reads_the_keys(tmp_path: Path) -> None:
    keys = make_keys()
    path = tmp_path / "key"
    path.write_text(keys.client_private)
    path.chmod(0o600)
    derived = subprocess.run(["ssh-keygen", "-y", "-f", str(path)], capture_output=True,
                             text=True, check=True).stdout.split()[:2]
    assert derived == keys.client_public.split()[:2]


def test_a_shell_is_a_task_with_keys_in_its_private_job_directory(
        api: FlaskClient, fake: FakeSchedulerBackend) -> None:
    task = started(api, config={"idle_timeout": "30m", "entrypoint": "ignored"})
    assert (task["kind"], task["name"], task["state"]) == ("shell", "det-shell", "QUEUED")
    assert task["config"]["idle_timeout"] == "30m" and "entrypoint" not in task["config"]
    job_dir = Path(task["job_dir"])
    assert stat.S_IMODE(job_dir.stat().st_mode) == 0o700
    for name in ("ssh_host_ed25519_key", "authorized_keys"):
        assert stat.S_IMODE((job_dir / name).stat().st_mode) == 0o600
    script = (job_dir / "script").read_text()
    assert "/hpcdet/harness/shell_service.py --idle-timeout 1800" in script
    assert "export DET_TASK_TYPE=SHELL" in (job_dir / "environment.sh").read_text()
    [submission] = fake.submitted
    assert "--job-name=det-shell" in submission.argv
    # Nothing secret in what the task routes show.
    shown = json.dumps(api.get(f"/api/v1/tasks/{task['id']}", headers=ALICE).json)
    assert "PRIVATE KEY" not in shown

    keys = api.get(f"/api/v1/shells/{task['id']}/keys", headers=ALICE).json
    assert (keys["ready"], keys["host"], keys["state"]) == (False, None, "QUEUED")
    host_public = public_of((job_dir / "ssh_host_ed25519_key").read_text())
    assert keys["host_public_key"] == host_public
    assert public_of(keys["client_private_key"]) in (job_dir / "authorized_keys").read_text()


def test_the_keys_are_the_owners_only_and_name_the_sshd_once_it_listens(
        api: FlaskClient, fake: FakeSchedulerBackend, cycle: Reconciler,
        shell_app: Flask) -> None:
    task = started(api, config={"description": "debugging"})
    assert task["name"] == "debugging"
    url = f"/api/v1/shells/{task['id']}/keys"
    refused = api.get(url, headers=BOB)
    assert refused.status_code == 403 and "PRIVATE" not in refused.get_data(as_text=True)
    fake.phases[task["job_id"]] = JobPhase.RUNNING
    cycle.cycle()
    assert api.get(url, headers=ALICE).json["ready"] is False  # no service.json yet
    service = Path(task["job_dir"], "service.json")
    service.write_text(json.dumps({"host": "-oProxyCommand=id", "port": 2222, "user": "a"}))
    assert api.get(url, headers=ALICE).json["ready"] is False  # not a host name
    service.write_text(json.dumps({"host": "node1", "port": 40022, "user": "alice"}))
    keys = api.get(url, headers=ALICE).json
    assert (keys["ready"], keys["host"], keys["port"], keys["user"]) == (
        True, "node1", 40022, "alice")
    batch = api.post("/api/v1/tasks", json={"wrap": "true", "cwd": "/"}, headers=ALICE)
    assert api.get(f"/api/v1/shells/{batch.json['task']['id']}/keys",
                   headers=ALICE).status_code == 404
    listed = api.get("/api/v1/tasks?kind=shell&mine=true", headers=ALICE).json["tasks"]
    assert [t["id"] for t in listed] == [task["id"]]
    assert api.post(f"/api/v1/tasks/{task['id']}/kill", headers=ALICE).status_code == 200
    cycle.cycle()
    fake.phases[task["job_id"]] = JobPhase.CANCELLED
    cycle.cycle()
    ended = api.get(url, headers=ALICE).json
    assert (ended["state"], ended["ready"], ended["client_private_key"]) == (
        "CANCELED", False, None)
    # Issue 28: the ended shell's private key stayed in the database.
    with make_session_factory(shell_app.config["HPCDET_ENGINE"])() as session:
        row = session.get(ShellKey, task["id"])
        assert row is not None and row.client_private_key == ""
        assert row.host_public_key.startswith("ssh-ed25519 ")


def test_test_only_and_bad_configs(api: FlaskClient, fake: FakeSchedulerBackend) -> None:
    answer = api.post("/api/v1/shells", json={"test_only": True}, headers=ALICE)
    assert answer.status_code == 200 and "harness/shell_service.py" in answer.json["script"]
    bad = api.post("/api/v1/shells", json={"config": {"idle_timeout": "soon"}}, headers=ALICE)
    assert bad.status_code == 400
    assert bad.json["error"]["details"] == [
        "<config>.idle_timeout: must be a duration such as 30m, 1h or 90s, not 'soon'"]
    bad = api.post("/api/v1/shells", json={"config": {"resources": {"slots": -1}}},
                   headers=ALICE)
    assert bad.status_code == 400 and fake.submitted == []


@pytest.mark.parametrize(("raw", "seconds"), [("30m", 1800), ("1h30m", 5400), ("90s", 90),
                                              (45, 45), ("1.5h", 5400)])
def test_idle_timeout_is_determineds_duration(raw: Any, seconds: float) -> None:
    assert parse_duration(raw) == seconds


@pytest.mark.parametrize("raw", ["", "m", "10", "10 m", "-5m", 0, True, "5m; rm"])
def test_bad_idle_timeouts(raw: Any) -> None:
    with pytest.raises(Invalid):
        parse_duration(raw)


def test_det_job_list_calls_a_shells_job_shell() -> None:
    class Row:
        def __init__(self, kind: str) -> None:
            self.kind = kind

    assert job_type(Ownership(COMMAND, task_id=1, task=Row("shell"))) == "SHELL"
    assert job_type(Ownership(COMMAND, task_id=1, task=Row("command"))) == "COMMAND"
    assert job_type(Ownership(COMMAND, task_id=1, task=Row("batch"))) == "COMMAND"
    assert job_type(Ownership(COMMAND, task_id=1)) == "COMMAND"
