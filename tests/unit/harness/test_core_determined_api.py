"""The Determined names Determined's tutorials use: LOG_FORMAT, get_cluster_info(),
DistributedContext's signature and getters, report_progress, searcher.operations(),
wrap_rank, and a script creating its own process group."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hang_guard import HANG_GUARD_S
from harness_fakes import HANG_TIMEOUT

import hpcdet
import hpcdet.core
from hpcdet._info import cluster_info_from, rank_addresses
from hpcdet.core import DistributedContext, DummyDistributedContext, SearcherMode, Unit
from hpcdet.core._searcher import SearcherContext, parse_max_length
from hpcdet.harness.entrypoint import parse_entrypoint
from hpcdet.job.trial_info import TrialInfo
from hpcdet.launch import torch_distributed, wrap_rank

REPO = Path(__file__).resolve().parents[3]
JOB = TrialInfo(master_url="http://m:8080", experiment_id=3, trial_id=7, trial_seed=11,
                hparams={"lr": 0.1}, experiment_config={"data": {"url": "s3://x"}},
                checkpoint_dir="/ckpt", run_id=2, latest_checkpoint=None)
TWO_NODES = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "GROUP_WORLD_SIZE": "2",
             "MASTER_ADDR": "10.0.0.1", "SLURM_STEP_NODELIST": "node[1-2]",
             "SLURM_STEP_TASKS_PER_NODE": "4(x2)", "SLURM_CLUSTER_NAME": "dev"}


def test_log_format_puts_the_level_first() -> None:
    assert hpcdet.LOG_FORMAT == "%(levelname)s: [%(process)s] %(name)s: %(message)s"


@pytest.mark.usefixtures("off_cluster")
def test_cluster_info_is_none_outside_a_job() -> None:
    assert hpcdet.get_cluster_info() is None


def test_cluster_info_describes_one_container_per_rank() -> None:
    info = cluster_info_from(JOB, TWO_NODES)
    assert (info.trial.trial_id, info.trial.experiment_id, info.trial.trial_seed) == (7, 3, 11)
    assert info.trial.hparams == {"lr": 0.1} and info.user_data == {"url": "s3://x"}
    assert info.container_rank == 5 and info.slot_ids == [1]
    assert info.container_addrs == ["10.0.0.1"] * 4 + ["node2"] * 4
    assert (info.cluster_id, info.task_type, info.allocation_id) == ("dev", "TRIAL", "3.7.2")
    assert info.latest_checkpoint is None and info.container_slot_counts == [1] * 8
    assert "secret" not in repr(info)


def test_ranks_of_one_node_all_reach_the_chief_on_its_address() -> None:
    assert rank_addresses({"MASTER_ADDR": "127.0.0.1", "GROUP_WORLD_SIZE": "1"}, 3) == [
        "127.0.0.1"] * 3


def test_distributed_context_takes_determineds_arguments() -> None:
    dist = DistributedContext(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0,
                              cross_size=1, chief_ip="10.0.0.1", pub_port=1, pull_port=2,
                              port_offset=3, force_tcp=True)
    getters = (dist.get_rank(), dist.get_size(), dist.get_local_rank(), dist.get_local_size(),
               dist.get_cross_rank(), dist.get_cross_size(), dist.get_num_agents())
    assert getters == (0, 1, 0, 1, 0, 1, 1)
    assert dist.allgather_local("x") == ["x"] and dist.broadcast_local("y") == "y"


def test_from_torch_distributed_reads_the_env_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
           "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1"}
    dist = DistributedContext.from_torch_distributed(environ=env)
    assert (dist.rank, dist.size, dist.cross_size) == (0, 1, 1)
    with pytest.raises(ValueError, match=r"\$RANK is not set"):
        DistributedContext.from_torch_distributed(environ={})


def test_horovod_and_deepspeed_constructors_say_what_is_missing() -> None:
    with pytest.raises(RuntimeError, match="needs the horovod module"):
        DistributedContext.from_horovod(None)
    with pytest.raises(RuntimeError, match="needs deepspeed"):
        DistributedContext.from_deepspeed()


STORE_WORKER = """
import sys
from hpcdet.core import DistributedContext
rank, port = int(sys.argv[1]), int(sys.argv[2])
d = DistributedContext(rank=rank, size=3, local_rank=rank % 2, local_size=2 if rank < 2 else 1,
                       cross_rank=rank // 2, cross_size=2, chief_ip="127.0.0.1", pub_port=port)
for i in range(20):
    assert d.allgather(rank * i) == [0, i, 2 * i]
assert d.broadcast(rank + 7) == 7
assert d.gather(rank) == ([0, 1, 2] if rank == 0 else None)
print(d.allgather_local(rank))
"""


def test_a_hand_built_context_exchanges_through_the_chiefs_store(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", STORE_WORKER, str(rank), str(port)],
                              env=env, stdout=subprocess.PIPE, text=True) for rank in range(3)]
    outputs = [proc.communicate(timeout=HANG_TIMEOUT)[0].strip() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0]
    assert outputs == ["[0, 1]", "[0, 1]", "[2]"]


@pytest.mark.usefixtures("off_cluster")
def test_report_progress_checks_and_prints(capsys: pytest.CaptureFixture[str]) -> None:
    with hpcdet.core.init() as core:
        core.train.report_progress(0.25)
        with pytest.raises(ValueError, match="between 0 and 1"):
            core.train.report_progress(1.5)
        core.train.report_training_metrics(1, {"loss": 1.0}, batch_metrics=[{"loss": 1.0}])
        with pytest.raises(ValueError, match=r"batch_metrics\[0\]"):
            core.train.report_training_metrics(1, {"loss": 1.0}, batch_metrics=[{"l": "x"}])
    assert "hpcdet core (dummy): progress 0.25" in capsys.readouterr().err


class Broadcasts:
    """Collectives of a rank that is not the chief: the chief broadcast 5 then None."""

    def __init__(self) -> None:
        self.values: list[Any] = [5, None]

    def broadcast(self, obj: Any, src: int) -> Any:
        return self.values.pop(0)


def test_searcher_yields_one_operation_of_max_length_with_a_warning() -> None:
    searcher = SearcherContext(DummyDistributedContext(), 3, Unit.EPOCHS)
    with pytest.warns(FutureWarning, match="deprecated in Determined 0.38.0"):
        ops = searcher.operations()
        op = next(ops)
    assert op.length == 3 and searcher.get_configured_units() is Unit.EPOCHS
    with pytest.raises(RuntimeError, match="report_completed"):
        next(ops)
    op2 = next(iter_ops(searcher))
    op2.report_completed(0.5)
    with pytest.raises(RuntimeError, match="only call op.report_completed"):
        op2.report_completed(0.5)


def iter_ops(searcher: SearcherContext) -> Any:
    with pytest.warns(FutureWarning):
        yield from searcher.operations()


def test_workers_get_the_chiefs_operations() -> None:
    worker = DistributedContext(rank=1, size=2, local_rank=1, local_size=2, cross_rank=0,
                                cross_size=1, collectives=Broadcasts())  # type: ignore[arg-type]
    with pytest.warns(FutureWarning):
        ops = list(SearcherContext(worker, 5).operations())
    assert [op.length for op in ops] == [5]
    with pytest.raises(RuntimeError, match="chief worker"):
        ops[0].report_completed(1.0)
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="non-chief"):
        list(SearcherContext(worker, 5).operations(SearcherMode.ChiefOnly))


def test_max_length_forms() -> None:
    assert parse_max_length({"batches": 10}) == (10, Unit.BATCHES)
    assert parse_max_length(50) == (50, None)
    assert parse_max_length(None) == (None, None)
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="max_length set"):
        next(SearcherContext(DummyDistributedContext(), None).operations())


def test_wrap_rank_entrypoints_run_the_wrapped_command() -> None:
    for module in ("determined.launch.wrap_rank", "hpcdet.launch.wrap_rank"):
        entry = parse_entrypoint(f"python3 -m {module} RANK -- python3 train.py --x 1")
        assert (entry.kind, entry.argv) == ("script", ("train.py", "--x", "1"))


def test_wrap_rank_parses_numbers_and_variables() -> None:
    assert wrap_rank.parse_args(["3", "--", "echo"], {}) == (3, ["echo"])
    assert wrap_rank.parse_args(["--no-redirect-stdio", "A,B", "echo", "hi"], {"B": "2"}) == (
        2, ["echo", "hi"])
    with pytest.raises(wrap_rank.WrapRankError, match="not in os.environ"):
        wrap_rank.parse_args(["NOPE", "echo"], {})


def test_launchers_print_their_usage_and_refuse_bad_arguments(
        capsys: pytest.CaptureFixture[str]) -> None:
    for launcher in (torch_distributed, wrap_rank):
        for flag in ("-h", "--help"):
            assert launcher.main([flag]) == 0
            assert f"python3 -m hpcdet.launch.{launcher.__name__.rpartition('.')[2]}" in (
                capsys.readouterr().out)
        assert launcher.main([]) == 2
        assert "hpcdet " in capsys.readouterr().err


def test_wrap_rank_labels_another_ranks_lines(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "RANK": "0"}
    result = subprocess.run([sys.executable, "-m", "hpcdet.launch.wrap_rank", "3", "--",
                             sys.executable, "-c", "print('a'); print('b'); raise SystemExit(4)"],
                            env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert (result.returncode, result.stdout) == (4, "[rank=3] a\n[rank=3] b\n")


OWN_GROUP = """
import json, os, sys
import torch.distributed as dist
from hpcdet.job import process_group
from hpcdet.job.cluster_env import ClusterEnv
cluster = ClusterEnv.single_process().export_torch_env()
process_group.init_process_group(cluster, "gloo", timeout_s=60)
port = os.environ["MASTER_PORT"]
with process_group.script_may_own_group():
    dist.init_process_group("gloo")
print(json.dumps([dist.get_world_size(), int(os.environ["MASTER_PORT"]) - int(port)]))
process_group.teardown(barrier=True)
"""


def test_a_script_may_create_its_own_group_over_the_harnesss() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MASTER_"))}
    result = subprocess.run([sys.executable, "-c", OWN_GROUP], capture_output=True, text=True,
                            env={**env, "PYTHONPATH": str(REPO)}, timeout=HANG_TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [1, 1]
    assert "creates its own process group" in result.stderr
