"""The sharded training sampler, the config lengths and the context's small methods."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

from hpcdet.pytorch._data import ShardedBatchSampler  # noqa: E402
from hpcdet.pytorch._fit import plan_from_config  # noqa: E402
from hpcdet.pytorch._units import Batch, Epoch, TrainUnit, searcher_length  # noqa: E402


def epoch(size: int, ranks: int, batch: int, number: int = 0) -> list[list[list[int]]]:
    """Every rank's batches of epoch ``number``."""
    samplers = [
        ShardedBatchSampler(size, batch_size=batch, rank=r, ranks=ranks, seed=5)
        for r in range(ranks)
    ]
    for sampler in samplers:
        sampler.set_epoch(number)
    return [list(sampler) for sampler in samplers]


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
@pytest.mark.parametrize("size", [24, 25, 29, 31])
@pytest.mark.parametrize("batch", [2, 3, 8])
def test_each_record_exactly_once_per_epoch_in_equal_numbers_of_batches(
    ranks: int, size: int, batch: int
) -> None:
    per_rank = epoch(size, ranks, batch)
    seen = [i for batches in per_rank for b in batches for i in b]
    assert sorted(seen) == list(range(size))
    assert len({len(batches) for batches in per_rank}) == 1
    assert all(0 < len(b) <= batch for batches in per_rank for b in batches)
    assert len(per_rank[0]) == len(
        ShardedBatchSampler(size, batch_size=batch, rank=0, ranks=ranks, seed=5)
    )


def test_batch_size_one_with_an_uneven_split_leaves_out_the_remainder() -> None:
    per_rank = epoch(10, 4, 1)
    seen = [i for batches in per_rank for b in batches for i in b]
    assert len(seen) == 8 and len(set(seen)) == 8
    assert all(len(batches) == 2 for batches in per_rank)


def test_order_depends_on_seed_and_epoch_only_and_skip_resumes_mid_epoch() -> None:
    assert epoch(20, 2, 3, 1) == epoch(20, 2, 3, 1)
    assert epoch(20, 2, 3, 1) != epoch(20, 2, 3, 2)
    sampler = ShardedBatchSampler(20, batch_size=3, rank=1, ranks=2, seed=5)
    sampler.set_epoch(1, skip=2)
    assert list(sampler) == epoch(20, 2, 3, 1)[1][2:]


def test_fewer_records_than_ranks_is_refused() -> None:
    with pytest.raises(ValueError, match="fewer than the 4 ranks"):
        ShardedBatchSampler(3, batch_size=2, rank=0, ranks=4, seed=0)


def test_lengths_convert_to_batches() -> None:
    assert Epoch(3).in_batches(batches_per_epoch=7) == 21
    assert TrainUnit.from_config({"records": 100}, "x", global_batch_size=8).in_batches(7) == 12
    assert Batch(5).in_batches(batches_per_epoch=7) == 5


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"minutes": 3}, "unit must be batches, records or epochs"),
        ({"batches": -1}, r"searcher.max_length.batches must be an int >= 0"),
        (5, "must be one of"),
    ],
)
def test_bad_lengths_are_named(raw: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrainUnit.from_config(raw, "searcher.max_length")


def test_a_config_without_a_length_says_what_to_set() -> None:
    with pytest.raises(ValueError, match="searcher.max_length"):
        searcher_length({}, None)


def test_config_defaults() -> None:
    plan = plan_from_config({"searcher": {"max_length": {"batches": 1}}}, {},
                            latest_checkpoint=None)
    assert plan.reporting_period == Batch(100)
    assert plan.average_training_metrics is True
    assert (plan.checkpoint_policy, plan.step_zero_validation) == ("best", False)


def test_context_batch_sizes_and_hparams() -> None:
    from hpcdet.core import DistributedContext
    from hpcdet.core._distributed import LocalCollectives
    from hpcdet.pytorch import PyTorchTrialContext, local_core_context

    core = local_core_context({}, hparams={"global_batch_size": 10, "lr": 0.1})
    core.distributed = DistributedContext(
        rank=0,
        size=4,
        local_rank=0,
        local_size=4,
        cross_rank=0,
        cross_size=1,
        collectives=LocalCollectives(),
    )
    context = PyTorchTrialContext(core)
    assert context.get_per_slot_batch_size() == 2  # 10 // 4, the remainder dropped
    assert context.get_hparam("lr") == 0.1
    with pytest.raises(KeyError, match="'hidden' is not set"):
        context.get_hparam("hidden")
    core.close()


def test_import_hpcdet_stays_light_and_reaches_pytorch_lazily() -> None:
    code = (
        "import sys, hpcdet; assert 'torch' not in sys.modules; "
        "assert hpcdet.pytorch.PyTorchTrial.__name__ == 'PyTorchTrial'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
