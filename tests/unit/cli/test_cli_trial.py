"""``det trial`` and ``det master`` against a fake master."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import Result

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)


def _trial_answer(state: str = "RUNNING") -> dict[str, Any]:
    return {
        "trial": {
            "id": 7, "experiment_id": 5, "state": state, "hparams": {"lr": 0.1, "layers": 2},
            "seed": 1234, "restarts": 1, "steps_completed": 500, "best_validation": 0.12,
            "latest_checkpoint": "c-2", "job_ids": ["41", "42"], "nodes": ["node01"],
            "created_at": "2024-05-01T12:00:00+00:00", "ended_at": None,
            "history": [
                {"from": None, "to": "QUEUED", "at": "2024-05-01T12:00:00+00:00",
                 "cause": "created", "actor": "master"},
                {"from": "QUEUED", "to": "RUNNING", "at": "2024-05-01T12:01:00+00:00",
                 "cause": "job 41 started", "actor": "reconciler"}],
            "jobs": [{"job_id": "41", "run_id": 1, "native_state": "NODE_FAIL",
                      "reason": None, "exit_code": None, "nodes": ["node02"],
                      "submitted_at": "2024-05-01T12:00:00+00:00"},
                     {"job_id": "42", "run_id": 2, "native_state": "RUNNING",
                      "reason": None, "exit_code": None, "nodes": ["node01"],
                      "submitted_at": "2024-05-01T12:05:00+00:00"}],
        },
        "checkpoints": [{"uuid": "c-2", "trial_id": 7, "steps_completed": 500, "metadata": {},
                         "resources": {"model.pt": 10}, "validation_metrics": {"loss": 0.12},
                         "state": "COMPLETED", "reported_at": "2024-05-01T12:10:00+00:00"}],
    }


VALIDATIONS = {"metrics": [
    {"group": "validation", "steps_completed": 250, "metrics": {"loss": 0.5},
     "reported_at": "2024-05-01T12:05:00+00:00"},
    {"group": "validation", "steps_completed": 500, "metrics": {"loss": 0.12, "acc": 0.97},
     "reported_at": "2024-05-01T12:10:00+00:00"}]}


def test_describe_shows_every_section(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7", _trial_answer())
    fake_master.add("GET", "/trials/7/metrics", VALIDATIONS)
    result = det("trial", "describe", "7")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("Trial 7 of experiment 5: RUNNING\n")
    assert "  hyperparameters:   lr=0.1, layers=2\n" in out
    assert "  Slurm jobs:        41, 42\n" in out
    assert "Latest validation metrics (step 500, " in out
    assert "  acc:  0.97\n  loss: 0.12\n" in out
    assert "Checkpoints:\nUUID" in out and "c-2" in out
    assert "Slurm jobs:\nJob ID" in out and "NODE_FAIL" in out
    assert "State history:\nAt" in out and "job 41 started" in out
    assert fake_master.sent("GET", "/trials/7/metrics")[0].url.params["group"] == "validation"


def test_describe_of_a_new_trial(det: Det, fake_master: FakeMaster) -> None:
    answer = _trial_answer("QUEUED")
    answer["trial"].update(jobs=[], history=[])
    answer["checkpoints"] = []
    fake_master.add("GET", "/trials/7", answer)
    fake_master.add("GET", "/trials/7/metrics", {"metrics": []})
    out = det("t", "describe", "7").stdout
    for title in ("Latest validation metrics", "Checkpoints", "Slurm jobs", "State history"):
        assert f"{title}:\n  none" in out


def test_describe_json_is_the_raw_answer(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7", _trial_answer())
    result = det("trial", "describe", "7", "--json")
    assert json.loads(result.stdout) == _trial_answer()
    assert fake_master.sent("GET", "/trials/7/metrics") == []


def test_list(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/experiments/5/trials", {"trials": [_trial_answer()["trial"]]})
    lines = det("trial", "list", "5").stdout.splitlines()
    assert lines[0].split()[:3] == ["ID", "State", "Hyperparameters"]
    assert lines[2].startswith("7   RUNNING  layers=2 lr=0.1")


def _logs(ids: list[int], state: str = "RUNNING", rank: int | None = None) -> dict[str, Any]:
    return {"logs": [{"id": i, "rank": rank, "stream": "stdout", "line": f"line {i}\n",
                      "job_id": "42"} for i in ids],
            "last_id": max([0, *ids]), "trial_state": state}


def test_logs_reads_every_page(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7/logs", _logs([1, 2]), _logs([3]), _logs([]))
    result = det("trial", "logs", "7")
    assert result.stdout == "line 1\nline 2\nline 3\n"
    afters = [r.url.params["after"] for r in fake_master.sent("GET", "/trials/7/logs")]
    assert afters == ["0", "2", "3"]


def test_logs_head(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7/logs", _logs([1, 2]), _logs([3]))
    result = det("trial", "logs", "7", "--head", "3")
    assert result.stdout == "line 1\nline 2\nline 3\n"
    limits = [r.url.params["limit"] for r in fake_master.sent("GET", "/trials/7/logs")]
    assert limits == ["3", "1"]


def test_logs_follow_until_terminal_and_quiet(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7/logs", _logs([8, 9], rank=1), _logs([]),
                    _logs([10], rank=0), _logs([], "COMPLETED"))
    result = det("trial", "logs", "7", "-f", "--tail", "2")
    assert result.exit_code == 0, result.output
    assert result.stdout == "[rank 1] line 8\n[rank 1] line 9\n[rank 0] line 10\n"
    sent = [dict(r.url.params) for r in fake_master.sent("GET", "/trials/7/logs")]
    assert sent == [{"after": "0", "tail": "2"}, {"after": "9"}, {"after": "9"},
                    {"after": "10"}]


def test_logs_follow_of_an_ended_trial_stops(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7/logs", _logs([1], "ERROR"), _logs([], "ERROR"))
    result = det("trial", "logs", "7", "--follow")
    assert (result.exit_code, result.stdout) == (0, "line 1\n")


@pytest.mark.parametrize("flags", [["--head", "1", "-f"], ["--head", "1", "--tail", "1"]])
def test_logs_flag_conflicts(det: Det, flags: list[str]) -> None:
    assert det("trial", "logs", "7", *flags).exit_code == 2


def test_master_info(det: Det, fake_master: FakeMaster) -> None:
    answer = {"version": "0.1.0", "cluster_name": "dev", "database": "sqlite",
              "resource_manager": "slurm", "url": "http://login:8080"}
    fake_master.add("GET", "/master", answer)
    result = det("master", "info")
    assert result.stdout.splitlines() == [
        "Master at http://localhost:8080",
        "  cluster_name:     dev",
        "  database:         sqlite",
        "  resource_manager: slurm",
        "  url:              http://login:8080",
        "  version:          0.1.0",
    ]
    assert json.loads(det("master", "info", "--json").stdout) == answer
