"""``GET /api/v1/jobs``: Slurm's queue (the stored snapshot) merged with hpcdet's jobs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import assert_error
from queue_helpers import FakeJob, FakeSlurmQueue, add_experiment, trial_comment
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.tags import allocation_tag
from hpcdet.master.allocation_models import Allocation
from hpcdet.master.app import create_app
from hpcdet.master.db import session_scope
from hpcdet.master.queue.job_queue import job_list, read_queue_snapshot
from hpcdet.master.queue.pools import Pool
from hpcdet.master.queue.snapshots import POOLS, QUEUE, store_snapshot
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.pools import (
    CustomPool,
    PriorityBand,
    PriorityPolicy,
    SlurmDefaults,
)

BANDS = (PriorityBand(1, 20, "high"), PriorityBand(21, 60, "normal"),
         PriorityBand(61, 99, "low"))
GPU_ONLY_ARGS = ("--nodelist=node[2-3]",)
POOL_SNAPSHOT = {"pools": [
    Pool("batch", "batch", default_compute=True).to_json(),
    Pool("debug", "debug").to_json(),
    Pool("gpu-only", "batch", is_custom=True, sbatch_args=GPU_ONLY_ARGS).to_json()]}


def queue_settings(settings: MasterSettings) -> MasterSettings:
    """Bands high/normal/low and a custom pool carved out of batch with --nodelist."""
    custom = CustomPool("gpu-only", "batch", slurm=SlurmDefaults(GPU_ONLY_ARGS))
    rm = replace(settings.resource_manager, priority=PriorityPolicy(BANDS, nice_step=100),
                 resource_pools=(custom,))
    return replace(settings, resource_manager=rm)


@pytest.fixture
def slurm_queue() -> FakeSlurmQueue:
    return FakeSlurmQueue()


@pytest.fixture
def queue_app(settings: MasterSettings, slurm_queue: FakeSlurmQueue) -> Iterator[Flask]:
    app = create_app(queue_settings(settings), backend=SlurmBackend(runner=slurm_queue))
    with session_scope(sessions(app)) as session:
        store_snapshot(session, POOLS, POOL_SNAPSHOT)
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def queue_client(queue_app: Flask) -> FlaskClient:
    return queue_app.test_client()


def sessions(app: Flask) -> sessionmaker[Session]:
    factory: sessionmaker[Session] = app.config["HPCDET_SESSION_FACTORY"]
    return factory


def snapshot_now(app: Flask) -> None:
    """What the reconciler's refresher does every pool_refresh_seconds."""
    data = read_queue_snapshot(app.config["HPCDET_BACKEND"], app.config["HPCDET_SETTINGS"])
    with session_scope(sessions(app)) as session:
        store_snapshot(session, QUEUE, data)


def seed(app: Flask, slurm_queue: FakeSlurmQueue) -> dict[str, Any]:
    """Two hpcdet experiments, a command task, and jobs hpcdet did not submit."""
    with session_scope(sessions(app)) as session:
        urgent = add_experiment(session, name="urgent", owner="ann",
                                resources={"priority": 5}, jobs=[("101", 1), ("102", 1)])
        plain = add_experiment(session, name="plain", owner="bob", jobs=[("103", 2)])
        comments = {job: trial_comment(session, job) for job in ("101", "102", "103")}
        ids = {"urgent": urgent.id, "plain": plain.id}
    slurm_queue.add(
        FakeJob("101", 900, comment=comments["101"], name="det-x"),
        FakeJob("102", 50, state="RUNNING", reason="None", comment=comments["102"], gpus=2),
        FakeJob("103", 700, partition="debug", comment=comments["103"], cpus=4),
        FakeJob("104", 800, name="my-script", comment="hpcdet:unit:task-7", user="root"),
        FakeJob("105", 1000, name="analysis", user="carol", qos="low", account="physics"),
        # An hpcdet comment of this cluster but no such job row: a reused Slurm job id.
        FakeJob("106", 600, name="det-1-1-1", comment="hpcdet:unit:trial-999:run-1"),
        FakeJob("107", 500, name="elsewhere", comment="hpcdet:other:trial-1:run-1"),
    )
    return ids


def test_no_queue_before_the_first_refresh(queue_client: FlaskClient) -> None:
    body = queue_client.get("/api/v1/jobs").get_json()
    assert body["jobs"] == [] and body["taken_at"] is None
    assert body["refresh_seconds"] == 15.0


def test_rows_merge_slurms_queue_with_hpcdets_jobs(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    ids = seed(queue_app, slurm_queue)
    snapshot_now(queue_app)
    body = queue_client.get("/api/v1/jobs").get_json()
    assert body["taken_at"] is not None
    rows = {row["job_id"]: row for row in body["jobs"]}
    assert [row["job_id"] for row in body["jobs"]] == ["102", "105", "101", "104", "103",
                                                        "106", "107"]
    assert [row["position"] for row in body["jobs"]] == [1, 2, 3, 4, 5, 6, 7]
    assert rows["101"].items() >= {
        "type": "EXPERIMENT", "name": "urgent", "experiment_id": ids["urgent"],
        "priority": 5, "slurm_priority": 900, "user": "ann", "slurm_user": "root",
        "state": "QUEUED", "reason": "Priority", "slots_acquired": 0, "slots_needed": 1,
        "pool": "batch", "external": False}.items()
    assert rows["102"]["state"] == "SCHEDULED" and rows["102"]["reason"] is None
    assert (rows["102"]["slots_acquired"], rows["102"]["slots_needed"],
            rows["102"]["slot_kind"]) == (2, 2, "gpu")
    assert rows["103"]["priority"] == 42 and rows["103"]["user"] == "bob"
    assert rows["103"]["pool"] == "debug"  # no pool named, none configured: its partition
    assert rows["104"]["type"] == "COMMAND" and rows["104"]["task_id"] == 7
    assert rows["104"]["priority"] is None and not rows["104"]["external"]
    for job_id in ("105", "106", "107"):
        assert rows[job_id]["type"] == "EXTERNAL" and rows[job_id]["external"]
        assert rows[job_id]["priority"] is None and rows[job_id]["pool"] == "batch"
    assert rows["105"].items() >= {"user": "carol", "qos": "low", "account": "physics"}.items()


def test_listing_runs_no_slurm_command(queue_app: Flask, queue_client: FlaskClient,
                                       slurm_queue: FakeSlurmQueue) -> None:
    seed(queue_app, slurm_queue)
    snapshot_now(queue_app)
    slurm_queue.calls.clear()
    for _ in range(3):
        assert queue_client.get("/api/v1/jobs").status_code == 200
    assert slurm_queue.calls == []


def test_the_snapshot_is_one_squeue_and_json_able(queue_app: Flask,
                                                  slurm_queue: FakeSlurmQueue) -> None:
    import json

    seed(queue_app, slurm_queue)
    data = read_queue_snapshot(queue_app.config["HPCDET_BACKEND"],
                               queue_app.config["HPCDET_SETTINGS"])
    assert [call[0] for call in slurm_queue.calls] == ["squeue"]
    assert json.loads(json.dumps(data)) == data and len(data["jobs"]) == 7


def test_one_pool_lists_its_partition_and_its_hpcdet_jobs(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    seed(queue_app, slurm_queue)
    snapshot_now(queue_app)
    debug = queue_client.get("/api/v1/jobs?resource_pool=debug").get_json()
    assert [(row["job_id"], row["position"]) for row in debug["jobs"]] == [("103", 1)]
    assert debug["resource_pool"] == "debug"
    batch = queue_client.get("/api/v1/jobs?resource_pool=BATCH").get_json()
    assert "103" not in [row["job_id"] for row in batch["jobs"]]
    assert len(batch["jobs"]) == 6


def test_an_unknown_pool_names_the_known_ones(queue_app: Flask,
                                              queue_client: FlaskClient) -> None:
    response = queue_client.get("/api/v1/jobs?resource_pool=nosuch")
    body = response.get_json()
    assert response.status_code == 400 and set(body) == {"error", "status"}
    assert body["error"]["code"] == "invalid_config"
    assert "unknown resource pool 'nosuch' (known: batch, debug, gpu-only)" in \
        body["error"]["details"][0]


def test_job_list_reads_the_database_with_a_few_queries(queue_app: Flask,
                                                        slurm_queue: FakeSlurmQueue) -> None:
    from sqlalchemy import event

    seed(queue_app, slurm_queue)
    snapshot_now(queue_app)
    statements: list[str] = []
    engine = queue_app.config["HPCDET_ENGINE"]
    event.listen(engine, "before_cursor_execute",
                 lambda *args: statements.append(args[2]))
    with session_scope(sessions(queue_app)) as session:
        rows = job_list(session, queue_app.config["HPCDET_SETTINGS"], None)["jobs"]
    assert len(rows) == 7
    assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) <= 4


# ---- updates -------------------------------------------------------------------------------


def seed_updates(app: Flask, slurm_queue: FakeSlurmQueue) -> int:
    """Experiment "plain" (priority 42: QOS normal, nice 2150 in batch) with two queued jobs
    and a running one, an external job, a command task; returns the experiment id."""
    with session_scope(sessions(app)) as session:
        exp = add_experiment(session, name="plain", jobs=[("201", 1), ("202", 1), ("203", 1)])
        comments = {job: trial_comment(session, job) for job in ("201", "202", "203")}
    slurm_queue.add(
        FakeJob("201", 1000, nice=2150, comment=comments["201"]),
        FakeJob("202", 900, nice=2150, comment=comments["202"]),
        FakeJob("203", 1200, nice=2150, state="RUNNING", reason="None",
                comment=comments["203"]),
        FakeJob("204", 3000, user="carol"),
        FakeJob("205", 500, user="carol"),
        FakeJob("206", 700, comment="hpcdet:unit:task-3"),
        FakeJob("207", 0, reason="JobHeldUser", user="carol"),
    )
    return exp.id


def post(client: FlaskClient, path: str, body: Any) -> Any:
    return client.post(f"/api/v1{path}", json=body, headers={"X-Hpcdet-User": "ann"})


def experiment_config(app: Flask, exp_id: int) -> dict[str, Any]:
    from hpcdet.master.models import Experiment

    with session_scope(sessions(app)) as session:
        exp = session.get(Experiment, exp_id)
        assert exp is not None
        return {"config": exp.config, "resource_pool": exp.resource_pool}


def test_a_new_priority_re_maps_every_queued_job_of_the_experiment(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    exp_id = seed_updates(queue_app, slurm_queue)
    response = post(queue_client, "/jobs/201/update", {"priority": 5})
    assert response.status_code == 200, response.get_json()
    result = response.get_json()["result"]
    assert slurm_queue.commands("scontrol") == [
        ("scontrol", "update", "JobId=201", "QOS=high", "Nice=450"),
        ("scontrol", "update", "JobId=202", "QOS=high", "Nice=450")]  # not the running 203
    assert len(slurm_queue.commands("squeue")) == 2  # checked before, verified after
    assert result["ok"] and [c["job_id"] for c in result["changes"]] == ["201", "202"]
    assert any("resources.priority is now 5" in m for m in result["messages"])
    assert any("QOS high" in m and "nice 450" in m for m in result["messages"])
    assert experiment_config(queue_app, exp_id)["config"]["resources"]["priority"] == 5
    listed = {row["job_id"]: row for row in queue_client.get("/api/v1/jobs").get_json()["jobs"]}
    assert (listed["201"]["priority"], listed["201"]["qos"]) == (5, "high")  # snapshot refreshed
    assert result["position"] == listed["201"]["position"]


def test_ahead_of_puts_the_job_just_above_the_other_in_slurms_order(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    seed_updates(queue_app, slurm_queue)
    result = post(queue_client, "/jobs/202/update", {"ahead_of": "204"}).get_json()["result"]
    assert slurm_queue.commands("scontrol") == [
        ("scontrol", "update", "JobId=202", "Nice=48")]  # 2150 + 900 - (3000 + 2)
    assert slurm_queue.jobs["202"].priority == 3002
    assert result["ok"] and result["order_holds"]
    assert result["position"] == 2  # after the running job, ahead of 204
    assert any("ahead of job 204" in m for m in result["messages"])


def test_behind_of_puts_the_job_just_below_the_other(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    seed_updates(queue_app, slurm_queue)
    result = post(queue_client, "/jobs/201/update", {"behind_of": 205}).get_json()["result"]
    assert slurm_queue.jobs["201"].priority == 498 and slurm_queue.jobs["201"].nice == 2652
    assert result["order_holds"]


def test_a_negative_nice_slurm_refuses_is_a_409_naming_operator_rights(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    seed_updates(queue_app, slurm_queue)
    slurm_queue.jobs["202"].nice = 0
    slurm_queue.refuse["Nice=-2102"] = "slurm_update error: Access/permission denied"
    message = assert_error(post(queue_client, "/jobs/202/update", {"ahead_of": "204"}), 409,
                           "slurm_refused")
    assert message.startswith("Slurm refused to update job 202: slurm_update error: "
                              "Access/permission denied")
    assert "only Slurm operators and administrators" in message


def test_a_pool_move_changes_the_partition_and_the_experiments_pool(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    exp_id = seed_updates(queue_app, slurm_queue)
    result = post(queue_client, "/jobs/201/update",
                  {"resource_pool": "DEBUG"}).get_json()["result"]
    assert slurm_queue.commands("scontrol") == [
        ("scontrol", "update", "JobId=201", "Partition=debug"),
        ("scontrol", "update", "JobId=202", "Partition=debug")]
    stored = experiment_config(queue_app, exp_id)
    assert stored["resource_pool"] == "debug"
    assert stored["config"]["resources"]["resource_pool"] == "debug"
    assert result["ok"]


def test_a_move_into_a_pool_with_its_own_sbatch_args_is_refused_naming_them(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    seed_updates(queue_app, slurm_queue)
    message = assert_error(post(queue_client, "/jobs/201/update",
                                {"resource_pool": "gpu-only"}), 409, "conflict")
    assert "its sbatch_args ['--nodelist=node[2-3]']" in message
    assert slurm_queue.commands("scontrol") == []


def test_a_command_task_is_re_mapped_alone(queue_app: Flask, queue_client: FlaskClient,
                                           slurm_queue: FakeSlurmQueue) -> None:
    seed_updates(queue_app, slurm_queue)
    result = post(queue_client, "/jobs/206/update", {"priority": 70}).get_json()["result"]
    assert slurm_queue.commands("scontrol") == [
        ("scontrol", "update", "JobId=206", "QOS=low", "Nice=950")]
    assert result["ok"]


@pytest.mark.parametrize(("job_id", "body", "status", "code", "message"), [
    ("999", {"priority": 5}, 404, "not_found", "job 999 is not in Slurm's queue"),
    ("204", {"priority": 5}, 403, "forbidden", "job 204 is not an hpcdet job (Slurm user carol"),
    ("203", {"priority": 5}, 409, "conflict",
     "job 203 is RUNNING: Slurm cannot move a running job to another partition or QOS"),
    ("203", {"ahead_of": "204"}, 409, "conflict", "only pending jobs have a place"),
    ("201", {"ahead_of": "203"}, 409, "conflict", "ahead_of job 203 is RUNNING"),
    ("201", {"behind_of": "207"}, 409, "conflict", "job 207 is held (JobHeldUser)"),
    ("201", {"ahead_of": "998"}, 404, "not_found", "ahead_of job 998 is not in Slurm's queue"),
    ("201", {"resource_pool": "nosuch"}, 400, "bad_request",
     "unknown resource pool 'nosuch' (known: batch, debug, gpu-only)"),
    ("201", {"prio": 5}, 400, "bad_request", "job 201: unknown key 'prio' (known: priority,"),
    ("201", {}, 400, "bad_request", "nothing to update"),
    ("201", {"priority": 0}, 400, "bad_request", "priority must be an integer from 1 to 99"),
    ("201", {"priority": "5"}, 400, "bad_request", "priority must be an integer"),
    ("201", {"priority": True}, 400, "bad_request", "priority must be an integer"),
    ("201", {"ahead_of": "204", "behind_of": "205"}, 400, "bad_request", "not both"),
    ("201", {"ahead_of": "204", "priority": 3}, 400, "bad_request", "cannot be combined"),
    ("201", {"ahead_of": "201"}, 400, "bad_request", "cannot be ordered against itself"),
    ("201", {"ahead_of": "x1"}, 400, "bad_request", "ahead_of must be a job id"),
    ("12a", {"priority": 5}, 400, "bad_request", "job id must be a job id"),
])
def test_refusals_name_the_reason_and_change_nothing(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue, job_id: str,
        body: dict[str, Any], status: int, code: str, message: str) -> None:
    seed_updates(queue_app, slurm_queue)
    assert message in assert_error(post(queue_client, f"/jobs/{job_id}/update", body),
                                   status, code)
    assert slurm_queue.commands("scontrol") == []


def test_a_body_that_is_not_an_object_is_refused(queue_client: FlaskClient) -> None:
    assert_error(post(queue_client, "/jobs/1/update", [1]), 400, "bad_request")
    for body in ({}, {"updates": []}, {"updates": "x"}, {"updates": [{"priority": 1}]}):
        assert_error(post(queue_client, "/jobs/update-batch", body), 400, "bad_request")


def test_a_batch_is_checked_whole_before_anything_is_applied(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    seed_updates(queue_app, slurm_queue)
    updates = [{"job_id": "201", "priority": 5}, {"job_id": "204", "priority": 5}]
    message = assert_error(post(queue_client, "/jobs/update-batch", {"updates": updates}),
                           403, "forbidden")
    assert message.startswith("updates[1] (job 204): job 204 is not an hpcdet job")
    bad = [{"job_id": "201", "priority": 5}, {"job_id": "202", "ahead_of": "x"}]
    message = assert_error(post(queue_client, "/jobs/update-batch", {"updates": bad}), 400,
                           "bad_request")
    assert message.startswith("updates[1]: ahead_of must be a job id")
    assert slurm_queue.commands("scontrol") == []


def test_a_batch_applies_in_order_reading_the_queue_again_when_it_changed(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    exp_id = seed_updates(queue_app, slurm_queue)
    updates = [{"job_id": "206", "priority": 70}, {"job_id": "201", "resource_pool": "debug"},
               {"job_id": "202", "ahead_of": "204"}]
    response = post(queue_client, "/jobs/update-batch", {"updates": updates})
    results = response.get_json()["results"]
    assert response.status_code == 200 and [r["ok"] for r in results] == [True, True, True]
    assert [call[2:] for call in slurm_queue.commands("scontrol")] == [
        ("JobId=206", "QOS=low", "Nice=950"), ("JobId=201", "Partition=debug"),
        ("JobId=202", "Partition=debug"), ("JobId=202", "Nice=48")]
    assert len(slurm_queue.commands("squeue")) == 4  # before, twice after changes, after all
    assert results[2]["order_holds"] and slurm_queue.jobs["202"].partition == "debug"
    assert experiment_config(queue_app, exp_id)["resource_pool"] == "debug"


def test_the_check_after_a_batch_reports_an_order_a_later_item_undid(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    seed_updates(queue_app, slurm_queue)
    updates = [{"job_id": "202", "ahead_of": "204"}, {"job_id": "201", "priority": 42},
               {"job_id": "201", "priority": 50}]  # re-maps 202's nice as well
    results = post(queue_client, "/jobs/update-batch", {"updates": updates}).get_json()["results"]
    assert all(r["ok"] for r in results) and results[0]["order_holds"] is False
    assert "Slurm's queue does not show job 202 ahead of job 204" in results[0]["messages"][-1]


def test_slurm_refusing_one_batch_item_is_reported_and_the_rest_applied(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    exp_id = seed_updates(queue_app, slurm_queue)
    slurm_queue.refuse["QOS=high"] = "Invalid qos specification for job 201"
    updates = [{"job_id": "201", "priority": 5}, {"job_id": "206", "priority": 70}]
    results = post(queue_client, "/jobs/update-batch", {"updates": updates}).get_json()["results"]
    assert [r["ok"] for r in results] == [False, True]
    assert results[0]["error"] == ("Slurm refused to update job 201: Invalid qos specification "
                                   "for job 201")
    assert "priority" not in experiment_config(queue_app, exp_id)["config"]["resources"]


def test_an_unreachable_slurm_is_a_503_before_and_a_note_after(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    seed_updates(queue_app, slurm_queue)
    slurm_queue.squeue_fails = {1}
    message = assert_error(post(queue_client, "/jobs/201/update", {"priority": 5}), 503,
                           "scheduler_unavailable")
    assert "could not read Slurm's queue: squeue exited with 1" in message
    slurm_queue.squeue_fails = {3}
    result = post(queue_client, "/jobs/201/update", {"priority": 5}).get_json()["result"]
    assert result["ok"] and result["position"] is None
    assert "could not read Slurm's queue afterwards" in result["messages"][-1]


def test_no_job_can_go_behind_the_lowest_priority() -> None:
    from hpcdet.dispatcher.queue import QueueEntry
    from hpcdet.dispatcher.slurm.backend import SlurmBackend
    from hpcdet.master.errors import Conflict
    from hpcdet.master.queue.job_updates import job_nice_for_position

    slurm = SlurmBackend()

    def entry(job_id: str, priority: int, nice: int = 0) -> QueueEntry:
        return QueueEntry(job_id, "batch", "j", "u", "PENDING", None, priority, nice, None,
                          None, None, 1, 1, 1)

    assert job_nice_for_position(slurm, entry("1", 100, 10), entry("2", 50), ahead=True) == 58
    assert job_nice_for_position(slurm, entry("1", 100, 10), entry("2", 50), ahead=False) == 62
    with pytest.raises(Conflict, match="job 2 has Slurm priority 2: a job behind it would"):
        job_nice_for_position(slurm, entry("1", 100), entry("2", 2), ahead=False)


def test_a_tasks_job_type_is_its_kind() -> None:
    from types import SimpleNamespace

    from hpcdet.master.queue.job_queue import COMMAND, EXPERIMENT, Ownership, job_type

    def task_of(kind: str) -> Ownership:
        return Ownership(COMMAND, task_id=1, task=SimpleNamespace(kind=kind))

    assert job_type(task_of("notebook")) == "NOTEBOOK"
    assert job_type(task_of("command")) == "COMMAND" == job_type(task_of("batch"))
    assert job_type(Ownership(COMMAND, task_id=1)) == "COMMAND"  # no row (yet)
    assert job_type(Ownership(EXPERIMENT)) == "EXPERIMENT"


def test_an_allocation_job_is_its_experiments(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    with session_scope(sessions(queue_app)) as session:
        exp = add_experiment(session, name="asha", owner="ann", jobs=[])
        allocation = Allocation(experiment_id=exp.id, job_id="201", slots=4)
        session.add(allocation)
        session.flush()
        exp_id, tag = exp.id, allocation_tag("unit", allocation.id)
        other = allocation_tag("unit", allocation.id + 1)  # no such allocation
    slurm_queue.add(FakeJob("201", 700, name="det-alloc", comment=tag, cpus=4),
                    FakeJob("202", 600, name="det-alloc", comment=other),
                    FakeJob("203", 500, name="det-alloc", comment=tag))  # a copied tag
    snapshot_now(queue_app)
    rows = {row["job_id"]: row for row in queue_client.get("/api/v1/jobs").get_json()["jobs"]}
    assert rows["201"].items() >= {"type": "EXPERIMENT", "name": "asha", "user": "ann",
                                   "experiment_id": exp_id, "external": False}.items()
    for job_id in ("202", "203"):
        assert rows[job_id]["type"] == "EXTERNAL" and rows[job_id]["external"]


def test_a_job_the_viewer_may_not_see_stays_hpcdets_and_names_only_slurms_user() -> None:
    from hpcdet.master.queue.job_queue import _withheld

    row = {"job_id": "7", "type": "EXPERIMENT", "name": "secret", "experiment_id": 3,
           "trial_id": 4, "task_id": None, "priority": 5, "user": "bob", "external": False}
    owner_mode = _withheld({**row, "slurm_user": "bob"})
    assert (owner_mode["type"], owner_mode["user"], owner_mode["hidden"]) == (
        "EXPERIMENT", "bob", True)
    assert (owner_mode["name"], owner_mode["trial_id"], owner_mode["priority"]) == (
        "", None, None)
    service_account = _withheld({**row, "slurm_user": "hpcdet"})
    assert service_account["type"] == "EXPERIMENT" and service_account["user"] is None
