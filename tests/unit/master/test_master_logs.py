"""Collecting job logs into ``trial_logs``: ranks, nodes (block layout), offsets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from log_seed import TWO_BY_TWO, add_experiment, add_job, add_trial, sessions
from sqlalchemy import select

from hpcdet.dispatcher.transport.local import LOCAL
from hpcdet.master.models import TrialLog
from hpcdet.master.reports.logs import RankPlacement, ingest_job_logs


@pytest.mark.parametrize(("nodes", "config", "expected"), [
    # block order: two ranks per node on two nodes; the batch script on the first
    ("node[1-2]", TWO_BY_TWO, {0: "node1", 1: "node1", 2: "node2", 3: "node2",
                               None: "node1"}),
    ("gpu-[01-03]", {"resources": {"slots_per_trial": 3}, "slurm": {"slots_per_node": 1}},
     {0: "gpu-01", 1: "gpu-02", 2: "gpu-03", None: "gpu-01"}),
    # without slots_per_node every rank is on one node
    ("a7", {"resources": {"slots_per_trial": 4}}, {0: "a7", 3: "a7", None: "a7"}),
    # a rank past the node list is not guessed
    ("node1", TWO_BY_TWO, {1: "node1", 2: None}),
    # node list not known yet, empty or malformed: no node, but no failure either
    (None, TWO_BY_TWO, {0: None, None: None}),
    ("", TWO_BY_TWO, {0: None, None: None}),
    ("node[1-", TWO_BY_TWO, {0: None, None: None}),
])
def test_ranks_are_placed_in_block_order(nodes: str | None, config: dict[str, Any],
                                         expected: dict[int | None, str | None]) -> None:
    placement = RankPlacement.of(nodes, config)
    assert {rank: placement.node_of(rank) for rank in expected} == expected


def test_a_config_slurm_cannot_lay_out_gives_no_rank_nodes() -> None:
    config = {"resources": {"slots_per_trial": 3}, "slurm": {"slots_per_node": 2}}
    placement = RankPlacement.of("node[1-2]", config)
    assert (placement.node_of(0), placement.node_of(None)) == (None, None)


# A Determined config may carry a slurm: section too; on PBS only pbs: places the ranks.
BOTH_SECTIONS = {"resources": {"slots_per_trial": 4}, "slurm": {"slots_per_node": 4},
                 "pbs": {"slots_per_node": 2}}


@pytest.mark.parametrize(("scheduler", "expected"), [
    ("pbs", {0: "node1", 1: "node1", 2: "node2", 3: "node2"}),
    ("slurm", {0: "node1", 3: "node1"}),
])
def test_ranks_are_placed_by_the_scheduler_that_ran_the_job(
        scheduler: str, expected: dict[int | None, str | None]) -> None:
    placement = RankPlacement.of("node[1-2]", BOTH_SECTIONS, scheduler)
    assert {rank: placement.node_of(rank) for rank in expected} == expected


def _stored(app: Flask) -> list[tuple[Any, ...]]:
    with sessions(app)() as session:
        rows = session.scalars(select(TrialLog).order_by(TrialLog.id))
        return [(r.stream, r.rank, r.node, r.line, r.job_id) for r in rows]


def test_every_line_is_stored_with_its_rank_and_node(app: Flask, tmp_path: Path) -> None:
    (tmp_path / "slurm-101.out").write_text(
        "0: start\n3: on the second node\nbatch script line\n2: partial")
    (tmp_path / "slurm-101.err").write_text("1: warning\n")
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session), job_dir=str(tmp_path))
        job = add_job(session, trial, nodes="node[1-2]")
        assert ingest_job_logs(session, job, trial, TWO_BY_TWO, final=False, files=LOCAL) == 4
    assert _stored(app) == [
        ("stdout", 0, "node1", "start", "101"),
        ("stdout", 3, "node2", "on the second node", "101"),
        ("stdout", None, "node1", "batch script line", "101"),
        ("stderr", 1, "node1", "warning", "101")]


def test_the_rest_comes_next_time_and_the_unfinished_line_when_final(
        app: Flask, tmp_path: Path) -> None:
    out = tmp_path / "slurm-101.out"
    out.write_text("0: one\n2: par")
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session), job_dir=str(tmp_path))
        job = add_job(session, trial, nodes="node[1-2]")
        ingest_job_logs(session, job, trial, TWO_BY_TWO, final=False, files=LOCAL)
        assert ingest_job_logs(session, job, trial, TWO_BY_TWO, final=False, files=LOCAL) == 0
        with out.open("a") as handle:
            handle.write("tial\n1: last, no newline")
        assert ingest_job_logs(session, job, trial, TWO_BY_TWO, final=True, files=LOCAL) == 2
    assert [(rank, node, line) for _, rank, node, line, _ in _stored(app)] == [
        (0, "node1", "one"), (2, "node2", "partial"), (1, "node1", "last, no newline")]


def test_a_file_truncated_under_the_reader_is_read_again_from_its_start(
        app: Flask, tmp_path: Path) -> None:
    """A site template that lets Slurm truncate the output of a requeued job: the new run's
    lines are collected, not skipped up to the old run's length."""
    out = tmp_path / "slurm-101.out"
    out.write_text("0: first run, a long line of output\n")
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session), job_dir=str(tmp_path))
        job = add_job(session, trial, nodes="node[1-2]")
        ingest_job_logs(session, job, trial, TWO_BY_TWO, final=False, files=LOCAL)
        out.write_text("0: rerun\n")
        assert ingest_job_logs(session, job, trial, TWO_BY_TWO, final=False, files=LOCAL) == 1
    assert [line for *_, line, _ in _stored(app)] == ["first run, a long line of output",
                                                      "rerun"]


def test_lines_read_before_the_node_list_is_known_have_no_node(app: Flask,
                                                                tmp_path: Path) -> None:
    (tmp_path / "slurm-101.out").write_text("0: early\nscript\n")
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session), job_dir=str(tmp_path))
        job = add_job(session, trial, nodes=None)
        ingest_job_logs(session, job, trial, TWO_BY_TWO, final=False, files=LOCAL)
    assert [(rank, node) for _, rank, node, _, _ in _stored(app)] == [(0, None), (None, None)]


def test_a_job_without_an_id_reads_nothing(app: Flask, tmp_path: Path) -> None:
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session), job_dir=str(tmp_path))
        job = add_job(session, trial, job_id=None)
        assert ingest_job_logs(session, job, trial, TWO_BY_TWO, final=True, files=LOCAL) == 0
        assert job.log_offsets == {}


def test_a_pbs_jobs_lines_name_the_node_of_their_rank(app: Flask, tmp_path: Path) -> None:
    # PBS writes <id>.OU/<id>.ER; the layout is pbs.slots_per_node's, not slurm's.
    (tmp_path / "7.pbs01.OU").write_text("0: first node\n2: second node\n")
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session), job_dir=str(tmp_path))
        job = add_job(session, trial, job_id="7.pbs01", nodes="node[1-2]")
        assert ingest_job_logs(session, job, trial, BOTH_SECTIONS, final=True,
                               files=LOCAL, scheduler="pbs") == 2
    assert [(rank, node) for _, rank, node, _, _ in _stored(app)] == [(0, "node1"),
                                                                      (2, "node2")]


def test_a_stored_layout_places_the_ranks_whatever_the_config_says_now() -> None:
    # Submitted two ranks on each of two nodes; the config alone would now put all on one.
    placement = RankPlacement.of("node[1-2]", {"resources": {"slots_per_trial": 4},
                                               "slurm": {"slots_per_node": 4}}, per_node=2)
    assert [placement.node_of(rank) for rank in (0, 1, 2, 3)] == ["node1", "node1",
                                                                  "node2", "node2"]


@pytest.mark.parametrize(("scheduler", "log_file"), [("slurm", "slurm-101.out"),
                                                     ("pbs", "101.OU")])
def test_a_jobs_lines_are_attributed_by_the_layout_it_was_submitted_with(
        app: Flask, tmp_path: Path, scheduler: str, log_file: str) -> None:
    # The job asked for 1 rank on each of 4 nodes; its config (changed default, another
    # pool) would now derive 4 ranks on one node: the stored layout wins.
    (tmp_path / log_file).write_text("0: a\n1: b\n3: d\n")
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session), job_dir=str(tmp_path))
        job = add_job(session, trial, nodes="node[1-4]", node_count=4, slots_per_node=1)
        assert ingest_job_logs(session, job, trial, BOTH_SECTIONS, final=True, files=LOCAL,
                               scheduler=scheduler) == 3
    assert [(rank, node) for _, rank, node, _, _ in _stored(app)] == [
        (0, "node1"), (1, "node2"), (3, "node4")]


def test_a_job_recorded_before_its_layout_was_stored_is_placed_by_its_config(
        app: Flask, tmp_path: Path) -> None:
    (tmp_path / "slurm-101.out").write_text("0: a\n2: c\n")
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session), job_dir=str(tmp_path))
        job = add_job(session, trial, nodes="node[1-2]")
        assert (job.node_count, job.slots_per_node) == (None, None)
        ingest_job_logs(session, job, trial, TWO_BY_TWO, final=True, files=LOCAL)
    assert [(rank, node) for _, rank, node, _, _ in _stored(app)] == [(0, "node1"),
                                                                      (2, "node2")]
