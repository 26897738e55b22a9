"""hpcdet.pytorch.samplers (Determined's names and lengths) and context.wrap_scaler
(the GradScaler travels with the checkpoint)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import BatchSampler, SequentialSampler

import hpcdet.core
from hpcdet.pytorch import PyTorchTrialContext, samplers
from hpcdet.pytorch._checkpoint import load_into, trial_state


def _batches(n: int, size: int) -> BatchSampler:
    return BatchSampler(SequentialSampler(range(n)), size, drop_last=False)


def test_distributed_batch_sampler_shards_like_determined() -> None:
    shard = samplers.DistributedBatchSampler(_batches(10, 2), num_workers=2, rank=1)
    assert list(shard) == [[2, 3], [6, 7]] and len(shard) == 2
    with pytest.raises(ValueError):
        samplers.DistributedBatchSampler(_batches(4, 2), num_workers=2, rank=2)
    assert list(samplers.DistributedSampler(SequentialSampler(range(5)), 2, 0)) == [0, 2, 4]


def test_skip_repeat_and_shuffle() -> None:
    skipped = samplers.SkipBatchSampler(_batches(6, 2), skip=2)
    assert list(skipped) == [[4, 5]] and len(skipped) == 3
    assert list(samplers.SkipSampler(SequentialSampler(range(3)), 1)) == [1, 2]
    repeat = iter(samplers.RepeatBatchSampler(_batches(2, 2)))
    assert [next(repeat) for _ in range(3)] == [[0, 1]] * 3
    first = list(samplers.ReproducibleShuffleSampler(SequentialSampler(range(20)), seed=3))
    again = list(samplers.ReproducibleShuffleSampler(SequentialSampler(range(20)), seed=3))
    assert first == again and sorted(first) == list(range(20)) and first != list(range(20))
    assert len(samplers.ReproducibleShuffleBatchSampler(_batches(6, 2), seed=1)) == 3


def _context(tmp_path: Path) -> PyTorchTrialContext:
    core = hpcdet.core.init(checkpoint_storage=tmp_path)
    context = PyTorchTrialContext(core, device=torch.device("cpu"))
    model = context.wrap_model(torch.nn.Linear(2, 1))
    context.wrap_optimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    return context


def test_wrap_scaler_is_checkpointed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DET_TRIAL_INFO", raising=False)
    context = _context(tmp_path)
    scaler = context.wrap_scaler(torch.amp.GradScaler("cpu", init_scale=64.0))
    with pytest.raises(RuntimeError, match="once"):
        context.wrap_scaler(scaler)
    state: dict[str, Any] = trial_state(context, {}, {}, [])
    assert state["scaler_state_dict"]["scale"] == 64.0
    restored = _context(tmp_path)
    restored.wrap_scaler(torch.amp.GradScaler("cpu", init_scale=2.0))
    load_into(state, restored, {})
    assert restored.scaler.get_scale() == 64.0
    with pytest.raises(ValueError, match="wrap_scaler"):
        load_into(state, _context(tmp_path), {})
