"""A master shows its own scheduler: the pending-reason words and legend of the pages and the
API, and the capabilities that refuse a config at ``det e create``.

A PBS master (the real PBS backend, a runner that is never called) beside the Slurm one of
conftest.py; the queue snapshot is stored as the refresher stores it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace

import pytest
from flask import Flask
from master_helpers import assert_error, create
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import get_backend
from hpcdet.dispatcher.queue import QueueEntry
from hpcdet.master.app import create_app
from hpcdet.master.db import session_scope
from hpcdet.master.queue.job_queue import queue_snapshot
from hpcdet.master.queue.snapshots import QUEUE, store_snapshot
from hpcdet.master.settings.core import MasterSettings

PBS_COMMENT = "Not Running: Insufficient amount of resource: ncpus (R: 64 A: 4)"
PBS_WORDS = "waiting for free resources (ncpus (R: 64 A: 4))"
CONFIG = """\
name: unit
entrypoint: python3 train.py
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
log_policies:
  - {name: bad node, pattern: "ECC", action: {type: exclude_node}}
"""


def _never(argv: object, *, timeout: float = 60) -> str:
    raise AssertionError(f"no scheduler command expected: {argv}")


@pytest.fixture
def pbs_app(settings: MasterSettings) -> Iterator[Flask]:
    pbs = replace(settings, resource_manager=replace(settings.resource_manager, type="pbs"))
    app = create_app(pbs, backend=get_backend("pbs", runner=_never))
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


def _store_pbs_queue(app: Flask) -> None:
    entry = QueueEntry(job_id="12.pbs01", partition="workq", name="theirs", user="carol",
                       state="Q", reason=PBS_COMMENT, priority=0, nice=0, qos=None,
                       account=None, submit_time=None, tasks=1, cpus=1, nodes=1,
                       pending=True)
    factory: sessionmaker[Session] = app.config["HPCDET_SESSION_FACTORY"]
    with session_scope(factory) as session:
        store_snapshot(session, QUEUE, queue_snapshot([entry]))


def test_a_pbs_masters_queue_page_shows_pbs_words_and_legend(pbs_app: Flask) -> None:
    _store_pbs_queue(pbs_app)
    client = pbs_app.test_client()
    client.set_cookie("hpcdet_user", "ann")
    html = client.get("/queue").get_data(as_text=True)
    assert f'class="why">{PBS_WORDS}</td>' in html.replace("&#39;", "'")
    legend = json.loads(re.search(r'<script type="application/json" id="reason-words">'
                                  r"(.*?)</script>", html, re.DOTALL)[1])
    assert "Insufficient amount of resource" in legend
    assert "Resources" not in legend and "ReqNodeNotAvail" not in legend


def test_a_pbs_masters_api_gives_pbs_words(pbs_app: Flask) -> None:
    _store_pbs_queue(pbs_app)
    client = pbs_app.test_client()
    scheduler = client.get("/api/v1/master").get_json()["scheduler"]
    assert (scheduler["name"], scheduler["display_name"]) == ("pbs", "PBS")
    assert "Insufficient amount of resource" in scheduler["pending_reasons"]
    assert "Resources" not in scheduler["pending_reasons"]
    assert scheduler["capabilities"]["exclude_nodes"]["supported"] is False
    [row] = client.get("/api/v1/jobs", headers={"X-Hpcdet-User": "ann"}).get_json()["jobs"]
    assert row["reason_words"] == PBS_WORDS
    found = client.get("/api/v1/jobs?q=free+resources", headers={"X-Hpcdet-User": "ann"})
    assert [job["job_id"] for job in found.get_json()["jobs"]] == ["12.pbs01"]


def test_a_slurm_masters_api_gives_slurms_legend(app: Flask) -> None:
    scheduler = app.test_client().get("/api/v1/master").get_json()["scheduler"]
    assert scheduler["name"] == "slurm"
    assert scheduler["pending_reasons"]["Resources"] == "waiting for free resources"
    assert all(c["supported"] for c in scheduler["capabilities"].values())


def test_a_policy_pbs_cannot_honour_is_refused_at_creation(pbs_app: Flask) -> None:
    response = create(pbs_app.test_client(), CONFIG)
    assert_error(response, 400, "invalid_config")
    text = json.dumps(response.get_json())
    assert "<config>.log_policies[0]: PBS cannot keep a job off named nodes" in text


def test_the_same_policy_is_accepted_on_slurm(app: Flask) -> None:
    assert create(app.test_client(), CONFIG).status_code == 201
