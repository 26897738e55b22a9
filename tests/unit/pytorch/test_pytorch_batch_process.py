"""det.pytorch.experimental: torch_batch_process shards, checkpoints and resumes."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
from typing import Any, ClassVar

import pytest
from hang_guard import HANG_GUARD_S

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")

from batch_worker import Indices  # noqa: E402

from hpcdet.core import _preempt  # noqa: E402
from hpcdet.pytorch import local_core_context  # noqa: E402
from hpcdet.pytorch.experimental import (  # noqa: E402
    TorchBatchProcessor,
    TorchBatchProcessorContext,
    torch_batch_process,
)
from hpcdet.pytorch.experimental._batch_process import run_batch_process  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Recorder(TorchBatchProcessor):
    """Records each batch, the hooks called, and preempts at ``preempt_at`` if set."""

    seen: ClassVar[list[tuple[int, list[int]]]] = []
    events: ClassVar[list[str]] = []
    preempt_at: ClassVar[int | None] = None

    def __init__(self, context: TorchBatchProcessorContext) -> None:
        self.context = context
        self.model = context.prepare_model_for_inference(torch.nn.Linear(1, 1))

    def process_batch(self, batch: Any, batch_idx: int) -> None:
        self.seen.append((batch_idx, self.context.to_device(batch).tolist()))
        with self.context.upload_path() as path:
            (path / f"out-{batch_idx}.json").write_text(json.dumps(batch.tolist()))
        if batch_idx == self.preempt_at:
            _preempt.signal_preemption()  # as Slurm's warning signal would

    def on_checkpoint_start(self) -> None:
        self.events.append(f"checkpoint@{len(self.seen)}")

    def on_finish(self) -> None:
        self.events.append("finish")


@pytest.fixture(autouse=True)
def _reset_recorder() -> None:
    Recorder.seen, Recorder.events, Recorder.preempt_at = [], [], None


def checkpoints(directory: pathlib.Path) -> list[dict[str, Any]]:
    """The metadata of the complete checkpoints in ``directory``, oldest progress first."""
    found = [json.loads(p.read_text()) | {"uuid": p.parent.name}
             for p in directory.glob("*/metadata.json")]
    return sorted(found, key=lambda meta: meta["steps_completed"])


def test_single_rank_processes_every_batch_once(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # outside a job checkpoints go to ./checkpoints
    torch_batch_process(Recorder, Indices(11), batch_size=3, checkpoint_interval=2)
    assert Recorder.seen == [(0, [0, 1, 2]), (1, [3, 4, 5]), (2, [6, 7, 8]), (3, [9, 10])]
    assert Recorder.events == ["checkpoint@2", "checkpoint@4", "finish"]
    steps = [meta["steps_completed"] for meta in checkpoints(tmp_path / "checkpoints")]
    assert steps == [2, 4]
    outputs = list((tmp_path / "checkpoints").glob("*/rank_0/out-*.json"))
    assert len(outputs) == 4


def test_last_partial_interval_is_checkpointed(tmp_path: pathlib.Path) -> None:
    core = local_core_context({}, checkpoint_dir=tmp_path)
    with core:
        assert run_batch_process(core, Recorder, Indices(5), checkpoint_interval=2)
    assert [meta["steps_completed"] for meta in checkpoints(tmp_path)] == [2, 4, 5]
    assert Recorder.events == ["checkpoint@2", "checkpoint@4", "checkpoint@5", "finish"]


def test_max_batches(tmp_path: pathlib.Path) -> None:
    core = local_core_context({}, checkpoint_dir=tmp_path)
    with core:
        run_batch_process(core, Recorder, Indices(10), batch_size=2, max_batches=3)
    assert [idx for idx, _ in Recorder.seen] == [0, 1, 2]
    with pytest.warns(UserWarning, match="exceeds"), local_core_context(
        {}, checkpoint_dir=tmp_path
    ) as core:
        run_batch_process(core, Recorder, Indices(4), max_batches=9)
    assert len(Recorder.seen) == 3 + 4


def test_preempted_run_resumes_after_the_checkpoint(tmp_path: pathlib.Path) -> None:
    Recorder.preempt_at = 4  # stops at the checkpoint after batch 5 (interval 3)
    with local_core_context({}, checkpoint_dir=tmp_path) as core:
        finished = run_batch_process(core, Recorder, Indices(10), checkpoint_interval=3)
    assert not finished
    assert [idx for idx, _ in Recorder.seen] == [0, 1, 2, 3, 4, 5]
    assert "finish" not in Recorder.events
    latest = checkpoints(tmp_path)[-1]
    assert latest["steps_completed"] == 6
    assert json.loads((tmp_path / latest["uuid"] / "batch_completed.json").read_text()) == {
        "batch_completed": 6
    }

    _preempt._reset_for_tests()
    Recorder.seen, Recorder.preempt_at = [], None
    with local_core_context({}, checkpoint_dir=tmp_path, latest_checkpoint=latest["uuid"]) as core:
        assert run_batch_process(core, Recorder, Indices(10), checkpoint_interval=3)
    assert Recorder.seen == [(6, [6]), (7, [7]), (8, [8]), (9, [9])]
    assert Recorder.events[-1] == "finish"
    # The restart writes its outputs under the first run's uuid.
    outputs = {p.name for p in (tmp_path / latest["default_output_uuid"] / "rank_0").iterdir()}
    assert outputs == {f"out-{i}.json" for i in range(10)}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"dataloader_kwargs": {"shuffle": True}}, "shuffle"),
        ({"dataloader_kwargs": {"sampler": None}}, "sampler"),
        ({"batch_size": 2, "dataloader_kwargs": {"batch_size": 2}}, "batch_size"),
        ({"checkpoint_interval": 0}, "checkpoint_interval"),
    ],
)
def test_bad_arguments(tmp_path: pathlib.Path, kwargs: dict[str, Any], match: str) -> None:
    with local_core_context({}, checkpoint_dir=tmp_path) as core, pytest.raises(
        ValueError, match=match
    ):
        run_batch_process(core, Recorder, Indices(4), **kwargs)


def test_two_ranks_shard_every_other_batch(tmp_path: pathlib.Path) -> None:
    args = {"port": free_port(), "world": 2, "size": 23, "batch_size": 2, "interval": 2,
            "out": str(tmp_path)}
    (tmp_path / "args.json").write_text(json.dumps(args))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    env.pop("DET_TRIAL_INFO", None)
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "batch_worker.py"), str(tmp_path / "args.json"),
             str(rank)],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for rank in range(2)
    ]
    outputs = [proc.communicate(timeout=HANG_GUARD_S) for proc in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    ranks = [json.loads((tmp_path / f"rank-{r}.json").read_text()) for r in range(2)]
    # 12 batches of 2 (the last has 1 record): rank 0 gets batches 0, 2, ..., rank 1 the odd.
    assert [b["records"] for b in ranks[0]] == [[4 * i, 4 * i + 1] for i in range(6)]
    assert [b["records"] for b in ranks[1]] == [[4 * i + 2, 4 * i + 3] for i in range(5)] + [[22]]
    assert [b["idx"] for b in ranks[0]] == list(range(6))
    steps = [meta["steps_completed"] for meta in checkpoints(tmp_path / "checkpoints")]
    assert steps == [2, 4, 6]
    run = checkpoints(tmp_path / "checkpoints")[0]["default_output_uuid"]
    assert {p.name for p in (tmp_path / "checkpoints" / run).iterdir()} == {"rank_0", "rank_1"}
