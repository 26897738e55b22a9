"""Two real harness processes joined by torch.distributed (gloo), as srun would start them."""

from __future__ import annotations

import json
import pathlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from harness_fakes import FakeMaster, RankResult, one_node_step, run_harness, write_job_dir

pytestmark = pytest.mark.torch

SCRIPT = """
import json, os, signal
import torch.distributed as dist
import hpcdet.core

with hpcdet.core.init() as core:
    d = core.distributed
    result = {
        "world": dist.get_world_size(),
        "backend": dist.get_backend(),
        "rank": d.rank,
        "layout": [d.size, d.local_rank, d.local_size, d.cross_rank, d.cross_size],
        "allgather": d.allgather(d.rank),
        "gather": d.gather(d.rank * 10),
        "broadcast": d.broadcast(f"hello from {d.rank}"),
    }
    # Every rank reports; only the chief's numbers may reach the master.
    core.train.report_training_metrics(1, {"loss": 1.0 + d.rank})
    core.train.report_validation_metrics(1, {"validation_loss": 0.5 + d.rank})
    if d.rank == 1:
        os.kill(os.getpid(), signal.SIGUSR2)  # only rank 1 is told to stop
    result["preempt"] = core.preempt.should_preempt()
    if d.is_chief:
        with core.checkpoint.store_path({"steps_completed": 1}) as (path, uuid):
            (path / "state").write_text("s")
    d.barrier()
with open(f"result-{result['rank']}.json", "w") as out:
    json.dump(result, out)
"""


@dataclass
class TwoRankRun:
    job: pathlib.Path
    ranks: list[RankResult]
    master: FakeMaster


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoRankRun]:
    """One 2-rank trial, shared by the tests below (starting torch twice takes seconds)."""
    pytest.importorskip("torch")
    master = FakeMaster()
    master.start()
    try:
        job = write_job_dir(tmp_path_factory.mktemp("gloo") / "job", master.url)
        (job / "context" / "train.py").write_text(SCRIPT)
        yield TwoRankRun(job, run_harness(job, one_node_step(job)), master)
    finally:
        master.stop()


def test_both_ranks_exit_0(run: TwoRankRun) -> None:
    for rank in run.ranks:
        assert rank.returncode == 0, rank.stderr


def _result(job: pathlib.Path, rank: int) -> dict[str, object]:
    result: dict[str, object] = json.loads((job / "context" / f"result-{rank}.json").read_text())
    return result


def test_both_ranks_see_a_world_of_two(run: TwoRankRun) -> None:
    job, ranks = run.job, run.ranks
    for rank in (0, 1):
        result = _result(job, rank)
        assert (result["world"], result["backend"]) == (2, "gloo")
        assert result["layout"] == [2, rank, 2, 0, 1]
        assert result["allgather"] == [0, 1]
        assert result["broadcast"] == "hello from 0"
    assert _result(job, 0)["gather"] == [0, 10]
    assert _result(job, 1)["gather"] is None
    assert "hpcdet harness: rank 0/2 local 0/2" in ranks[0].stderr
    assert "hpcdet harness: rank 1/2 local 1/2" in ranks[1].stderr
    assert "master_addr 127.0.0.1:" in ranks[1].stderr


def test_only_the_chiefs_metrics_arrive_exactly_once(run: TwoRankRun) -> None:
    fake_master = run.master
    assert fake_master.reports("training") == [{"steps_completed": 1, "metrics": {"loss": 1.0}}]
    assert fake_master.reports("validation") == [
        {"steps_completed": 1, "metrics": {"validation_loss": 0.5}}
    ]
    assert len(fake_master.checkpoints()) == 1


def test_one_ranks_signal_preempts_both(run: TwoRankRun) -> None:
    job, ranks = run.job, run.ranks
    assert _result(job, 0)["preempt"] is True
    assert _result(job, 1)["preempt"] is True
    assert "got SIGUSR2" in ranks[1].stderr


SUBPROCESS_SCRIPT = """
import json
import hpcdet.core

with hpcdet.core.init() as core:
    d = core.distributed
    ranks = d.allgather(d.rank)
    core.train.report_training_metrics(2, {"loss": 3.0 + d.rank})
with open(f"sub-{d.rank}.json", "w") as out:
    json.dump({"ranks": ranks, "size": d.size}, out)
"""


def test_a_command_entrypoint_gets_its_process_group_from_core_init(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    # The harness leaves the group to a subprocess entrypoint; hpcdet.core.init() joins it
    # from the variables the harness exported.
    pytest.importorskip("torch")
    command = ["sh", "-c", f'exec "{sys.executable}" -W error train.py']
    job = write_job_dir(tmp_path / "job", fake_master.url, entrypoint=command)
    (job / "context" / "train.py").write_text(SUBPROCESS_SCRIPT)
    for process in run_harness(job, one_node_step(job)):
        assert process.returncode == 0, process.stderr
        assert "backend none" in process.stderr
    for rank in (0, 1):
        result = json.loads((job / "context" / f"sub-{rank}.json").read_text())
        assert result == {"ranks": [0, 1], "size": 2}
    assert fake_master.reports("training") == [{"steps_completed": 2, "metrics": {"loss": 3.0}}]
