"""Command tasks on the master: the /tasks API, submission, tracking, kills and logs.

sbatch, squeue and scancel are the scripted scheduler (fake_scheduler.py); the real dev
cluster runs the same paths in tests/integration/test_it_sbatch.py.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend, FakeSlurm
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import create

from hpcdet.dispatcher import JobPhase
from hpcdet.dispatcher.slurm.queue import QueueEntry
from hpcdet.master.app import create_app
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory, session_scope
from hpcdet.master.queue.pools import Pool
from hpcdet.master.queue.snapshots import POOLS, QUEUE, store_snapshot
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.pools import FairShareSettings
from hpcdet.states import EntityKind, State, is_allowed

USER = {"X-Hpcdet-User": "alice"}
SCRIPT = "#!/bin/bash\n#SBATCH --time=1\necho hello\n"


@pytest.fixture
def task_app(settings: MasterSettings, fake: FakeSchedulerBackend) -> Iterator[Flask]:
    app = create_app(settings, backend=fake)
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def api(task_app: Flask) -> FlaskClient:
    return task_app.test_client()


@pytest.fixture
def cycle(task_app: Flask, fake: FakeSchedulerBackend) -> Reconciler:
    return make_reconciler(task_app.config["HPCDET_SETTINGS"],
                           make_session_factory(task_app.config["HPCDET_ENGINE"]), fake)


def body(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {"script": SCRIPT, "script_name": "job.sh", "args": ["one"],
            "options": [["time", "5"], ["hold", None]], "cwd": str(tmp_path),
            "environment": {"GREETING": "hi"}, **extra}


def submit(api: FlaskClient, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    answer = api.post("/api/v1/tasks", json=body(tmp_path, **extra), headers=USER)
    assert answer.status_code == 201, answer.json
    task: dict[str, Any] = answer.json["task"]
    return task


def store(task_app: Flask, kind: str, data: dict[str, Any]) -> None:
    with session_scope(make_session_factory(task_app.config["HPCDET_ENGINE"])) as session:
        store_snapshot(session, kind, data)


def test_a_task_is_recorded_and_submitted_once(api: FlaskClient, fake: FakeSchedulerBackend,
                                               tmp_path: Path) -> None:
    task = submit(api, tmp_path, options=[["time", "5"], ["job-name", "mine"],
                                          ["hold", None]])
    assert (task["id"], task["state"], task["job_id"], task["name"]) == (1, "QUEUED", "101",
                                                                         "mine")
    [submission] = fake.submitted
    job_dir = task["job_dir"]
    assert submission.argv[2:8] == (
        "--job-name=mine", "--comment=hpcdet:unit:task-1", f"--chdir={tmp_path}",
        f"--output={job_dir}/output.log", "--open-mode=append", "--export=ALL")
    assert submission.argv[-4:] == ("--time=5", "--hold", f"{job_dir}/hpcdet-task.sh", "one")
    script = Path(job_dir, "script")
    assert script.read_text() == SCRIPT and os.access(script, os.X_OK)
    environment = Path(job_dir, "environment.sh")
    assert "export GREETING=hi" in environment.read_text()
    assert stat.S_IMODE(environment.stat().st_mode) == 0o600
    history = api.get("/api/v1/tasks/1").json["task"]["history"]
    assert [(h["to"], h["actor"]) for h in history] == [("QUEUED", "alice")]


def test_the_job_name_defaults_to_the_scripts_name_and_wrap(api: FlaskClient,
                                                            tmp_path: Path) -> None:
    assert submit(api, tmp_path, options=[])["name"] == "job.sh"
    wrapped = submit(api, tmp_path, script=None, wrap="hostname", script_name=None)
    assert wrapped["name"] == "wrap"
    assert Path(wrapped["job_dir"], "script").read_text().endswith("\nhostname\n")


@pytest.mark.parametrize(("options", "detail"), [
    ([["array", "1-3"]], "options[0]: --array: job arrays are not supported"),
    ([["comment", "x"]], "hpcdet sets the job's comment"),
    ([["bogus", None]], "unknown sbatch option --bogus"),
    ([["parsable", None]], "--parsable is handled by det sbatch itself"),
    ([["time", None]], "--time needs a value"),
    ([["hold", "yes"]], "--hold takes no value"),
    ([["time", "1\n#SBATCH --uid=0"]], "a newline"),
    ([["time"]], "must be [name, value]"),
])
def test_the_master_checks_every_option_again(api: FlaskClient, fake: FakeSchedulerBackend,
                                              tmp_path: Path, options: list[Any],
                                              detail: str) -> None:
    answer = api.post("/api/v1/tasks", json=body(tmp_path, options=options), headers=USER)
    assert answer.status_code == 400
    assert answer.json["error"]["code"] == "invalid_config"
    assert any(detail in line for line in answer.json["error"]["details"]), answer.json
    assert fake.submitted == [] and api.get("/api/v1/tasks").json["total"] == 0


@pytest.mark.parametrize(("change", "message"), [
    ({"script": None}, "give either 'script'"),
    ({"wrap": "hostname"}, "give either 'script'"),
    ({"script": "echo hi\n"}, "first line must start with #!"),
    ({"script": "#!/bin/sh\r\necho\r\n"}, "DOS line breaks"),
    ({"cwd": "relative/dir"}, "cwd: must be the absolute path"),
    ({"args": "one"}, "args: must be a list of strings"),
    ({"args": ["a\nb"]}, "args[0]: contains a newline"),
    ({"environment": {"BAD-NAME": "x"}}, "not a valid variable name"),
    ({"environment": {"A": "x\ny"}}, "environment['A']: contains a newline"),
    ({"options": [["open-mode", "sideways"]]}, "--open-mode=sideways: must be append"),
    ({"options": [["output", "a\rb"]]}, "carriage return"),
    ({"options": [["partition", "a,b"]]}, "one resource pool, not a list"),
])
def test_bad_requests_name_the_field(api: FlaskClient, tmp_path: Path,
                                     change: dict[str, Any], message: str) -> None:
    answer = api.post("/api/v1/tasks", json=body(tmp_path, **change), headers=USER)
    assert answer.status_code == 400
    error = answer.json["error"]
    assert message in error["message"] + " ".join(error["details"]), answer.json


def test_the_working_directory_must_exist_for_the_master(api: FlaskClient,
                                                         fake: FakeSchedulerBackend,
                                                         tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    task = submit(api, tmp_path, options=[["chdir", "sub"]])
    assert task["workdir"] == str(tmp_path / "sub")
    assert f"--chdir={tmp_path / 'sub'}" in fake.submitted[0].argv
    missing = api.post("/api/v1/tasks", json=body(tmp_path / "gone"), headers=USER)
    assert missing.status_code == 400
    assert f"{tmp_path / 'gone'} does not exist on the master's host" in \
        missing.json["error"]["message"]
    bad_chdir = api.post("/api/v1/tasks", json=body(tmp_path, options=[["chdir", "nope"]]),
                         headers=USER)
    assert bad_chdir.json["error"]["message"].startswith("--chdir: ")


def test_an_sbatch_refusal_keeps_nothing(api: FlaskClient, fake: FakeSchedulerBackend,
                                         settings: MasterSettings, tmp_path: Path) -> None:
    fake.fail_submit = True
    answer = api.post("/api/v1/tasks", json=body(tmp_path), headers=USER)
    assert answer.status_code == 400
    assert answer.json["error"] == {
        "code": "sbatch_refused", "details": [],
        "message": "sbatch refused the job: sbatch: error: invalid partition"}
    assert api.get("/api/v1/tasks").json["total"] == 0
    tasks_root = Path(settings.resource_manager.job_storage_root) / "tasks"
    assert not tasks_root.exists() or list(tasks_root.iterdir()) == []


def test_test_only_renders_without_submitting(api: FlaskClient, fake: FakeSchedulerBackend,
                                              tmp_path: Path) -> None:
    answer = api.post("/api/v1/tasks", json=body(tmp_path, test_only=True), headers=USER)
    assert answer.status_code == 200
    assert answer.json["script"].startswith("#!/bin/bash\n# Generated by hpcdet")
    assert "--comment=hpcdet:unit:task-NEW" in answer.json["argv"]
    assert fake.submitted == [] and api.get("/api/v1/tasks").json["total"] == 0


POOLS_SNAPSHOT = {"pools": [
    Pool(name="batch", partition="batch", default_compute=True).to_json(),
    Pool(name="debug", partition="debug", default_aux=True).to_json(),
    Pool(name="gpu-only", partition="batch", is_custom=True,
         sbatch_args=("--nodelist=node[2-3]", "-t 30")).to_json(),
]}


def test_partition_picks_the_pool_and_its_defaults(task_app: Flask, api: FlaskClient,
                                                   fake: FakeSchedulerBackend,
                                                   tmp_path: Path) -> None:
    store(task_app, POOLS, POOLS_SNAPSHOT)
    default = submit(api, tmp_path, options=[])
    assert (default["pool"], default["partition"]) == ("debug", "debug")
    custom = submit(api, tmp_path, options=[["partition", "GPU-only"], ["time", "5"]])
    assert (custom["pool"], custom["partition"]) == ("gpu-only", "batch")
    argv = fake.submitted[1].argv
    assert "--partition=batch" in argv and "--nodelist=node[2-3]" in argv
    assert argv.index("--time=30") < argv.index("--time=5")  # the user's option wins
    unknown = api.post("/api/v1/tasks", json=body(tmp_path, options=[["partition", "nope"]]),
                       headers=USER)
    assert unknown.status_code == 400
    assert "unknown resource pool 'nope' (known: batch, debug, gpu-only)" in \
        unknown.json["error"]["message"]


def test_the_fair_share_account_unless_the_user_gives_one(settings: MasterSettings,
                                                          fake: FakeSchedulerBackend,
                                                          tmp_path: Path) -> None:
    rm = replace(settings.resource_manager, fair_share=FairShareSettings())
    # sacctmgr is the fake's too: the account is made before the first sbatch names it.
    fake.runner = slurm = FakeSlurm()
    app = create_app(replace(settings, resource_manager=rm), backend=fake)
    try:
        api = app.test_client()
        assert submit(api, tmp_path)["account"] == "det-uncategorized"
        assert ("sacctmgr", "-i", "add", "account", "det-uncategorized", "fairshare=1",
                "cluster=hpcdet-dev") in slurm.writes()
        assert submit(api, tmp_path, options=[["account", "mine"]])["account"] == "mine"
        assert "--account=mine" in fake.submitted[1].argv
    finally:
        app.config["HPCDET_ENGINE"].dispose()


def test_the_poll_moves_tasks_along_in_the_one_poll(task_app: Flask, api: FlaskClient,
                                                    fake: FakeSchedulerBackend,
                                                    cycle: Reconciler, tmp_path: Path) -> None:
    create(api)  # an experiment whose trial's job shares the poll
    ids = [submit(api, tmp_path)["id"] for _ in range(3)]
    cycle.cycle()  # submits the trial's job
    fake.poll_calls.clear()
    fake.phases.update({"101": JobPhase.RUNNING, "102": JobPhase.COMPLETED,
                        "103": JobPhase.FAILED})
    cycle.cycle()
    assert len(fake.poll_calls) == 1 and set(fake.poll_calls[0]) == {"101", "102", "103",
                                                                      "104"}
    states = {i: api.get(f"/api/v1/tasks/{i}").json["task"] for i in ids}
    assert [states[i]["state"] for i in ids] == ["RUNNING", "COMPLETED", "ERROR"]
    assert states[1]["started_at"] and states[1]["nodes"] == "node1"
    assert (states[2]["exit_code"], states[3]["exit_code"]) == (0, 1)
    assert states[3]["history"][-1]["cause"] == "job 103 ended FAILED, exit code 1"
    fake.phases["101"] = JobPhase.PENDING  # requeued
    cycle.cycle()
    assert api.get("/api/v1/tasks/1").json["task"]["state"] == "QUEUED"
    cycle.cycle()
    assert "102" not in fake.poll_calls[-1]  # ended tasks are not polled again


def test_kill_cancels_the_job_once(api: FlaskClient, fake: FakeSchedulerBackend,
                                   cycle: Reconciler, tmp_path: Path) -> None:
    task = submit(api, tmp_path)
    fake.cancel_ends_jobs = False
    killed = api.post(f"/api/v1/tasks/{task['id']}/kill", headers=USER)
    assert killed.status_code == 200 and killed.json["task"]["state"] == "STOPPING_KILLED"
    assert api.post(f"/api/v1/tasks/{task['id']}/kill").status_code == 200  # no-op
    cycle.cycle()
    cycle.cycle()
    assert fake.cancelled == ["101"]
    fake.phases["101"] = JobPhase.CANCELLED
    cycle.cycle()
    detail = api.get(f"/api/v1/tasks/{task['id']}").json["task"]
    assert [h["to"] for h in detail["history"]] == ["QUEUED", "STOPPING_KILLED", "CANCELED"]
    again = api.post(f"/api/v1/tasks/{task['id']}/kill")
    assert again.status_code == 409
    assert again.json["error"]["message"] == "task 1 already ended CANCELED"
    assert api.post("/api/v1/tasks/99/kill").status_code == 404


def test_logs_read_the_masters_copy(api: FlaskClient, tmp_path: Path) -> None:
    task = submit(api, tmp_path)
    text = "first\nsecond \u00e9t\u00e9\nthird\n"
    Path(task["job_dir"], "output.log").write_text(text, encoding="utf-8")
    url = f"/api/v1/tasks/{task['id']}/logs"
    whole = api.get(url).json
    assert (whole["text"], whole["size"], whole["next_offset"]) == (text, len(text.encode()),
                                                                    len(text.encode()))
    cut = api.get(url, query_string={"offset": 6, "limit": 9}).json
    assert cut["text"] == "second \u00e9" and cut["next_offset"] == 6 + 9  # é is 2 bytes
    inside = api.get(url, query_string={"offset": 6, "limit": 8}).json  # half of é
    assert inside["text"] == "second " and inside["next_offset"] == 13
    assert api.get(url, query_string={"tail": 2}).json["text"] == "second \u00e9t\u00e9\nthird\n"
    empty = api.get(url, query_string={"stream": "error"}).json
    assert (empty["text"], empty["size"]) == ("", 0)
    assert api.get(url, query_string={"stream": "nope"}).status_code == 400
    assert api.get("/api/v1/tasks/99/logs").status_code == 404


def _entry(job_id: str, state: str, partition: str = "debug") -> dict[str, Any]:
    return QueueEntry(job_id=job_id, partition=partition, name="x", user="root", state=state,
                      reason=None, priority=100, nice=0, qos=None, account=None,
                      submit_time=None, tasks=1, cpus=1, nodes=1).to_dict()


def test_queue_position_comes_from_the_queue_snapshot(task_app: Flask, api: FlaskClient,
                                                      tmp_path: Path) -> None:
    task = submit(api, tmp_path)
    store(task_app, QUEUE, {"jobs": [_entry("90", "RUNNING"), _entry("91", "PENDING"),
                                     _entry("95", "PENDING", "batch"),
                                     _entry(task["job_id"], "PENDING")]})
    assert api.get(f"/api/v1/tasks/{task['id']}").json["task"]["queue_position"] == 3
    listed = api.get("/api/v1/tasks", query_string={"active": "true"}).json
    assert [t["queue_position"] for t in listed["tasks"]] == [3]


def test_list_filters(api: FlaskClient, tmp_path: Path) -> None:
    submit(api, tmp_path)
    api.post("/api/v1/tasks", json=body(tmp_path), headers={"X-Hpcdet-User": "bob"})
    assert [t["owner"] for t in api.get("/api/v1/tasks").json["tasks"]] == ["bob", "alice"]
    assert api.get("/api/v1/tasks", query_string={"owner": "bob"}).json["total"] == 1
    assert api.get("/api/v1/tasks", query_string={"state": "running"}).json["total"] == 0


def test_the_task_lifecycle_table() -> None:
    path = [None, State.QUEUED, State.RUNNING, State.QUEUED, State.RUNNING,
            State.STOPPING_KILLED, State.CANCELED]
    for current, new in zip(path, path[1:], strict=False):
        assert new is not None and is_allowed(EntityKind.TASK, current, new)
    assert is_allowed(EntityKind.TASK, State.QUEUED, State.COMPLETED)
    assert not is_allowed(EntityKind.TASK, None, State.RUNNING)
    assert not is_allowed(EntityKind.TASK, State.RUNNING, State.PAUSED)
    assert not is_allowed(EntityKind.TASK, State.COMPLETED, State.RUNNING)
