"""Issue 33's raw words, each in words a researcher reads: a node's ``down*``, a job that
ended ``MISSING``, banner times in UTC, the experiment page's pool, the tasks' kinds."""

from __future__ import annotations

import pytest
from flask import Flask

from hpcdet.dispatcher import JobPhase, JobStatus
from hpcdet.master.db import session_scope
from hpcdet.master.queue.pools import Pool
from hpcdet.master.queue.snapshots import POOLS, store_snapshot
from hpcdet.master.scheduling.job_outcomes import end_cause
from hpcdet.master.web.experiment import pool_name
from hpcdet.master.web.health_banner import problem_html
from hpcdet.master.web.node_words import node_state_words
from hpcdet.master.web.tasks import KIND_WORDS, KINDS


@pytest.mark.parametrize(("state", "words"), [
    ("down*", "down (not responding)"), ("idle", "idle"), ("mixed", "partly in use"),
    ("allocated", "fully in use"), ("idle~", "idle (powered off)"),
    ("drained", "drained"), ("DOWN*$", "down (not responding, in a maintenance reservation)"),
    ("", "state unknown"), ("weird#", "weird (powering up)")])
def test_a_node_state_reads_as_words(state: str, words: str) -> None:
    assert node_state_words(state) == words


@pytest.mark.parametrize(("status", "cause"), [
    (JobStatus("7", JobPhase.MISSING, "MISSING"),
     "job 7 ended without an exit code (the scheduler no longer knows it)"),
    (JobStatus("7", JobPhase.FAILED, "FAILED", exit_code=3), "job 7 ended FAILED (exit code 3)"),
    (JobStatus("7", JobPhase.CANCELLED, "CANCELLED"),
     "job 7 ended CANCELLED without an exit code")])
def test_how_a_job_ended_never_says_exit_code_none(status: JobStatus, cause: str) -> None:
    assert end_cause("7", status) == cause
    assert "None" not in cause and "MISSING" not in cause.split("ended", 1)[1][:9]


def test_a_banner_time_is_a_time_tag_the_page_shows_in_local_time() -> None:
    html = str(problem_html("scheduler unreachable since 2026-11-30 14:02:03 UTC: <b>x</b>"))
    assert html.startswith("scheduler unreachable since <time datetime=\"2026-11-30T14:02:03Z\"")
    assert ">2026-11-30 14:02:03 UTC</time>: &lt;b&gt;x&lt;/b&gt;" in html
    assert str(problem_html("database slow")) == "database slow"


def test_a_pool_the_config_names_is_not_called_the_default(app: Flask) -> None:
    pools = [Pool("gpu", "gpu", nodes_up=1, nodes_total=1, slots_used=0, slots_total=4,
                  default_compute=True), Pool("cpu", "cpu", nodes_up=1, nodes_total=1,
                                              slots_used=0, slots_total=4, default_aux=True)]
    with session_scope(app.config["HPCDET_SESSION_FACTORY"]) as session:
        store_snapshot(session, POOLS, {"pools": [p.to_json() for p in pools], "nodes": []})
    with app.test_request_context():
        assert pool_name({"resources": {"slots_per_trial": 1}}) == "gpu (the default)"
        assert pool_name({"resources": {"resource_pool": "gpu"}}) == "gpu"


def test_every_task_kind_has_words_and_batch_says_job() -> None:
    assert set(KIND_WORDS) == set(KINDS)
    assert KIND_WORDS["batch"] == "batch job"
