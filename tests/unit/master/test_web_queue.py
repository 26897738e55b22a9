"""The queue page's filters, priorities, type words and Change buttons; the pools' usage by
their own jobs; the per-node page; the master's health (bookkeeping, API, header, banner).

Flask's test client on the unit master (conftest.py); the queue and pools snapshots are
stored as the reconciler's refresher stores them, from a scripted squeue.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from typing import Any

import httpx
import pytest
from flask import Flask
from flask.testing import FlaskClient
from queue_helpers import FakeJob, FakeSlurmQueue, add_experiment, trial_comment
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.client import MasterClient
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.dispatcher.slurm.queue import parse_queue_line
from hpcdet.errors import SchedulerError
from hpcdet.master.db import session_scope
from hpcdet.master.queue.job_filters import JobFilter
from hpcdet.master.queue.job_queue import read_queue_snapshot
from hpcdet.master.queue.pools import Pool
from hpcdet.master.queue.snapshots import POOLS, QUEUE, store_snapshot
from hpcdet.master.scheduling.health import HEALTH, HealthTracker, assess, header_value, load_health

NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.timezone.utc)
NODES = [{"name": f"node{i}", "state": "mixed" if i == 1 else "idle", "cpus": 4,
          "cpus_allocated": 2 if i == 1 else 0, "gpus": 0, "gpus_used": 0, "gpu_types": [],
          "up": True, "partitions": ["batch", "debug"]} for i in (1, 2)]
POOLS_DATA = {"pools": [
    Pool("batch", "batch", nodes_up=2, nodes_total=2, slots_used=2, slots_total=8,
         default_compute=True).to_json(),
    Pool("debug", "debug", nodes_up=2, nodes_total=2, slots_used=2, slots_total=8).to_json()],
    "nodes": NODES}


def sessions(app: Flask) -> sessionmaker[Session]:
    factory: sessionmaker[Session] = app.config["HPCDET_SESSION_FACTORY"]
    return factory


def store(app: Flask, *jobs: FakeJob) -> None:
    backend = SlurmBackend(runner=FakeSlurmQueue(jobs))
    data = read_queue_snapshot(backend, app.config["HPCDET_SETTINGS"])
    with session_scope(sessions(app)) as session:
        store_snapshot(session, QUEUE, data)
        store_snapshot(session, POOLS, POOLS_DATA)


def seeded(app: Flask) -> None:
    """ann's trial job waiting (priority 5), bob's waiting, a plain job running on node1."""
    with session_scope(sessions(app)) as session:
        add_experiment(session, name="ann-exp", owner="ann", resources={"priority": 5},
                       jobs=[("101", 1)])
        add_experiment(session, name="bob-exp", owner="bob", jobs=[("102", 1)])
        ann, bob = trial_comment(session, "101"), trial_comment(session, "102")
    store(app, FakeJob("101", 900, comment=ann, reason="Resources"),
          FakeJob("102", 800, comment=bob, reason="Priority"),
          FakeJob("103", 950, state="RUNNING", reason="None", cpus=2, name="plain",
                  user="carol"))


def page(client: FlaskClient, url: str, user: str = "ann", status: int = 200) -> str:
    client.set_cookie("hpcdet_user", user)
    response = client.get(url)
    assert response.status_code == status, response.data
    return response.get_data(as_text=True)


def job_ids(html: str) -> list[str]:
    return re.findall(r'<tr data-job-id="([^"]+)"', html)


# ---- the queue page --------------------------------------------------------------------


def test_mine_shows_only_my_jobs_with_both_priorities_and_their_queue_place(
        app: Flask, client: FlaskClient) -> None:
    seeded(app)
    assert job_ids(page(client, "/queue")) == ["103", "101", "102"]
    html = page(client, "/queue?mine=1")
    assert job_ids(html) == ["101"]
    row = re.search(r'<tr data-job-id="101">.*?</tr>', html, re.S).group()  # type: ignore[union-attr]
    assert '<td data-label="#">2</td>' in row  # its place in the whole queue
    assert '<td data-label="Priority">5</td>' in row
    assert '<td data-label="Slurm priority">900</td>' in row
    assert 'title="EXPERIMENT">Trial</td>' in row
    assert "data-change=\"101\"" in row  # ann may change her waiting job
    assert 'data-poll="/api/v1/jobs?user=ann&amp;arrays=grouped"' in html
    assert 'name="mine" value="1" checked' in html


def test_user_pool_and_search_filters_are_query_parameters(app: Flask,
                                                           client: FlaskClient) -> None:
    seeded(app)
    assert job_ids(page(client, "/queue?user=bob")) == ["102"]
    assert job_ids(page(client, "/queue?q=PLAIN")) == ["103"]
    assert job_ids(page(client, "/queue?q=free+resources")) == ["101"]  # the reason's words
    html = page(client, "/queue?pool=debug&q=nothing")
    assert job_ids(html) == [] and "No jobs match these filters." in html
    assert 'data-poll="/api/v1/jobs?resource_pool=debug&amp;q=nothing&amp;arrays=grouped"' in html
    external = re.search(r'<tr data-job-id="103">.*?</tr>', page(client, "/queue"), re.S)
    assert external and "Outside hpcdet" in external.group()
    assert "data-change" not in external.group()  # not hpcdet's: nobody changes it here


def test_the_api_filters_the_same_way(app: Flask, client: FlaskClient) -> None:
    seeded(app)
    body = client.get("/api/v1/jobs?user=ann", headers={"X-Hpcdet-User": "ann"}).json
    assert [job["job_id"] for job in body["jobs"]] == ["101"]
    assert body["jobs"][0]["position"] == 2 and body["jobs"][0]["slurm_priority"] == 900
    body = client.get("/api/v1/jobs?q=%3Cscript%3E").json
    assert body["jobs"] == []


def test_a_filter_keeps_rows_by_user_or_text() -> None:
    row = {"job_id": "7", "name": "Resnet", "user": "ann", "slurm_user": "root",
           "reason": "Resources", "type": "EXPERIMENT"}
    assert JobFilter.of(" ann ", "").keeps(row) and JobFilter.of("root", None).keeps(row)
    assert not JobFilter.of("bob", None).keeps(row)
    assert JobFilter.of(None, "resnet").keeps(row) and JobFilter.of(None, "FREE RES").keeps(row)
    assert JobFilter.of("", "  ").empty and len(JobFilter.of(None, "x" * 999).search or "") == 200


# ---- pools and nodes ---------------------------------------------------------------------


def test_a_pool_says_how_many_used_slots_its_own_jobs_hold(app: Flask,
                                                          client: FlaskClient) -> None:
    seeded(app)  # the running job is in batch; debug shares batch's nodes
    pools = {p["name"]: p for p in client.get("/api/v1/resource-pools").json["resource_pools"]}
    assert pools["batch"]["slots_used_by_own_jobs"] == 2
    assert pools["debug"]["slots_used_by_own_jobs"] == 0
    assert pools["debug"]["shares_nodes_with"] == ["batch"]
    html = page(client, "/cluster")
    debug = re.search(r'<tr data-pool="debug">.*?</tr>', html, re.S)
    assert debug and "<td data-own-slots>0</td>" in debug.group()
    queue = page(client, "/queue?pool=debug")
    assert "No jobs in the queue." in queue
    assert "0 held by the jobs above, 2 by jobs of pools sharing its nodes" in queue


def test_the_nodes_page_lists_each_node_and_the_jobs_on_it(app: Flask,
                                                           client: FlaskClient) -> None:
    with session_scope(sessions(app)) as session:
        add_experiment(session, name="<b>exp</b>", owner="ann", jobs=[("301", 1)])
        comment = trial_comment(session, "301")
    store(app, FakeJob("301", 900, state="RUNNING", reason="None", comment=comment,
                       nodelist="node[1-2]"))
    html = page(client, "/cluster/nodes")
    node1 = re.search(r'<tr data-node="node1">.*?</tr>', html, re.S)
    node2 = re.search(r'<tr data-node="node2">.*?</tr>', html, re.S)
    assert node1 and node2
    assert "2/4" in node1.group() and "batch, debug" in node1.group()
    assert re.search(r'<a href="/trials/\d+">301</a>', node2.group())
    assert "&lt;b&gt;exp&lt;/b&gt;" in html and "<b>exp</b>" not in html


def test_squeue_lines_with_and_without_the_node_list_read() -> None:
    with_nodes = FakeJob("5", 1, state="RUNNING", nodelist="gpu[01-02],cpu7").line()
    assert parse_queue_line(with_nodes).node_names == ("gpu01", "gpu02", "cpu7")  # type: ignore[union-attr]
    older = FakeJob("6", 1).line().removesuffix("\x1f").rsplit("\x1f", 1)[0] + "\x1f"
    assert parse_queue_line(older) is not None and parse_queue_line(older).node_names == ()  # type: ignore[union-attr]


# ---- health ------------------------------------------------------------------------------


def tracker(app: Flask, clock: list[float]) -> HealthTracker:
    return HealthTracker(sessions(app), 5.0, clock=lambda: clock[0], now=lambda: NOW)


def test_a_failing_scheduler_is_recorded_at_once_and_logged_once_with_its_traceback(
        app: Flask, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="hpcdet.master.scheduling.health")
    clock = [0.0]
    health = tracker(app, clock)
    error = SchedulerError(["squeue"], 1, "", "squeue: error: cannot stat file\n"
                           "squeue: fatal: Unable to process configuration file\n")
    other = SchedulerError(["sinfo"], 1, "", "sinfo: fatal: Unable to process configuration")
    health.scheduler_failed("reading the queue", error)
    with session_scope(sessions(app)) as session:  # stored before the (long) cycle ends
        stored = load_health(session, NOW)
    assert stored["status"] == "degraded" and stored["cycle_completed_at"] is None
    for _ in range(3):
        health.scheduler_failed("reading the pools", other)
        health.scheduler_failed("reading the queue", error)
        record = health.end_cycle(0.25)
        clock[0] += 5
    assert record["scheduler_ok"] is False
    assert record["scheduler_failing_since"] == NOW.isoformat()
    assert record["last_error"] == ("reading the queue: squeue exited with 1: squeue: fatal: "
                                    "Unable to process configuration file")
    assert [r.exc_info is not None for r in caplog.records] == [True]  # then quiet a minute
    clock[0] += 60
    health.scheduler_failed("reading the queue", error)
    health.end_cycle(0.1)
    assert [r.levelname for r in caplog.records] == ["ERROR", "WARNING"]
    assert caplog.records[1].exc_info is None and "still failing" in caplog.records[1].message
    health.scheduler_ok()
    record = health.end_cycle(0.1)
    assert record["scheduler_ok"] and record["scheduler_failing_since"] is None
    assert "answers again" in caplog.records[-1].message


def test_an_unreachable_login_node_is_recorded_but_not_logged_again_by_the_tracker(
        app: Flask, caplog: pytest.LogCaptureFixture) -> None:
    # The reconciler says "the cluster is unreachable" in one line itself (no traceback: a
    # login node away, or a refused host key, is not a bug in the master).
    caplog.set_level(logging.INFO, logger="hpcdet.master.scheduling.health")
    health = tracker(app, [0.0])
    refused = OSError("the SSH host key of [127.0.0.1]:2222 changed: refusing to connect")
    health.scheduler_failed("the cluster is unreachable", refused, caller_logged=True)
    record = health.end_cycle(0.1)
    assert record["scheduler_ok"] is False and "host key" in record["last_error"]
    assert caplog.records == []


def test_assess_names_each_problem_in_one_line() -> None:
    fine = {"scheduler_failing_since": None, "cycle_completed_at": NOW.isoformat(),
            "interval_seconds": 5.0, "db_seconds": 0.01}
    assert assess(fine, NOW + dt.timedelta(seconds=30))["status"] == "ok"
    bad = {**fine, "scheduler_failing_since": NOW.isoformat(), "last_error": "no squeue",
           "db_seconds": 3.5}
    judged = assess(bad, NOW + dt.timedelta(seconds=61))
    assert judged["status"] == "degraded"
    assert judged["problems"] == [
        "scheduler unreachable since 2026-11-26 12:00:00 UTC: no squeue",
        "database slow: a round trip took 3.5 s",
        "reconciler not cycling: its last cycle completed 2026-11-26 12:00:00 UTC (61 s ago, "
        "more than 60 s)"]
    assert header_value(judged) == "degraded; " + "; ".join(judged["problems"])
    never = {"started_at": NOW.isoformat(), "cycle_completed_at": None, "interval_seconds": 1}
    assert assess(never, NOW + dt.timedelta(seconds=59))["status"] == "ok"
    assert assess(never, NOW + dt.timedelta(seconds=61))["problems"] == [
        "reconciler not cycling: no cycle completed since it started 2026-11-26 12:00:00 UTC "
        "(61 s ago)"]


def store_health(app: Flask, **record: Any) -> None:
    with session_scope(sessions(app)) as session:
        store_snapshot(session, HEALTH, {"cycle_completed_at": dt.datetime.now(
            dt.timezone.utc).isoformat(), "interval_seconds": 5.0, "db_seconds": 0.01,
            "scheduler_failing_since": None, **record})


def test_the_api_header_and_every_page_say_when_the_master_is_degraded(
        app: Flask, client: FlaskClient) -> None:
    app.config["HPCDET_HEALTH_CACHE_SECONDS"] = 0  # each answer reads it afresh
    assert client.get("/api/v1/master/health").json["status"] == "starting"
    store_health(app)
    assert "X-Hpcdet-Health" not in client.get("/api/v1/experiments").headers
    assert 'data-health-banner hidden' in page(client, "/queue")
    store_health(app, scheduler_failing_since="2026-11-26T11:00:00+00:00",
                 last_error="squeue exited with 1: <fatal>")
    info = client.get("/api/v1/master").json
    assert info["health"]["status"] == "degraded"
    header = client.get("/api/v1/experiments").headers["X-Hpcdet-Health"]
    assert header.startswith("degraded; scheduler unreachable since 2026-11-26 11:00:00 UTC")
    assert "X-Hpcdet-Health" not in client.post("/api/v1/experiments", json={}).headers
    for url in ("/", "/queue", "/cluster", "/cluster/nodes", "/tasks"):
        html = page(client, url)
        assert 'data-health-banner hidden' not in html and "data-health-banner" in html
        assert "squeue exited with 1: &lt;fatal&gt;" in html
        # the moment as a <time> the page shows in the reader's zone, not as UTC text
        assert 'since <time datetime="2026-11-26T11:00:00Z"' in html


def test_the_client_reports_a_degraded_answer_once() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"experiments": []},
                              headers={"X-Hpcdet-Health": "degraded; scheduler unreachable"})

    seen: list[str] = []
    client = MasterClient("http://m", transport=httpx.MockTransport(answer),
                          on_degraded=seen.append)
    client.get("/experiments")
    client.get("/experiments")
    assert seen == ["degraded; scheduler unreachable"]
