"""det qsub's tasks on a PBS master: rendered into a PBS wrapper, submitted with qsub.

The PBS backend is the real one; only its runner is a fake that records every argv and
answers qsub with what OpenPBS 23.06 printed for a real submission. The real server runs
the same path in tests/integration/test_it_qsub.py. A master refuses a task written for
another scheduler, naming its resource manager.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient

from hpcdet.dispatcher import get_backend
from hpcdet.master.app import create_app
from hpcdet.master.settings.core import MasterSettings

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "pbs_task.pbs"
USER = {"X-Hpcdet-User": "alice"}
SCRIPT = "#!/bin/bash\n#PBS -l walltime=00:01:00\necho hello\n"
# What qsub printed for a job of the dev OpenPBS server (scripts/dev-pbs).
QSUB_ANSWER = "1042.pbs-dev\n"


class FakeRecordedRunner:
    """A fake runner: records each argv, answers qsub with recorded output."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], *, timeout: float = 60) -> str:
        self.calls.append(tuple(argv))
        assert argv[0].endswith("qsub"), argv
        return QSUB_ANSWER


@pytest.fixture
def runner() -> FakeRecordedRunner:
    return FakeRecordedRunner()


@pytest.fixture
def pbs_app(settings: MasterSettings, runner: FakeRecordedRunner) -> Iterator[Flask]:
    pytest.importorskip("hpcdet.dispatcher.pbs.backend", reason="PbsBackend not merged yet")
    pbs = replace(settings, resource_manager=replace(settings.resource_manager, type="pbs"))
    app = create_app(pbs, backend=get_backend("pbs", runner=runner))
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


def body(cwd: Path, **extra: Any) -> dict[str, Any]:
    return {"scheduler": "pbs", "script": SCRIPT, "script_name": "job.sh", "args": [],
            "options": [["N", "mine"], ["l", "walltime=00:02:00"], ["h", None],
                        ["j", "oe"], ["o", "out.log"], ["m", "n"]],
            "cwd": str(cwd), "environment": {"PBS_O_WORKDIR": str(cwd), "GREETING": "hi"},
            **extra}


def test_a_qsub_task_is_rendered_into_a_pbs_wrapper_and_submitted_once(
        pbs_app: Flask, runner: FakeRecordedRunner, settings: MasterSettings,
        tmp_path: Path) -> None:
    api: FlaskClient = pbs_app.test_client()
    answer = api.post("/api/v1/tasks", json=body(tmp_path), headers=USER)
    assert answer.status_code == 201, answer.json
    task = answer.json["task"]
    assert (task["id"], task["job_id"], task["name"], task["state"]) == (
        1, "1042.pbs-dev", "mine", "QUEUED")
    assert task["log_streams"] == ["output"]  # -j oe: one stream
    job_dir = Path(settings.resource_manager.job_storage_root) / "tasks" / "task-1"
    wrapper = job_dir / "hpcdet-task.sh"
    assert runner.calls == [(
        "qsub", "-N", "mine", "-v", "HPCDET_JOB_TAG=hpcdet:unit:task-1",
        "-o", f"{job_dir}/output.log", "-k", "oed", "-j", "oe",
        "-l", "walltime=00:02:00", "-h", "-m", "n", str(wrapper))]
    text = wrapper.read_text().replace(str(tmp_path), "/TMP")
    if os.environ.get("HPCDET_REGEN_GOLDEN") == "1":
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()
    assert (job_dir / "script").read_text() == SCRIPT
    assert "export GREETING=hi" in (job_dir / "environment.sh").read_text()


def test_a_separate_error_stream_and_a_test_only_preview(
        pbs_app: Flask, runner: FakeRecordedRunner, tmp_path: Path) -> None:
    api = pbs_app.test_client()
    options = [["N", "two"], ["e", "err.log"]]
    preview = api.post("/api/v1/tasks", json=body(tmp_path, options=options, test_only=True),
                       headers=USER)
    assert preview.status_code == 200, preview.json
    assert preview.json["argv"][-1].endswith("/tasks/task-NEW/hpcdet-task.sh")
    assert "HPCDET_JOB_TAG=hpcdet:unit:task-NEW" in preview.json["argv"]
    assert runner.calls == []  # nothing submitted
    task = api.post("/api/v1/tasks", json=body(tmp_path, options=options),
                    headers=USER).json["task"]
    assert task["log_streams"] == ["output", "error"] and task["error"] == "err.log"
    argv = runner.calls[0]
    assert argv[argv.index("-j") + 1] == "n" and argv[argv.index("-e") + 1].endswith(
        "/task-1/error.log")


def test_a_pbs_master_refuses_an_sbatch_task_and_qsub_arguments(
        pbs_app: Flask, runner: FakeRecordedRunner, tmp_path: Path) -> None:
    api = pbs_app.test_client()
    sbatch = api.post("/api/v1/tasks", json={
        "script": "#!/bin/sh\necho\n", "options": [["time", "5"]], "cwd": str(tmp_path)},
        headers=USER)
    assert sbatch.status_code == 400
    assert sbatch.json["error"]["code"] == "wrong_scheduler"
    assert sbatch.json["error"]["message"] == (
        "this master's resource manager is pbs, so it cannot run a det sbatch task (written "
        "for slurm); use det qsub")
    args = api.post("/api/v1/tasks", json=body(tmp_path, args=["x"]), headers=USER)
    assert args.status_code == 400
    assert "qsub passes no arguments to a batch script" in args.json["error"]["message"]
    refused = api.post("/api/v1/tasks", json=body(tmp_path, options=[["J", "1-4"]]),
                       headers=USER)
    assert refused.status_code == 400 and "job arrays are not supported" in refused.text
    assert runner.calls == []


def test_a_slurm_master_refuses_a_qsub_task(settings: MasterSettings,
                                            fake: FakeSchedulerBackend,
                                            tmp_path: Path) -> None:
    app = create_app(settings, backend=fake)
    try:
        answer = app.test_client().post("/api/v1/tasks", json=body(tmp_path), headers=USER)
    finally:
        app.config["HPCDET_ENGINE"].dispose()
    assert answer.status_code == 400
    assert answer.json["error"]["message"].startswith(
        "this master's resource manager is slurm, so it cannot run a det qsub task")
    assert fake.submitted == []
