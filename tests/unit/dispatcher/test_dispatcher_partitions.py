"""Reading partitions, nodes and pending jobs from recorded Slurm 22.05 output."""

from __future__ import annotations

from typing import Any

import pytest

from hpcdet.dispatcher.slurm.partitions import (
    NodeInfo,
    gpu_count,
    parse_pending,
    parse_sinfo,
    read_partitions,
)
from hpcdet.errors import SchedulerError

# Recorded on the dev cluster (Slurm 22.05.8) with a job holding 3 GPUs on node[2-3]:
# sinfo --noheader --Node --Format=Partition:|,NodeList:|,StateLong:|,CPUs:|,CPUsState:|,...
SINFO_BUSY = """\
debug|node1|idle|4|0/4/0/4|(null)|gpu:0|
batch*|node1|idle|4|0/4/0/4|(null)|gpu:0|
short|node1|idle|4|0/4/0/4|(null)|gpu:0|
urgent|node1|idle|4|0/4/0/4|(null)|gpu:0|
debug|node2|mixed|4|1/3/0/4|gpu:2|gpu:2|
batch*|node2|mixed|4|1/3/0/4|gpu:2|gpu:2|
short|node2|mixed|4|1/3/0/4|gpu:2|gpu:2|
urgent|node2|mixed|4|1/3/0/4|gpu:2|gpu:2|
debug|node3|mixed|4|1/3/0/4|gpu:2|gpu:1|
batch*|node3|mixed|4|1/3/0/4|gpu:2|gpu:1|
short|node3|mixed|4|1/3/0/4|gpu:2|gpu:1|
urgent|node3|mixed|4|1/3/0/4|gpu:2|gpu:1|
"""
# squeue --noheader --array --states=PENDING --format=%P, recorded at the same time: one
# job submitted to "-p batch,short" and one to debug.
SQUEUE_PENDING = "batch,short\ndebug\n"



def test_two_commands_read_every_partition(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"sinfo": SINFO_BUSY, "squeue": SQUEUE_PENDING})
    partitions = read_partitions(runner)
    assert [p.name for p in partitions] == ["batch", "debug", "short", "urgent"]
    assert [c[0] for c in runner.calls] == ["sinfo", "squeue"]
    assert runner.calls[0][1:3] == ("--noheader", "--Node")
    assert "--states=PENDING" in runner.calls[1]


def test_partition_nodes_defaults_and_pending_jobs(recorded_slurm: Any) -> None:
    runner = recorded_slurm({"sinfo": SINFO_BUSY, "squeue": SQUEUE_PENDING})
    by_name = {p.name: p for p in read_partitions(runner)}
    batch = by_name["batch"]
    assert batch.is_default and not by_name["debug"].is_default
    assert batch.nodes[1] == NodeInfo("node2", "mixed", 4, 1, 2, 2, ())
    assert [n.gpus for n in batch.nodes] == [0, 2, 2]
    assert [n.gpus_used for n in batch.nodes] == [0, 2, 1]
    assert {name: p.jobs_pending for name, p in by_name.items()} == {
        "batch": 1, "debug": 1, "short": 1, "urgent": 0}


def test_command_names_are_configurable(recorded_slurm: Any) -> None:
    runner = recorded_slurm()
    assert read_partitions(runner, sinfo="/opt/slurm/bin/sinfo",
                           squeue="/opt/slurm/bin/squeue") == []
    assert [c[0] for c in runner.calls] == ["/opt/slurm/bin/sinfo", "/opt/slurm/bin/squeue"]


def test_a_failing_sinfo_is_reported(recorded_slurm: Any) -> None:
    error = SchedulerError(("sinfo",), 1, "", "slurm_load_partitions: Connection refused")
    with pytest.raises(SchedulerError, match="Connection refused"):
        read_partitions(recorded_slurm({"sinfo": error}))


@pytest.mark.parametrize(("text", "expected"), [
    ("(null)", (0, ())),
    ("gpu:0", (0, ())),
    ("gpu:2", (2, ())),
    ("gpu:a100:4(S:0-1)", (4, ("a100",))),
    ("gpu:a100:1(IDX:0),gpu:v100:2(IDX:1,3)", (3, ("a100", "v100"))),
    ("gpu:(null):0", (0, ())),
    ("mps:100,gpu:tesla:2,nvme:1", (2, ("tesla",))),
    ("gpu:a100:0(IDX:N/A)", (0, ("a100",))),
])  # fmt: skip
def test_gres_values(text: str, expected: tuple[int, tuple[str, ...]]) -> None:
    assert gpu_count(text) == expected


@pytest.mark.parametrize(("state", "up"), [
    ("idle", True), ("mixed", True), ("allocated", True), ("completing", True),
    ("idle~", True), ("mixed-", True), ("planned", True), ("reserved", True),
    ("down", False), ("down*", False), ("idle*", False), ("drained", False),
    ("draining", False), ("drained*", False), ("fail", False), ("failing", False),
    ("inval", False), ("future", False),
])  # fmt: skip
def test_node_up(state: str, up: bool) -> None:
    assert NodeInfo("n", state, 4, 0, 0, 0).up is up


def test_unreadable_sinfo_lines_are_skipped() -> None:
    text = ("garbage\nbatch*|n1|idle|x|0/4/0/4|(null)|gpu:0|\n"
            "batch*|n2|drained|8|0/0/8/8|(null)|gpu:0|\n")
    parsed = parse_sinfo(text)
    assert list(parsed) == [("batch", True)]
    assert parsed["batch", True] == [NodeInfo("n2", "drained", 8, 0, 0, 0)]


def test_pending_counts_each_partition_of_a_job_once() -> None:
    assert parse_pending("a,b\na\n\nb,b\n") == {"a": 2, "b": 2}
