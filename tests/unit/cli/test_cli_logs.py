"""``det trial logs`` / ``det experiment logs`` filters and output, and what ``describe``
shows about waiting, restarts, Slurm jobs and failed trials' last lines (fake master)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import Result

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)
AT = "2024-05-01T12:00:00+00:00"


def _line(i: int, rank: int | None, node: str | None, stream: str = "stdout") -> dict[str, Any]:
    return {"id": i, "rank": rank, "node": node, "stream": stream, "line": f"line {i}\n",
            "job_id": "42", "at": AT}


def _page(*lines: dict[str, Any], state: str = "RUNNING") -> dict[str, Any]:
    return {"logs": list(lines), "last_id": max([0, *(line["id"] for line in lines)]),
            "trial_state": state}


MIXED = _page(_line(1, 0, "node1"), _line(2, 3, "node2", "stderr"), _line(3, None, "node1"),
              _line(4, None, None, "master"), _line(5, 1, None))


def test_lines_are_prefixed_with_rank_and_node_where_known(det: Det,
                                                          fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7/logs", MIXED, _page())
    result = det("trial", "logs", "7")
    assert result.exit_code == 0, result.output
    assert result.stdout == ("[rank 0 node1] line 1\n[rank 3 node2] line 2\n[node1] line 3\n"
                             "line 4\n[rank 1] line 5\n")
    assert result.stderr == ""


def test_rank_and_node_are_sent_on_every_request(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7/logs", _page(_line(8, 2, "node2")), _page(),
                    _page(state="COMPLETED"))
    result = det("trial", "logs", "7", "--rank", "2", "--node", "node2", "-f")
    assert (result.exit_code, result.stdout) == (0, "[rank 2 node2] line 8\n")
    sent = [dict(r.url.params) for r in fake_master.sent("GET", "/trials/7/logs")]
    assert sent == [{"after": "0", "rank": "2", "node": "node2"},
                    {"after": "8", "rank": "2", "node": "node2"},
                    {"after": "8", "rank": "2", "node": "node2"}]


def test_json_prints_one_object_per_line(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7/logs", MIXED)
    result = det("trial", "logs", "7", "--tail", "5", "--json")
    objects = [json.loads(text) for text in result.stdout.splitlines()]
    assert objects[1] == {"id": 2, "rank": 3, "node": "node2", "stream": "stderr",
                          "line": "line 2\n", "job_id": "42", "at": AT}
    assert [o["id"] for o in objects] == [1, 2, 3, 4, 5]


def test_head_pages_with_the_filters(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7/logs", _page(_line(1, 0, "n1"), _line(4, 0, "n1")),
                    _page(_line(9, 0, "n1")))
    result = det("trial", "logs", "7", "--head", "3", "--rank", "0")
    assert result.stdout.count("\n") == 3
    sent = [dict(r.url.params) for r in fake_master.sent("GET", "/trials/7/logs")]
    assert sent == [{"after": "0", "limit": "3", "rank": "0"},
                    {"after": "4", "limit": "1", "rank": "0"}]


def test_determined_s_filters_are_sent(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7/logs", _page(_line(8, 2, "node2", "stderr")), _page())
    result = det("trial", "logs", "7", "--rank-id", "2", "--agent-id", "node2",
                 "--stdtype", "stderr", "--timestamp-after", "2024-05-01T12:00:00Z",
                 "--timestamp-before", "2024-05-02T00:00:00+02:00")
    assert (result.exit_code, result.stdout) == (0, "[rank 2 node2] line 8\n")
    assert dict(fake_master.sent("GET", "/trials/7/logs")[0].url.params) == {
        "after": "0", "rank": "2", "node": "node2", "stream": "stderr",
        "timestamp_after": "2024-05-01T12:00:00Z",
        "timestamp_before": "2024-05-02T00:00:00+02:00"}


@pytest.mark.parametrize("args", [["--timestamp-before", "yesterday"],
                                  ["--stdtype", "stdin"]])
def test_bad_filters_are_usage_errors(det: Det, fake_master: FakeMaster,
                                      args: list[str]) -> None:
    result = det("trial", "logs", "7", *args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert not fake_master.requests


@pytest.mark.parametrize("args", [["--rank", "-1"], ["--rank", "x"]])
def test_bad_rank_is_a_usage_error(det: Det, args: list[str]) -> None:
    assert det("trial", "logs", "7", *args).exit_code == 2


def test_experiment_logs_take_the_same_filters(det: Det, fake_master: FakeMaster) -> None:
    # The experiment's first trial, asked for as one trial in id order (the master pages).
    fake_master.add("GET", "/experiments/5/trials", {"trials": [{"id": 7}],
                                                     "pagination": {"total": 2}})
    fake_master.add("GET", "/trials/7/logs", _page(_line(3, 1, "node1")))
    result = det("experiment", "logs", "5", "--node", "node1", "--tail", "1", "--json")
    assert json.loads(result.stdout)["node"] == "node1"
    assert dict(fake_master.sent("GET", "/trials/7/logs")[0].url.params) == {
        "after": "0", "tail": "1", "node": "node1"}


def _trial(tid: int, state: str, **extra: Any) -> dict[str, Any]:
    return {"id": tid, "experiment_id": 5, "state": state, "hparams": {"lr": 0.1},
            "restarts": 0, "steps_completed": 0, "job_ids": ["42"], "created_at": AT,
            **extra}


def test_experiment_describe_says_why_trials_wait_and_how_failed_ones_ended(
        det: Det, fake_master: FakeMaster) -> None:
    tail = [_line(11, 0, "node1"), _line(12, None, None, "master")]
    fake_master.add("GET", "/experiments/5", {
        "experiment": {"id": 5, "name": "mnist", "state": "ACTIVE", "history": []}})
    # The master says the reason in words, by its scheduler (det knows none).
    trials = [_trial(7, "QUEUED", pending_reason="Resources",
                     pending_words="waiting for free resources (Resources)"),
              _trial(8, "ERROR", restarts=5, last_log_lines=tail),
              _trial(9, "ERROR", last_log_lines=[]),
              _trial(10, "RUNNING", pending_reason=None)]
    fake_master.add("GET", "/experiments/5/trials", {"trials": trials,
                                                     "pagination": {"total": 4}})
    result = det("experiment", "describe", "5")
    assert result.exit_code == 0, result.output
    out = result.stdout
    row = next(line for line in out.splitlines() if line.startswith("7 "))
    assert "waiting for free resources (Resources)" in row
    row8 = next(line for line in out.splitlines() if line.startswith("8 ")).split()
    assert row8[:2] == ["8", "ERROR"] and "5" in row8
    assert out.endswith("Last log lines of trial 8:\n  [rank 0 node1] line 11\n  line 12\n\n"
                        "Last log lines of trial 9:\n  none\n")
    assert "Last log lines of trial 10" not in out


def _trial_answer(**extra: Any) -> dict[str, Any]:
    jobs = [{"job_id": "41", "run_id": 1, "requeues": 3, "native_state": "NODE_FAIL",
             "reason": None, "exit_code": 1, "nodes": "node2", "submitted_at": AT},
            {"job_id": "42", "run_id": 2, "requeues": 0, "native_state": "PENDING",
             "reason": "Priority", "exit_code": None, "nodes": None, "submitted_at": AT}]
    return {"trial": _trial(7, "QUEUED", restarts=1, interruptions=2, jobs=jobs, history=[],
                            pending_reason="Priority",
                            pending_words="waiting for higher-priority jobs (Priority)",
                            **extra), "checkpoints": []}


def test_trial_describe_shows_restarts_interruptions_and_requeues(
        det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/trials/7", _trial_answer(cancel_retries=True,
                                                      excluded_nodes=["node2", "node5"]))
    fake_master.add("GET", "/trials/7/metrics", {"metrics": []})
    result = det("trial", "describe", "7")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "  restarts:          1\n  interruptions:     2\n" in out
    assert "  pending:           waiting for higher-priority jobs (Priority)\n" in out
    assert "  log policies:      no more restarts; excluded nodes node2, node5\n" in out
    table = out.split("Slurm jobs:\n", 1)[1].splitlines()
    assert table[0].split() == ["Job", "ID", "Run", "Requeues", "Slurm", "state", "Reason",
                                "Exit", "code", "Nodes", "Submitted"]
    assert table[2].split()[:6] == ["41", "1", "3", "NODE_FAIL", "-", "1"]


def test_trial_describe_leaves_out_what_does_not_apply(det: Det,
                                                       fake_master: FakeMaster) -> None:
    answer = _trial_answer(cancel_retries=False, excluded_nodes=[])
    answer["trial"].update(state="RUNNING", pending_reason=None, pending_words=None)
    fake_master.add("GET", "/trials/7", answer)
    fake_master.add("GET", "/trials/7/metrics", {"metrics": []})
    out = det("trial", "describe", "7").stdout
    assert "pending:" not in out and "log policies:" not in out
