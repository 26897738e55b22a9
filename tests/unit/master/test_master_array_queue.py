"""Job arrays in ``det job list`` and the job API: whose they are, one row per array with
counts (``?arrays=grouped``), and updates of one pending task."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from queue_helpers import FakeJob, FakeSlurmQueue, add_experiment
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.cli.job import jobs_table
from hpcdet.dispatcher.pbs.backend import PbsBackend
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.app import create_app
from hpcdet.master.db import session_scope
from hpcdet.master.models import Job
from hpcdet.master.queue.array_rows import group_arrays
from hpcdet.master.queue.job_queue import read_queue_snapshot
from hpcdet.master.queue.snapshots import QUEUE, store_snapshot
from hpcdet.master.settings.core import MasterSettings


@pytest.fixture
def slurm_queue() -> FakeSlurmQueue:
    return FakeSlurmQueue()


@pytest.fixture
def queue_app(settings: MasterSettings, slurm_queue: FakeSlurmQueue) -> Iterator[Flask]:
    app = create_app(settings, backend=SlurmBackend(runner=slurm_queue))
    yield app
    app.config["HPCDET_ENGINE"].dispose()


def sessions(app: Flask) -> sessionmaker[Session]:
    factory: sessionmaker[Session] = app.config["HPCDET_SESSION_FACTORY"]
    return factory


def seed(app: Flask, slurm_queue: FakeSlurmQueue) -> int:
    """Array 40 of experiment "search" (tasks 0-5: 0 and 1 running, 2-5 pending) and a
    plain job; and array 50, tagged as the same experiment's but unknown to the database."""
    with session_scope(sessions(app)) as session:
        exp = add_experiment(session, name="search", owner="ann",
                             jobs=[(f"40_{i}", 1) for i in range(6)])
        exp_id = exp.id
        first_trial = session.scalars(select(Job.trial_id).where(Job.job_id == "40_0")).one()
    tag = f"hpcdet:unit:experiment-{exp_id}:array"
    slurm_queue.add(
        FakeJob("40_0", 10, state="RUNNING", reason="None", comment=tag, nodelist="node1"),
        FakeJob("40_1", 10, state="RUNNING", reason="None", comment=tag, nodelist="node2"),
        FakeJob("40_[2-5%2]", 10, reason="JobArrayTaskLimit", comment=tag),
        FakeJob("41", 5, name="plain", user="carol"),
        FakeJob("50_[0-3]", 5, comment=tag))
    data = read_queue_snapshot(app.config["HPCDET_BACKEND"], app.config["HPCDET_SETTINGS"])
    with session_scope(sessions(app)) as session:
        store_snapshot(session, QUEUE, data)
    return first_trial


def test_array_entries_are_the_experiments_and_each_running_task_its_trial(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    first_trial = seed(queue_app, slurm_queue)
    rows = {row["job_id"]: row for row in queue_client.get("/api/v1/jobs").get_json()["jobs"]}
    assert rows["40_0"]["type"] == "EXPERIMENT" and rows["40_0"]["trial_id"] == first_trial
    assert rows["40_1"]["trial_id"] == first_trial + 1
    pending = rows["40_[2-5%2]"]
    assert pending["type"] == "EXPERIMENT" and pending["trial_id"] is None
    assert (pending["array_id"], pending["array_task_count"]) == ("40", 4)
    assert rows["50_[0-3]"]["type"] == "EXTERNAL"  # no job rows of that array: not ours
    assert rows["41"]["array_id"] is None


def test_grouped_one_row_per_array_with_its_tasks_counted(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    seed(queue_app, slurm_queue)
    jobs = queue_client.get("/api/v1/jobs?arrays=grouped").get_json()["jobs"]
    assert [row["job_id"] for row in jobs] == ["40", "41", "50"]
    array = jobs[0]
    assert array["array_tasks"] == {"RUNNING": 2, "PENDING": 4}
    assert (array["slots_acquired"], array["slots_needed"]) == (2, 6)
    assert array["state"] == "SCHEDULED" and array["nodes"] == ["node1", "node2"]
    table = jobs_table(jobs)
    assert "search (exp 1, array: 4 PENDING, 2 RUNNING)" in table


@pytest.fixture
def queue_client(queue_app: Flask) -> FlaskClient:
    return queue_app.test_client()


def test_one_pending_task_of_an_array_can_be_updated_alone(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    seed(queue_app, slurm_queue)
    updated: list[Sequence[str]] = []
    slurm_queue._update = updated.append  # type: ignore[method-assign]  # Slurm splits it off
    response = queue_client.post("/api/v1/jobs/40_3/update", json={"ahead_of": "41"},
                                 headers={"X-Hpcdet-User": "ann"})
    assert response.status_code == 200, response.get_json()
    assert [call[2] for call in updated] == ["JobId=40_3"]


@pytest.mark.parametrize(("job_id", "expected"), [
    ("12_3", ("12", 1)), ("12_[4-9%2]", ("12", 6)), ("12_[1,3,5-7]", ("12", 5)),
    ("12", None), ("12+0", None)])
def test_array_entries_are_read_from_slurms_ids(job_id: str,
                                                expected: tuple[str, int] | None) -> None:
    assert SlurmBackend.array_entry(job_id) == expected


def test_pending_tasks_expand_to_their_ids() -> None:
    assert SlurmBackend.array_pending_task_ids("12_[1,4-6%2]") == ["12_1", "12_4", "12_5",
                                                                    "12_6"]
    assert SlurmBackend.array_pending_task_ids("12_3") == []


def test_rows_outside_arrays_are_left_as_they_are() -> None:
    rows: list[dict[str, Any]] = [{"job_id": "7", "array_id": None, "position": 1}]
    assert group_arrays(rows) == rows


def test_a_pbs_array_is_one_line_of_its_subjobs(settings: MasterSettings) -> None:
    """PBS lists every subjob (``qstat -t``, recorded: tests/data/pbs/array-queue.json);
    the master reads their ids through the PBS backend's class and groups them."""
    recorded = (Path(__file__).resolve().parents[2] / "data" / "pbs" / "array-queue.json")
    pbs = replace(settings, resource_manager=replace(settings.resource_manager, type="pbs"))
    answer: dict[str, str] = {}
    app = create_app(pbs, backend=PbsBackend(runner=lambda argv: answer["qstat"]))
    try:
        with session_scope(sessions(app)) as session:
            exp_id = add_experiment(session, name="search", owner="ann",
                                    jobs=[(f"1[{i}].vm", 1) for i in range(4)]).id
        answer["qstat"] = recorded.read_text().replace(
            "hpcdet:it:experiment-9:array", f"hpcdet:unit:experiment-{exp_id}:array")
        data = read_queue_snapshot(app.config["HPCDET_BACKEND"], pbs)
        with session_scope(sessions(app)) as session:
            store_snapshot(session, QUEUE, data)
        client = app.test_client()
        rows = client.get("/api/v1/jobs", headers={"X-Hpcdet-User": "ann"}).get_json()["jobs"]
        assert [(row["job_id"], row["type"], row["array_id"]) for row in rows] == [
            (f"1[{i}].vm", "EXPERIMENT", "1[].vm") for i in range(4)]
        grouped = client.get("/api/v1/jobs?arrays=grouped",
                             headers={"X-Hpcdet-User": "ann"}).get_json()["jobs"]
        assert [row["job_id"] for row in grouped] == ["1[].vm"]
        assert grouped[0]["array_tasks"] == {"R": 2, "Q": 2}
        assert f"search (exp {exp_id}, array: 2 Q, 2 R)" in jobs_table(grouped)
    finally:
        app.config["HPCDET_ENGINE"].dispose()


def test_the_queue_page_shows_one_expandable_row_per_array(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    first_trial = seed(queue_app, slurm_queue)
    html = queue_client.get("/queue").get_data(as_text=True)
    assert re.findall(r'<tr data-job-id="([^"]+)"', html) == ["40", "41", "50"]
    assert '<summary>40 <span data-array-tasks>(array: 4 PENDING, 2 RUNNING)</span>' in html
    entries = re.findall(r'<li data-array-entry="([^"]+)">', html)
    assert entries[:3] == ["40_0", "40_1", "40_[2-5%2]"]
    assert f'<a href="/trials/{first_trial}">trial {first_trial}</a>' in html
    assert 'data-change="40"' not in html  # an array changes task by task (expanded)
    assert "arrays=grouped" in re.findall(r'data-poll="([^"]+)"', html)[0]


def test_the_queue_page_expanded_has_a_row_per_entry(
        queue_app: Flask, queue_client: FlaskClient, slurm_queue: FakeSlurmQueue) -> None:
    seed(queue_app, slurm_queue)
    html = queue_client.get("/queue?expand=1").get_data(as_text=True)
    assert re.findall(r'<tr data-job-id="([^"]+)"', html) == [
        "40_0", "40_1", "40_[2-5%2]", "41", "50_[0-3]"]
    assert "<details data-array-id" not in html
    assert "arrays=grouped" not in re.findall(r'data-poll="([^"]+)"', html)[0]
