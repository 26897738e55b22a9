"""``GET /trials/<id>/logs`` filters, and what the describe routes add about logs and jobs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from log_seed import add_experiment, add_job, add_lines, add_trial, sessions
from sqlalchemy import event

from hpcdet.master.models import TrialLog


@pytest.fixture
def trial_id(app: Flask) -> int:
    """A trial with ten lines: ranks 0-3 on node1/node2, a batch line, a master line."""
    rows = [(0, "node1", "stdout"), (1, "node1", "stdout"), (2, "node2", "stdout"),
            (3, "node2", "stderr"), (None, "node1", "stdout"), (None, None, "master"),
            (0, "node1", "stderr"), (2, "node2", "stdout"), (3, "node2", "stdout"),
            (1, "node1", "stdout")]
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session))
        session.add_all(TrialLog(trial_id=trial.id, job_id="101", rank=rank, node=node,
                                 stream=stream, line=f"line {i}")
                        for i, (rank, node, stream) in enumerate(rows))
        return trial.id


def logs(client: FlaskClient, trial_id: int, **params: Any) -> list[str]:
    response = client.get(f"/api/v1/trials/{trial_id}/logs", query_string=params)
    assert response.status_code == 200, response.get_json()
    return [entry["line"] for entry in response.get_json()["logs"]]


def test_each_line_has_its_node(client: FlaskClient, trial_id: int) -> None:
    answer = client.get(f"/api/v1/trials/{trial_id}/logs", query_string={"tail": 1}).get_json()
    (line,) = answer["logs"]
    assert {k: line[k] for k in ("rank", "node", "stream", "line", "job_id")} == {
        "rank": 1, "node": "node1", "stream": "stdout", "line": "line 9", "job_id": "101"}
    assert set(line) == {"id", "rank", "node", "stream", "line", "job_id", "at"}
    assert answer["last_id"] == line["id"] and answer["trial_state"] == "RUNNING"


@pytest.mark.parametrize(("params", "expected"), [
    ({"node": "node2"}, [2, 3, 7, 8]),
    ({"rank": 0}, [0, 6]),
    ({"stream": "stderr"}, [3, 6]),
    ({"stream": "master"}, [5]),
    ({"node": "node1", "stream": "stdout"}, [0, 1, 4, 9]),
    ({"node": "node1", "rank": 2}, []),
    ({"node": "node9"}, []),
    ({"head": 3}, [0, 1, 2]),
    ({"head": 3, "node": "node2"}, [2, 3, 7]),
    ({"head": 2, "limit": 5}, [0, 1]),  # head decides how many
    ({"tail": 2, "node": "node2"}, [7, 8]),
    ({"rank": 3, "tail": 5}, [3, 8]),
    ({"rank": ""}, list(range(10))),  # empty means no filter
])
def test_filters(client: FlaskClient, trial_id: int, params: dict[str, Any],
                 expected: list[int]) -> None:
    assert logs(client, trial_id, **params) == [f"line {i}" for i in expected]


@pytest.mark.parametrize(("params", "expected"), [
    ({"timestamp_after": "2024-05-01T12:00:01Z"}, [2, 3]),
    ({"timestamp_before": "2024-05-01T12:00:02"}, [0, 1]),  # no offset: UTC
    ({"timestamp_after": "2024-05-01T14:00:00+02:00",
      "timestamp_before": "2024-05-01T12:00:03Z"}, [1, 2]),
    ({"timestamp_after": "2024-05-01T12:00:00Z", "stream": "stderr"}, [3]),
])
def test_timestamp_filters(app: Flask, client: FlaskClient, params: dict[str, Any],
                           expected: list[int]) -> None:
    start = dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone.utc)
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session))
        session.add_all(TrialLog(trial_id=trial.id, job_id="101", stream=stream,
                                 line=f"line {i}", at=start + dt.timedelta(seconds=i))
                        for i, stream in enumerate(["stdout", "stdout", "stdout", "stderr"]))
        trial_id = trial.id
    assert logs(client, trial_id, **params) == [f"line {i}" for i in expected]


def test_head_and_follow_pages_start_after_the_cursor(client: FlaskClient,
                                                      trial_id: int) -> None:
    first = client.get(f"/api/v1/trials/{trial_id}/logs",
                       query_string={"node": "node2", "head": 2}).get_json()
    assert [e["line"] for e in first["logs"]] == ["line 2", "line 3"]
    assert logs(client, trial_id, node="node2", after=first["last_id"]) == ["line 7", "line 8"]


@pytest.mark.parametrize(("params", "message"), [
    ({"stream": "stdin"}, "query parameter stream: must be one of stdout, stderr, master"),
    ({"rank": "x"}, "query parameter rank: not an integer"),
    ({"rank": "-1"}, "query parameter rank: must be 0..1000000000"),
    ({"head": "-1"}, "query parameter head: must be 0..100000"),
    ({"head": "two"}, "query parameter head: not an integer"),
    ({"tail": "100001"}, "query parameter tail: must be 0..100000"),
    ({"head": 1, "tail": 1}, "query parameters head and tail: give one of them"),
    ({"node": "n" * 129}, "query parameter node: at most 128 printable characters"),
    ({"node": "node\x01"}, "query parameter node: at most 128 printable characters"),
    ({"timestamp_before": "yesterday"}, "query parameter timestamp_before: not an ISO 8601 "
                                        "time (e.g. 2024-05-01T12:00:00Z)"),
    ({"timestamp_after": "2024-13-01"}, "query parameter timestamp_after: not an ISO 8601 "
                                        "time (e.g. 2024-05-01T12:00:00Z)"),
])
def test_bad_values_are_400_with_the_common_shape(client: FlaskClient, trial_id: int,
                                                 params: dict[str, Any], message: str) -> None:
    response = client.get(f"/api/v1/trials/{trial_id}/logs", query_string=params)
    assert response.status_code == 400
    assert response.get_json() == {"error": {"code": "bad_request", "message": message,
                                             "details": []}, "status": 400}


def test_logs_of_an_unknown_trial_are_404(client: FlaskClient) -> None:
    response = client.get("/api/v1/trials/999/logs", query_string={"node": "node1"})
    assert (response.status_code, response.get_json()["error"]["code"]) == (404, "not_found")


@pytest.fixture
def log_queries(app: Flask) -> Iterator[list[str]]:
    """The SQL statements that read ``trial_logs``, as they run."""
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "trial_logs" in statement and statement.lstrip().upper().startswith("SELECT"):
            statements.append(statement)

    engine = app.config["HPCDET_ENGINE"]
    event.listen(engine, "before_cursor_execute", record)
    yield statements
    event.remove(engine, "before_cursor_execute", record)


def _experiment_with_failures(app: Flask, failed: int) -> int:
    """An experiment with ``failed`` ERROR trials of 12 lines each, a RUNNING trial with
    lines, and a QUEUED trial whose job waits for ``Priority``."""
    with sessions(app).begin() as session:
        exp = add_experiment(session)
        for _ in range(failed):
            trial = add_trial(session, exp, state="ERROR")
            add_job(session, trial, active=False, phase="FAILED", exit_code=1)
            add_lines(session, trial, 12, rank=0, node="node1")
        add_lines(session, add_trial(session, exp, state="RUNNING"), 3)
        queued = add_trial(session, exp, state="QUEUED")
        add_job(session, queued, job_id="120", nodes=None, reason="Priority", requeues=2)
        return exp.id


def test_error_trials_carry_their_last_lines_read_with_one_query(
        app: Flask, client: FlaskClient, log_queries: list[str]) -> None:
    exp_id = _experiment_with_failures(app, failed=6)
    answer = client.get(f"/api/v1/experiments/{exp_id}/trials").get_json()
    assert len(log_queries) == 1
    trials = answer["trials"]
    for trial in trials[:6]:
        assert [line["line"] for line in trial["last_log_lines"]] == [
            f"line {i}" for i in range(2, 12)]
        assert trial["last_log_lines"][0]["node"] == "node1"
    assert all("last_log_lines" not in trial for trial in trials[6:])


def test_without_error_trials_no_log_query_runs(app: Flask, client: FlaskClient,
                                                log_queries: list[str]) -> None:
    exp_id = _experiment_with_failures(app, failed=0)
    assert client.get(f"/api/v1/experiments/{exp_id}/trials").status_code == 200
    assert log_queries == []


def test_a_queued_trial_says_why_it_waits(app: Flask, client: FlaskClient) -> None:
    exp_id = _experiment_with_failures(app, failed=1)
    trials = client.get(f"/api/v1/experiments/{exp_id}/trials").get_json()["trials"]
    assert [t["pending_reason"] for t in trials] == [None, None, "Priority"]
    listed = client.get(f"/api/v1/experiments/{exp_id}/trials").get_json()["trials"]
    assert listed[2]["pending_reason"] == "Priority"


def test_trials_show_restarts_jobs_and_log_policy_state(app: Flask,
                                                        client: FlaskClient) -> None:
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session), state="RUNNING")
        trial.interruptions, trial.cancel_retries = 2, True
        trial.excluded_nodes = ["node3"]
        add_job(session, trial, job_id="101", active=False, requeues=1)
        add_job(session, trial, job_id="102", requeues=0, reason="None")
        add_job(session, trial, job_id=None)  # the intent to submit, no id yet
        trial_id = trial.id
    body = client.get(f"/api/v1/trials/{trial_id}").get_json()["trial"]
    assert (body["interruptions"], body["cancel_retries"], body["excluded_nodes"]) == (
        2, True, ["node3"])
    assert body["slurm_jobs"] == [{"job_id": "101", "run_id": 1, "requeues": 1},
                                  {"job_id": "102", "run_id": 2, "requeues": 0}]
    assert [j["requeues"] for j in body["jobs"]] == [1, 0, 0]
    assert body["job_ids"] == ["101", "102"] and body["pending_reason"] is None
