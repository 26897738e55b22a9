"""``det tensorboard`` against a fake master: what is sent, what is printed."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import Result

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)
pytestmark = pytest.mark.interactive


def board(state: str = "QUEUED", **extra: Any) -> dict[str, Any]:
    return {"id": 9, "job_id": "900", "state": state, "name": "TensorBoard (experiment 3)",
            "kind": "tensorboard", "owner": "alice", "pool": "batch",
            "config": {"experiment_ids": [3], "trial_ids": [5, 6]}, **extra}


def logs(text: str, state: str = "RUNNING") -> dict[str, Any]:
    return {"text": text, "next_offset": len(text), "size": len(text), "state": state}


def test_start_sends_the_ids_and_config_and_waits_until_the_proxy_answers(
        det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("POST", "/tensorboards", {"task": board(), "warnings": []}, status=201)
    fake_master.add("GET", "/tasks/9", {"task": board()}, {"task": board("RUNNING")})
    fake_master.add("GET", "/proxy/9/", {"error": {}}, status=503)
    fake_master.add("GET", "/proxy/9/", {"error": {}}, status=503)
    fake_master.add("GET", "/proxy/9/", {})
    result = det("tensorboard", "start", "3", "4", "-t", "5,6", "-t", "7", "--config",
                 "resources.resource_pool=debug", "--no-browser")
    assert result.exit_code == 0, result.output
    assert result.stdout == "http://localhost:8080/proxy/9/\n"
    [request] = fake_master.sent("POST", "/tensorboards")
    assert json.loads(request.content) == {
        "experiment_ids": [3, 4], "trial_ids": [5, 6, 7],
        "config": {"resources": {"resource_pool": "debug"}}}
    assert [r.url.path for r in fake_master.requests].count("/proxy/9/") == 3


def test_start_reports_a_tensorboard_that_ended(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("POST", "/tensorboards", {"task": board()}, status=201)
    fake_master.add("GET", "/proxy/9/", {"error": {}}, status=503)
    fake_master.add("GET", "/tasks/9", {"task": board("ERROR")})
    fake_master.add("GET", "/tasks/9/logs", logs("No module named tensorboard\n", "ERROR"))
    result = det("tensorboard", "start", "3", "--no-browser")
    assert result.exit_code == 1
    assert "ended ERROR before it answered" in result.stderr
    assert "No module named tensorboard" in result.stderr and "Traceback" not in result.output


def test_start_needs_ids_and_detach_prints_the_id(det: Det, fake_master: FakeMaster) -> None:
    assert "at least one experiment" in det("tensorboard", "start").stderr
    assert "give ids" in det("tensorboard", "start", "x").stderr
    fake_master.add("POST", "/tensorboards", {"task": board()}, status=201)
    result = det("tensorboard", "start", "-d", "3")
    assert (result.exit_code, result.stdout) == (0, "9\n")


def test_list_open_kill(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/tasks", {"tasks": [board("RUNNING")], "total": 1})
    listed = det("tensorboard", "list")
    assert listed.exit_code == 0
    assert "Experiment IDs" in listed.stdout and "5, 6" in listed.stdout
    [request] = fake_master.sent("GET", "/tasks")
    assert request.url.params["kind"] == "tensorboard" and request.url.params["mine"] == "true"

    fake_master.add("GET", "/tasks/9", {"task": board("RUNNING")})
    opened = det("tensorboard", "open", "9", "--no-browser")
    assert opened.stdout == "http://localhost:8080/proxy/9/\n"
    fake_master.add("POST", "/tasks/9/kill", {"task": board("STOPPING_KILLED")})
    assert "STOPPING_KILLED" in det("tensorboard", "kill", "9").stdout


def test_a_task_of_another_kind_is_refused(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/tasks/4", {"task": board(kind="command", id=4)})
    result = det("tensorboard", "kill", "4")
    assert result.exit_code == 1 and "not a TensorBoard" in result.stderr
    assert fake_master.sent("POST", "/tasks/4/kill") == []
