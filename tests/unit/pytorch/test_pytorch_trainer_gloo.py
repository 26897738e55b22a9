"""Real multi-process trials: 2 and 4 ranks joined by gloo on this machine."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
from typing import Any

import pytest
from hang_guard import HANG_GUARD_S

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

HERE = pathlib.Path(__file__).resolve().parent
WORKER = HERE / "rank_worker.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def run_ranks(
    tmp: pathlib.Path,
    world: int,
    config: dict[str, Any],
    hparams: dict[str, Any],
    latest: str | None = None,
) -> list[dict[str, Any]]:
    """Start ``world`` rank processes and wait for them; each rank's results."""
    tmp.mkdir(parents=True, exist_ok=True)
    args = {
        "port": free_port(),
        "world": world,
        "config": config,
        "hparams": {"global_batch_size": 8, "lr": 0.01, **hparams},
        "checkpoint_dir": str(tmp / "ckpt"),
        "latest": latest,
        "out": str(tmp),
    }
    (tmp / "args.json").write_text(json.dumps(args))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    env.pop("DET_TRIAL_INFO", None)
    procs = [
        subprocess.Popen(
            [sys.executable, "-W", "error", str(WORKER), str(tmp / "args.json"), str(rank)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(world)
    ]
    outputs = [proc.communicate(timeout=HANG_GUARD_S) for proc in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    return [json.loads((tmp / f"rank-{rank}.json").read_text()) for rank in range(world)]


def config(length: dict[str, int], **extra: Any) -> dict[str, Any]:
    return {"searcher": {"max_length": length}, "reproducibility": {"experiment_seed": 3}, **extra}


@pytest.fixture(scope="module", params=[2, 4])
def ranks(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """One trial of 6 epochs over 61 records (not divisible by 2 or 4), validated per epoch."""
    world: int = request.param
    cfg = config({"epochs": 6}, scheduling_unit=3, min_validation_period={"epochs": 1})
    tmp = tmp_path_factory.mktemp(f"world{world}")
    return run_ranks(tmp, world, cfg, {"train_size": 61})


def test_weights_are_identical_on_every_rank(ranks: list[dict[str, Any]]) -> None:
    assert all(rank["weights"] == ranks[0]["weights"] for rank in ranks)


def test_every_record_is_trained_once_per_epoch_across_ranks(ranks: list[dict[str, Any]]) -> None:
    seen = sorted(i for rank in ranks for i in rank["seen"])
    assert seen == sorted(list(range(61)) * 6)
    assert len({rank["batches"] for rank in ranks}) == 1


def test_the_loss_falls(ranks: list[dict[str, Any]]) -> None:
    losses = [report["loss"] for report in ranks[0]["training"]]
    assert losses[-1] < losses[0] / 2


def test_training_metrics_are_averaged_across_ranks(ranks: list[dict[str, Any]]) -> None:
    # Each rank reports its rank number as a metric: the average is the mean rank.
    expected = sum(range(len(ranks))) / len(ranks)
    for rank in ranks:
        assert {report["rank"] for report in rank["training"]} == {expected}


def test_validation_metrics_are_reduced_to_the_same_values(ranks: list[dict[str, Any]]) -> None:
    final = ranks[0]["validation"][-1]
    assert all(rank["validation"][-1] == final for rank in ranks)
    assert final["count"] == 30  # SUM over the ranks' shards of the 30 records
    assert final["epochs"] == 6


def test_every_rank_checks_preemption_at_the_same_batches(ranks: list[dict[str, Any]]) -> None:
    checks = ranks[0]["preempt_checks"]
    assert checks  # scheduling_unit=3 and per-epoch validation
    assert all(rank["preempt_checks"] == checks for rank in ranks)


@pytest.mark.parametrize("ranks", [2, 4])  # 4: sums of more than two ranks (_allreduce.py)
def test_one_ranks_preemption_stops_all_and_resume_is_bit_identical(
    tmp_path: pathlib.Path, ranks: int,
) -> None:
    cfg = config({"batches": 24}, scheduling_unit=5, min_checkpoint_period={"batches": 4})
    full = run_ranks(tmp_path / "full", ranks, cfg, {"train_size": 61})
    cut = run_ranks(
        tmp_path / "cut", ranks, cfg, {"train_size": 61, "preempt_at": 6, "preempt_rank": 1}
    )
    assert [rank["outcome"] for rank in cut] == ["stopped"] * ranks
    assert [rank["batches"] for rank in cut] == [8] * ranks  # the check after the checkpoint
    steps = {
        json.loads(path.read_text())["steps_completed"]: path.parent.name
        for path in (tmp_path / "cut" / "ckpt").glob("*/metadata.json")
    }
    assert sorted(steps) == [4, 8]
    resumed = run_ranks(tmp_path / "cut", ranks, cfg, {"train_size": 61}, latest=steps[8])
    assert [rank["outcome"] for rank in resumed] == ["completed"] * ranks
    assert resumed[0]["weights"] == full[0]["weights"]
