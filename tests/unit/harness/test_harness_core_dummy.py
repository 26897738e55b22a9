"""The Core API outside a job: dummy contexts, metric validation, distributed basics."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from fractions import Fraction
from typing import Any

import pytest
from hang_guard import HANG_GUARD_S
from harness_fakes import REPO_ROOT

import hpcdet.core
from hpcdet.core import DistributedContext, DummyDistributedContext


@pytest.mark.usefixtures("off_cluster")
def test_init_off_cluster_gives_dummy_contexts(tmp_path: pathlib.Path) -> None:
    with hpcdet.core.init(checkpoint_storage=tmp_path, hparams={"lr": 0.5}) as core:
        assert isinstance(core.train, hpcdet.core.DummyTrainContext)
        assert isinstance(core.checkpoint, hpcdet.core.DummyCheckpointContext)
        assert isinstance(core.preempt, hpcdet.core.DummyPreemptContext)
        assert isinstance(core.distributed, DummyDistributedContext)
        assert core.info.hparams == {"lr": 0.5}
        assert (core.info.trial_id, core.info.in_job, core.info.latest_checkpoint) == (
            None,
            False,
            None,
        )
        assert core.checkpoint.checkpoint_dir == tmp_path
        assert core.preempt.should_preempt() is False


@pytest.mark.usefixtures("off_cluster")
def test_dummy_metrics_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    with hpcdet.core.init() as core:
        core.train.report_training_metrics(10, {"loss": 0.25})
        core.train.report_validation_metrics(10, {"accuracy": 0.9})
        assert core.train.latest_validation is not None
        assert core.train.latest_validation.metrics == {"accuracy": 0.9}
    err = capsys.readouterr().err
    assert "training steps_completed=10 loss=0.25" in err
    assert "validation steps_completed=10 accuracy=0.9" in err


SCRIPT = """
import hpcdet.core
with hpcdet.core.init(hparams={"steps": 3}) as core:
    for step in range(1, core.info.hparams["steps"] + 1):
        core.train.report_training_metrics(step, {"loss": 1.0 / step})
    with core.checkpoint.store_path({"steps_completed": 3}) as (path, uuid):
        (path / "weights").write_text("w")
    print("checkpoint", uuid)
"""


def test_a_script_runs_with_the_dummy_core(tmp_path: pathlib.Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DET_", "SLURM_"))}
    env["PYTHONPATH"] = str(REPO_ROOT)
    result = subprocess.run(
        [sys.executable, "-W", "error", "train.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("hpcdet core (dummy): training") == 3
    uuid = result.stdout.split()[-1]
    assert (tmp_path / "checkpoints" / uuid / "weights").read_text() == "w"


class Scalar:
    """Stands in for a 0-d tensor or numpy scalar: a number behind ``.item()``."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def item(self) -> Any:
        if isinstance(self.value, list):
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.value


@pytest.mark.usefixtures("off_cluster")
def test_metric_values_are_converted_to_plain_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    with hpcdet.core.init() as core:
        core.train.report_training_metrics(
            1, {"a": 1, "b": 2.5, "c": Scalar(0.5), "d": Fraction(1, 4)}
        )
    assert "a=1 b=2.5 c=0.5 d=0.25" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        ({"loss": float("nan")}, "metric 'loss' must be finite, not nan"),
        ({"loss": float("inf")}, "metric 'loss' must be finite, not inf"),
        ({"loss": "0.1"}, "metric 'loss' must be a number, not str"),
        ({"loss": None}, "metric 'loss' must be a number, not NoneType"),
        ({"ok": True}, "metric 'ok' must be a number, not bool"),
        ({"loss": Scalar([1, 2])}, "metric 'loss' must be a single number"),
        ({"loss": Scalar(float("nan"))}, "metric 'loss' must be finite"),
        ({"": 1.0}, "metric names must be non-empty strings"),
        ({}, "metrics must be a non-empty dict"),
    ],
)
@pytest.mark.usefixtures("off_cluster")
def test_bad_metric_values_name_the_metric(metrics: dict[str, Any], message: str) -> None:
    with hpcdet.core.init() as core, pytest.raises(ValueError, match=message):
        core.train.report_training_metrics(1, metrics)


@pytest.mark.parametrize(
    ("steps", "message"), [(-1, ">= 0"), (1.5, "must be an int"), (True, "int")]
)
@pytest.mark.usefixtures("off_cluster")
def test_bad_steps_completed(steps: Any, message: str) -> None:
    with hpcdet.core.init() as core, pytest.raises(ValueError, match=message):
        core.train.report_validation_metrics(steps, {"loss": 1.0})


@pytest.mark.usefixtures("off_cluster")
def test_unknown_group_is_refused() -> None:
    with hpcdet.core.init() as core, pytest.raises(ValueError, match="group must be one of"):
        core.train.report_metrics("testing", 1, {"loss": 1.0})


class RecordingCollectives:
    """Collectives of a pretend 2-rank world where the other rank answers ``peer``."""

    def __init__(self, peer: Any) -> None:
        self.peer = peer
        self.calls: list[str] = []

    def allgather(self, obj: Any) -> list[Any]:
        self.calls.append("allgather")
        return [obj, self.peer]

    def broadcast(self, obj: Any, src: int) -> Any:
        self.calls.append("broadcast")
        return obj

    def gather(self, obj: Any, dst: int) -> list[Any] | None:
        self.calls.append("gather")
        return [obj, self.peer]

    def barrier(self) -> None:
        self.calls.append("barrier")


def _rank(rank: int, collectives: RecordingCollectives) -> DistributedContext:
    return DistributedContext(
        rank=rank,
        size=2,
        local_rank=rank,
        local_size=2,
        cross_rank=0,
        cross_size=1,
        collectives=collectives,
    )


@pytest.mark.usefixtures("off_cluster")
def test_non_chief_validates_but_does_not_report(capsys: pytest.CaptureFixture[str]) -> None:
    with hpcdet.core.init(distributed=_rank(1, RecordingCollectives(None))) as core:
        core.train.report_training_metrics(1, {"loss": 1.0})
        with pytest.raises(ValueError, match="finite"):
            core.train.report_training_metrics(1, {"loss": float("nan")})
        assert core.train.steps_completed is None
    assert "hpcdet core (dummy)" not in capsys.readouterr().err


def test_dummy_distributed_collectives_are_trivial() -> None:
    dist = DummyDistributedContext()
    assert (dist.rank, dist.size, dist.is_chief) == (0, 1, True)
    assert dist.allgather("x") == ["x"]
    assert dist.broadcast("x") == "x"
    assert dist.gather("x") == ["x"]
    dist.barrier()


def test_a_context_over_several_nodes_needs_the_chief_address() -> None:
    with pytest.raises(ValueError, match="no chief_ip was given"):
        DistributedContext(rank=0, size=2, local_rank=0, local_size=1, cross_rank=0, cross_size=2)


def test_an_inconsistent_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="local_rank 2 is not in"):
        DistributedContext(rank=0, size=2, local_rank=2, local_size=2, cross_rank=0, cross_size=1)


def test_distributed_context_delegates_to_its_collectives() -> None:
    collectives = RecordingCollectives("peer")
    dist = _rank(0, collectives)
    assert dist.allgather("me") == ["me", "peer"]
    assert dist.gather("me") == ["me", "peer"]
    assert dist.broadcast("me") == "me"
    dist.barrier()
    assert collectives.calls == ["allgather", "gather", "broadcast", "barrier"]
    assert "rank=0, size=2" in repr(dist)


def test_importing_core_and_harness_pulls_in_neither_torch_nor_the_master() -> None:
    code = (
        "import sys, hpcdet.core, hpcdet.harness.main;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'flask', 'sqlalchemy')"
        " or m.startswith('hpcdet.master')];"
        "print(bad)"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
