"""``det job list|update|update-batch`` against a fake master."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import Result

from hpcdet.cli.job import parse_batch_item

FakeMasterTransport = Any  # conftest.FakeMasterTransport (conftest is not importable)

ROWS = [
    {"position": 1, "job_id": "102", "type": "EXPERIMENT", "name": "urgent", "experiment_id": 3,
     "trial_id": 7, "task_id": None, "priority": 5, "slurm_priority": 5000, "qos": "high",
     "account": "det-team", "submitted": "2026-11-21T14:00:00+00:00", "slots_acquired": 2,
     "slots_needed": 2, "slot_kind": "gpu", "state": "SCHEDULED", "reason": None,
     "user": "ann", "pool": "batch", "external": False},
    {"position": 2, "job_id": "105", "type": "EXTERNAL", "name": "analysis", "experiment_id": None,
     "trial_id": None, "task_id": None, "priority": None, "slurm_priority": 1000, "qos": "low",
     "account": "physics", "submitted": None, "slots_acquired": 0, "slots_needed": 4,
     "slot_kind": "cpu", "state": "QUEUED", "reason": "Priority", "user": "carol",
     "pool": "batch", "external": True},
    {"position": 3, "job_id": "104", "type": "COMMAND", "name": "my-script", "experiment_id": None,
     "trial_id": None, "task_id": 9, "priority": None, "slurm_priority": 800, "qos": "normal",
     "account": "hpcdet", "submitted": None, "slots_acquired": 0, "slots_needed": 1,
     "slot_kind": "cpu", "state": "QUEUED", "reason": "Resources", "user": "bob",
     "pool": "debug", "external": False},
]
LISTED = {"jobs": ROWS, "taken_at": "2026-11-21T14:00:05+00:00", "resource_pool": None,
          "refresh_seconds": 15.0}
UPDATED = {"result": {"job_id": "101", "ok": True, "position": 2, "error": None,
                      "changes": [{"job_id": "101", "partition": None, "qos": "high",
                                   "nice": 450}],
                      "messages": ["job 101: QOS high, nice 450",
                                   "experiment 3 (urgent): resources.priority is now 5"]}}


def test_list_shows_hpcdet_and_external_jobs_in_order(
        det: Callable[..., Result], fake_master: FakeMasterTransport) -> None:
    fake_master.add("GET", "/jobs", LISTED)
    result = det("job", "list")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["#", "ID", "Type", "Name", "Priority", "Slurm", "prio", "QOS",
                                "Account", "Submitted", "Slots", "State", "Reason", "User",
                                "Pool"]
    assert "urgent (exp 3, trial 7)" in lines[2] and "2/2 GPU" in lines[2]
    assert "SCHEDULED" in lines[2]
    assert "EXTERNAL" in lines[3] and "0/4 CPU" in lines[3] and "carol" in lines[3]
    assert "my-script (task 9)" in lines[4] and "QUEUED" in lines[4]


def test_list_asks_for_one_pool_and_prints_json_for_scripts(
        det: Callable[..., Result], fake_master: FakeMasterTransport) -> None:
    fake_master.add("GET", "/jobs", LISTED)
    result = det("j", "ls", "-p", "debug", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == LISTED
    assert fake_master.sent("GET", "/jobs")[0].url.params["resource_pool"] == "debug"


@pytest.mark.parametrize(("answer", "text"), [
    ({"jobs": [], "taken_at": None, "refresh_seconds": 15.0},
     "No job queue yet: the master reads it from Slurm every 15 s."),
    ({"jobs": [], "taken_at": "2026-11-21T14:00:05+00:00"}, "No pending or running jobs."),
])
def test_list_says_when_there_is_nothing(det: Callable[..., Result],
                                         fake_master: FakeMasterTransport,
                                         answer: dict[str, Any], text: str) -> None:
    fake_master.add("GET", "/jobs", answer)
    assert det("job", "list").output.strip() == text


def test_update_sends_the_options_and_prints_what_changed(
        det: Callable[..., Result], fake_master: FakeMasterTransport) -> None:
    fake_master.add("POST", "/jobs/101/update", UPDATED)
    result = det("job", "update", "101", "-p", "5")
    assert result.exit_code == 0, result.output
    assert json.loads(fake_master.sent("POST", "/jobs/101/update")[0].content) == {"priority": 5}
    assert result.output.splitlines() == [
        "Job 101: updated, now at position 2 in Slurm's queue",
        "  job 101: QOS high, nice 450",
        "  experiment 3 (urgent): resources.priority is now 5"]


def test_update_ahead_of_and_pool_options(det: Callable[..., Result],
                                          fake_master: FakeMasterTransport) -> None:
    fake_master.add("POST", "/jobs/101/update", UPDATED)
    det("job", "update", "101", "--ahead-of", "99")
    det("job", "update", "101", "--behind-of", "98")
    det("job", "update", "101", "--resource-pool", "debug")
    bodies = [json.loads(r.content) for r in fake_master.sent("POST", "/jobs/101/update")]
    assert bodies == [{"ahead_of": "99"}, {"behind_of": "98"}, {"resource_pool": "debug"}]


def test_update_needs_something_to_change(det: Callable[..., Result]) -> None:
    result = det("job", "update", "101")
    assert result.exit_code == 2 and "give --priority, --ahead-of" in result.output


def test_the_masters_refusal_is_one_error_line(det: Callable[..., Result],
                                               fake_master: FakeMasterTransport) -> None:
    fake_master.add_error("POST", "/jobs/203/update", 409, "conflict",
                          "job 203: job 203 is RUNNING: Slurm cannot move a running job to "
                          "another partition or QOS")
    result = det("job", "update", "203", "-p", "5")
    assert result.exit_code == 1
    assert result.output.strip() == ("Error: job 203: job 203 is RUNNING: Slurm cannot move a "
                                     "running job to another partition or QOS")


def test_update_batch_sends_every_item_in_order(det: Callable[..., Result],
                                                fake_master: FakeMasterTransport) -> None:
    results = [{"job_id": "1", "ok": True, "position": 1, "messages": []},
               {"job_id": "2", "ok": True, "position": 3, "messages": ["moved"]},
               {"job_id": "3", "ok": True, "position": 2, "messages": []}]
    fake_master.add("POST", "/jobs/update-batch", {"results": results})
    result = det("job", "update-batch", "1.priority=1", "2.resource-pool=debug", "3.ahead-of=1")
    assert result.exit_code == 0, result.output
    assert json.loads(fake_master.sent("POST", "/jobs/update-batch")[0].content) == {
        "updates": [{"job_id": "1", "priority": 1}, {"job_id": "2", "resource_pool": "debug"},
                    {"job_id": "3", "ahead_of": "1"}]}
    assert "Job 2: updated, now at position 3 in Slurm's queue\n  moved" in result.output


def test_update_batch_fails_when_slurm_refused_an_item(det: Callable[..., Result],
                                                       fake_master: FakeMasterTransport) -> None:
    results = [{"job_id": "1", "ok": False, "error": "Slurm refused to update job 1: no"},
               {"job_id": "2", "ok": True, "position": 1, "messages": []}]
    fake_master.add("POST", "/jobs/update-batch", {"results": results})
    result = det("job", "update-batch", "1.priority=1", "2.priority=2")
    assert result.exit_code == 1
    assert "Job 1: not updated: Slurm refused to update job 1: no" in result.output
    assert "Error: Slurm refused the update of job 1" in result.output


@pytest.mark.parametrize(("item", "message"), [
    ("1priority=1", "'1priority=1': expected JOB.KEY=VALUE"),
    ("1.prio=1", "'1.prio=1': unknown key 'prio' (known: priority, ahead-of"),
    ("x.priority=1", "'x.priority=1': 'x' is not a Slurm job id"),
    ("1.priority=100", "'1.priority=100': priority must be an integer from 1 to 99"),
    ("1.priority=high", "priority must be an integer"),
    ("1.ahead-of=job2", "'job2' is not a Slurm job id"),
    ("1.resource-pool=", "resource-pool needs a pool name"),
])
def test_a_bad_batch_item_is_named(det: Callable[..., Result], item: str, message: str) -> None:
    result = det("job", "update-batch", "2.priority=5", item)
    assert result.exit_code == 2 and message in result.output
    assert "update-batch item" in result.output


def test_batch_items_accept_underscores_too() -> None:
    assert parse_batch_item("7.behind_of=8") == {"job_id": "7", "behind_of": "8"}
    assert parse_batch_item("7.resource_pool=gpu-only") == {"job_id": "7",
                                                           "resource_pool": "gpu-only"}
