"""Commands (det cmd run) on the master: POST /commands, then the task paths they share.

The scheduler is scripted (fake_scheduler.py); runs on SQLite and, with
HPCDET_TEST_DATABASE_URL, PostgreSQL (the ``db_url`` fixture). The dev cluster runs a real
command in tests/integration/test_it_commands.py.
"""

from __future__ import annotations

import base64
import io
import os
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient

from hpcdet.dispatcher import JobPhase
from hpcdet.master.app import create_app
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory, session_scope
from hpcdet.master.queue.pools import Pool
from hpcdet.master.queue.snapshots import POOLS, store_snapshot
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.settings.core import MasterSettings

ALICE = {"X-Hpcdet-User": "alice"}
BOB = {"X-Hpcdet-User": "bob"}


@pytest.fixture
def cmd_app(settings: MasterSettings, fake: FakeSchedulerBackend) -> Iterator[Flask]:
    app = create_app(settings, backend=fake)
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def api(cmd_app: Flask) -> FlaskClient:
    return cmd_app.test_client()


@pytest.fixture
def cycle(cmd_app: Flask, fake: FakeSchedulerBackend) -> Reconciler:
    return make_reconciler(cmd_app.config["HPCDET_SETTINGS"],
                           make_session_factory(cmd_app.config["HPCDET_ENGINE"]), fake)


def run(api: FlaskClient, entrypoint: list[str], headers: dict[str, str] = ALICE,
        **extra: Any) -> Any:
    return api.post("/api/v1/commands", json={"entrypoint": entrypoint, **extra},
                    headers=headers)


def started(api: FlaskClient, entrypoint: list[str], **extra: Any) -> dict[str, Any]:
    answer = run(api, entrypoint, **extra)
    assert answer.status_code == 201, answer.json
    task: dict[str, Any] = answer.json["task"]
    return task


def context_b64(files: dict[str, str]) -> str:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buffer.getvalue()).decode()


def test_a_command_is_a_task_whose_script_the_master_writes(
        api: FlaskClient, fake: FakeSchedulerBackend, tmp_path: Path) -> None:
    task = started(api, ["python3", "-c", "print('hi there'); raise SystemExit(3)"],
                   config={"description": "my run",
                           "environment": {"environment_variables": ["GREETING=hi"]}})
    assert (task["kind"], task["name"], task["state"], task["job_id"]) == (
        "command", "my run", "QUEUED", "101")
    assert task["config"]["entrypoint"][0] == "python3"
    assert task["config"]["resources"]["slots"] == 1
    job_dir = task["job_dir"]
    assert task["workdir"] == job_dir  # the job starts in its own job directory
    [submission] = fake.submitted
    assert "--job-name=my run" in submission.argv and f"--chdir={job_dir}" in submission.argv
    assert "--nodes=1" in submission.argv and "--ntasks-per-node=1" in submission.argv
    assert not any(word.startswith("--error") for word in submission.argv)
    assert task["output"] == "none" and task["log_streams"] == ["output"]
    assert "-- /dev/null)" in submission.script  # no second copy of the output beside the master's
    script = Path(job_dir, "script")
    assert os.access(script, os.X_OK)
    assert "exec python3 -c 'print('\"'\"'hi there'\"'\"'); raise SystemExit(3)'" in \
        script.read_text()
    environment = Path(job_dir, "environment.sh").read_text()
    assert "export GREETING=hi" in environment and "export DET_TASK_TYPE=COMMAND" in environment


def test_the_generated_script_runs_the_command_in_its_context(
        api: FlaskClient, tmp_path: Path) -> None:
    context = context_b64({"data.txt": "from the context\n"})
    task = started(api, ["cat data.txt; pwd"], context=context)
    job_dir = Path(task["job_dir"])
    assert (job_dir / "context" / "data.txt").read_text() == "from the context\n"
    out = subprocess.run([str(job_dir / "script")], capture_output=True, text=True,
                         check=True, cwd="/")
    assert out.stdout == f"from the context\n{job_dir.resolve() / 'context'}\n"


def test_work_dir_is_where_the_command_starts(api: FlaskClient, tmp_path: Path) -> None:
    task = started(api, ["pwd"], config={"work_dir": str(tmp_path)})
    out = subprocess.run([str(Path(task["job_dir"], "script"))], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == str(tmp_path)


POOLS_SNAPSHOT = {"pools": [
    Pool(name="cpu", partition="cpu", default_compute=True, default_aux=True).to_json(),
    Pool(name="gpu", partition="gpu", slot_type="cuda", gpus_per_node=4).to_json(),
]}


def store(app: Flask, data: dict[str, Any]) -> None:
    with session_scope(make_session_factory(app.config["HPCDET_ENGINE"])) as session:
        store_snapshot(session, POOLS, data)


def test_slots_are_the_pools_resources(cmd_app: Flask, api: FlaskClient,
                                       fake: FakeSchedulerBackend) -> None:
    store(cmd_app, POOLS_SNAPSHOT)
    started(api, ["nvidia-smi"], config={"resources": {"resource_pool": "gpu", "slots": 8}})
    started(api, ["hostname"], config={"resources": {"slots": 3}})
    started(api, ["hostname"], config={"resources": {"resource_pool": "gpu", "slots": 0}})
    gpu, cpu, none = (s.argv for s in fake.submitted)
    assert {"--partition=gpu", "--nodes=2", "--ntasks-per-node=4",
            "--gpus-per-node=4"} <= set(gpu)
    assert {"--partition=cpu", "--nodes=1", "--ntasks-per-node=3"} <= set(cpu)
    assert not any(word.startswith("--gpus") for word in cpu + none)


def test_sbatch_args_are_passed_and_checked(api: FlaskClient,
                                            fake: FakeSchedulerBackend) -> None:
    started(api, ["true"], config={"slurm": {"sbatch_args": ["--time=5", "--mem=1G"]}})
    assert {"--time=5", "--mem=1G"} <= set(fake.submitted[0].argv)
    refused = run(api, ["true"], config={"slurm": {"sbatch_args": ["--nodes=4"]}})
    assert refused.status_code == 400
    assert any(line.startswith("<config>.slurm.sbatch_args[0]: ")
               for line in refused.json["error"]["details"]), refused.json


@pytest.mark.parametrize(("config", "detail"), [
    ({"resources": {"slots": -1}}, "<config>.resources.slots: must be an integer"),
    ({"resources": {"slots": "two"}}, "<config>.resources.slots: must be an integer"),
    ({"resources": {"priority": 0}}, "<config>.resources.priority: must be an integer"),
    ({"resources": {"resource_pool": "nope"}}, "unknown resource pool 'nope'"),
    ({"resources": {"slotz": 1}}, "<config>.resources.slotz: unknown key"),
    ({"bogus": 1}, "<config>.bogus: unknown key"),
    ({"environment": {"image": "python:3.11"}}, "<config>.environment.image: commands run"),
    ({"environment": {"environment_variables": ["NOEQUALS"]}},
     "<config>.environment.environment_variables[0]: must be NAME=VALUE"),
    ({"environment": {"environment_variables": ["BAD-NAME=1"]}},
     "<config>.environment.environment_variables: 'BAD-NAME' is not a variable name"),
    ({"work_dir": "relative"}, "<config>.work_dir: must be an absolute path"),
    ({"description": "a\nb"}, "<config>.description: contains a newline"),
    ({"bind_mounts": [{"host_path": "/data", "container_path": "/mnt"}]},
     "<config>.bind_mounts[0].container_path: '/mnt' differs from host_path"),
    ({"slurm": {"sbatch_args": "--time=5"}}, "<config>.slurm.sbatch_args: must be a list"),
    ("not a mapping", "<config>: must be a mapping"),
])
def test_config_errors_name_the_key(cmd_app: Flask, api: FlaskClient,
                                    fake: FakeSchedulerBackend, config: Any,
                                    detail: str) -> None:
    store(cmd_app, POOLS_SNAPSHOT)
    answer = run(api, ["true"], config=config)
    assert answer.status_code == 400, answer.json
    error = answer.json["error"]
    assert any(detail in line for line in [error["message"], *error["details"]]), error
    assert fake.submitted == []


@pytest.mark.parametrize(("entrypoint", "detail"), [
    ([], "<config>.entrypoint: must be a command"),
    ([""], "<config>.entrypoint[0]: the command must not be empty"),
    (["echo", "a\nb"], "<config>.entrypoint[1]: contains a newline"),
    (None, "<config>.entrypoint: must be a command"),
])
def test_a_bad_entrypoint_is_refused(api: FlaskClient, entrypoint: Any, detail: str) -> None:
    answer = run(api, entrypoint)
    assert answer.status_code == 400
    assert detail in " ".join(answer.json["error"]["details"]), answer.json


def test_ignored_keys_warn(api: FlaskClient) -> None:
    answer = run(api, ["true"], config={"idle_timeout": "30m", "pbs": {"pbsbatch_args": []},
                                        "bind_mounts": [{"host_path": "/data",
                                                         "container_path": "/data"}]})
    assert answer.status_code == 201
    assert answer.json["warnings"] == [
        "<config>.idle_timeout: has no effect on a batch scheduler; ignored",
        "<config>.pbs: this master runs slurm; ignored"]


def test_exit_code_list_and_kill(api: FlaskClient, fake: FakeSchedulerBackend,
                                 cycle: Reconciler) -> None:
    first = started(api, ["false"])
    second = started(api, ["sleep", "100"])
    api.post("/api/v1/tasks", json={"wrap": "true", "cwd": "/"}, headers=ALICE)  # det sbatch
    assert run(api, ["true"], headers=BOB).status_code == 201
    fake.phases.update({"101": JobPhase.FAILED, "102": JobPhase.RUNNING})
    cycle.cycle()
    mine = api.get("/api/v1/tasks?kind=command&mine=true", headers=ALICE).json["tasks"]
    assert [(t["id"], t["state"]) for t in mine] == [(second["id"], "RUNNING"),
                                                     (first["id"], "ERROR")]
    assert mine[1]["exit_code"] == 1
    everyone = api.get("/api/v1/tasks?kind=command", headers=ALICE).json
    assert everyone["total"] == 3  # an open master shows everyone's; not the sbatch task
    assert api.post(f"/api/v1/tasks/{second['id']}/kill", headers=ALICE).status_code == 200
    cycle.cycle()
    assert fake.cancelled == ["102"]
    fake.phases["102"] = JobPhase.CANCELLED
    cycle.cycle()
    assert api.get(f"/api/v1/tasks/{second['id']}").json["task"]["state"] == "CANCELED"


def test_test_only_submits_nothing(api: FlaskClient, fake: FakeSchedulerBackend) -> None:
    answer = run(api, ["hostname"], test_only=True)
    assert answer.status_code == 200
    assert answer.json["script"].startswith("#!/bin/bash\n# Generated by hpcdet for a command")
    assert answer.json["argv"][0] == "sbatch" and fake.submitted == []


class RecordingQsub:
    """A fake runner: records each argv, answers qsub as OpenPBS 23.06 did."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Any, *, timeout: float = 60) -> str:
        self.calls.append(tuple(argv))
        return "1042.pbs-dev\n"


def test_a_command_on_a_pbs_master(settings: MasterSettings) -> None:
    from dataclasses import replace

    from hpcdet.dispatcher import get_backend

    runner = RecordingQsub()
    pbs = replace(settings, resource_manager=replace(settings.resource_manager, type="pbs"))
    app = create_app(pbs, backend=get_backend("pbs", runner=runner))
    try:
        answer = run(app.test_client(), ["hostname"], config={
            "resources": {"slots": 2}, "pbs": {"pbsbatch_args": ["-l mem=1gb"]},
            "slurm": {"sbatch_args": ["--time=5"]}})
        assert answer.status_code == 201, answer.json
        assert answer.json["warnings"] == ["<config>.slurm: this master runs pbs; ignored"]
        [argv] = [call for call in runner.calls if call[0].endswith("qsub")]
        words = list(argv)
        for pair in (["-l", "select=1:ncpus=2:mpiprocs=2"], ["-l", "mem=1gb"],
                     ["-j", "oe"]):
            assert any(words[i:i + 2] == pair for i in range(len(words))), (pair, words)
        assert answer.json["task"]["job_id"] == "1042.pbs-dev"
    finally:
        app.config["HPCDET_ENGINE"].dispose()
