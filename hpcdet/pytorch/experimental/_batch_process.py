"""``torch_batch_process``: shard a dataset over the ranks, process it, checkpoint progress.

Determined 0.38's batch inference API, on hpcdet's Core API. The dataset is cut into
consecutive batches; rank ``r`` of ``n`` takes batches ``r, r+n, r+2n, ...``. Every
``checkpoint_interval`` batches the ranks agree on how many batches all of them finished,
the chief saves that as a checkpoint and the run stops there if it is being preempted; a
restarted run skips the batches the checkpoint covers.
"""

from __future__ import annotations

import abc
import contextlib
import math
import sys
import uuid
import warnings
from collections.abc import Iterator, Sized
from typing import Any

import torch.utils.data

from hpcdet.core import Context, DistributedContext, PreemptMode
from hpcdet.core import init as core_init
from hpcdet.job.trial_info import trial_info_path
from hpcdet.pytorch._init import _local_distributed
from hpcdet.pytorch.experimental._batch_context import TorchBatchProcessorContext

DEFAULT_BATCH_SIZE = 1
# Written into each progress checkpoint, as Determined does (its readers look for it).
BATCH_COMPLETED_FILE = "batch_completed.json"


class TorchBatchProcessor(metaclass=abc.ABCMeta):
    """Subclass it with the per-batch work; :func:`torch_batch_process` drives it."""

    @abc.abstractmethod
    def __init__(self, context: TorchBatchProcessorContext) -> None:
        """Set up what the batches need (e.g. the model) from ``context``."""

    @abc.abstractmethod
    def process_batch(self, batch: Any, batch_idx: int) -> None:
        """Process one batch. ``batch_idx`` counts this rank's batches (0, 1, ...): with 4
        ranks and 8 batches each rank sees ``batch_idx`` 0 and 1."""

    def on_checkpoint_start(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Called right before each progress checkpoint (flush buffered outputs here)."""

    def on_finish(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Called once this rank has gone through its whole shard."""


class _StridedBatches(torch.utils.data.Sampler[list[int]]):
    """Rank ``rank``'s batches: every ``ranks``-th consecutive batch, from its ``skip``-th."""

    def __init__(self, size: int, *, batch_size: int, drop_last: bool, rank: int, ranks: int,
                 skip: int) -> None:
        self._size, self._batch_size, self._drop_last = size, batch_size, drop_last
        self._rank, self._ranks, self._skip = rank, ranks, skip

    def _batches(self) -> list[list[int]]:
        starts = range(self._rank * self._batch_size, self._size, self._ranks * self._batch_size)
        batches = [list(range(s, min(s + self._batch_size, self._size))) for s in starts]
        if self._drop_last and batches and len(batches[-1]) < self._batch_size:
            batches.pop()
        return batches[self._skip :]

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self._batches())

    def __len__(self) -> int:
        return len(self._batches())


def torch_batch_process(
    batch_processor_cls: type[TorchBatchProcessor],
    dataset: torch.utils.data.Dataset[Any],
    batch_size: int | None = None,
    max_batches: int | None = None,
    checkpoint_interval: int = 5,
    dataloader_kwargs: dict[str, Any] | None = None,
    distributed_context: DistributedContext | None = None,
) -> None:
    """Run ``batch_processor_cls`` over ``dataset``, sharded over the trial's ranks.

    Arguments:
        batch_processor_cls: a :class:`TorchBatchProcessor` subclass; each rank makes one.
        dataset: a map-style dataset (``__len__`` and ``__getitem__``).
        batch_size: records per batch (default 1, or ``dataloader_kwargs["batch_size"]``).
        max_batches: at most this many batches per rank (ignored, with a warning, when
            not positive or more than a rank's shard).
        checkpoint_interval: save progress (and check for preemption) every this many
            batches of each rank.
        dataloader_kwargs: more ``torch.utils.data.DataLoader`` arguments (not
            ``shuffle=True``, ``sampler`` or ``batch_sampler``: the order is fixed so that
            a restart skips exactly the finished batches).
        distributed_context: the ranks, instead of the job's (or, outside a job,
            ``torchrun``'s or an initialised ``torch.distributed`` group's, else one rank).

    Unlike Determined, it also runs outside a hpcdet job: checkpoints go to
    ``./checkpoints`` and metrics to stderr.
    """
    with contextlib.ExitStack() as stack:
        if distributed_context is None and trial_info_path() is None:
            distributed_context = _local_distributed(stack)
        # WorkersAskChief: every rank asks at the same batches, so all stop together.
        core_context = stack.enter_context(
            core_init(distributed=distributed_context, preempt_mode=PreemptMode.WorkersAskChief)
        )
        run_batch_process(
            core_context, batch_processor_cls, dataset, batch_size=batch_size,
            max_batches=max_batches, checkpoint_interval=checkpoint_interval,
            dataloader_kwargs=dataloader_kwargs,
        )


def run_batch_process(
    core_context: Context,
    batch_processor_cls: type[TorchBatchProcessor],
    dataset: torch.utils.data.Dataset[Any],
    *,
    batch_size: int | None = None,
    max_batches: int | None = None,
    checkpoint_interval: int = 5,
    dataloader_kwargs: dict[str, Any] | None = None,
) -> bool:
    """:func:`torch_batch_process` on an open Core API context; True when finished,
    False when it stopped for a preemption (the checkpoint says where to resume)."""
    if checkpoint_interval <= 0:
        raise ValueError("checkpoint_interval should be a positive integer")
    kwargs = dict(dataloader_kwargs or {})
    batch_size = _batch_size(kwargs, batch_size)
    if not isinstance(dataset, Sized):
        raise TypeError("the dataset must implement __len__()")
    dist = core_context.distributed
    skip, output_uuid = _resume_point(core_context)
    context = TorchBatchProcessorContext(core_context, f"{output_uuid}/rank_{dist.rank}")
    processor = batch_processor_cls(context)
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_sampler=_StridedBatches(len(dataset), batch_size=batch_size,
                                      drop_last=bool(kwargs.pop("drop_last", False)),
                                      rank=dist.rank, ranks=dist.size, skip=skip),
        **kwargs,
    )
    # Every rank runs the same number of steps (a rank whose shard is one batch short
    # idles on its last), so all reach each checkpoint's collectives.
    per_rank = math.ceil(len(dataset) / batch_size / dist.size)
    total = _iteration_count(max_batches, per_rank)
    progress = _Progress(core_context, batch_size * dist.size, len(dataset), total)
    batches = iter(loader)
    last_checkpoint = skip
    for batch_idx in range(skip, total):
        batch = next(batches, None)
        if batch is not None:
            processor.process_batch(batch=batch, batch_idx=batch_idx)
        steps = batch_idx + 1
        if steps % checkpoint_interval == 0:
            processor.on_checkpoint_start()
            _checkpoint(core_context, steps, output_uuid)
            last_checkpoint = steps
            progress.report(steps)
            if core_context.preempt.should_preempt():
                _report_reducers(context, core_context, steps)
                return False
    if total > last_checkpoint:
        processor.on_checkpoint_start()
        _checkpoint(core_context, total, output_uuid)
    _report_reducers(context, core_context, total)
    processor.on_finish()
    if dist.is_chief and context._use_default_storage:
        print(f"hpcdet batch processing: files stored with upload_path() are in "
              f"{context.default_storage_location()}", file=sys.stderr, flush=True)
    dist.barrier()  # report completion only once every rank is done
    progress.finish()
    return True


def _batch_size(kwargs: dict[str, Any], batch_size: int | None) -> int:
    """Check ``dataloader_kwargs`` (Determined's rules) and settle the batch size."""
    if kwargs.get("shuffle"):
        raise ValueError("'shuffle' must be false for accurate sharding and checkpointing")
    kwargs.pop("shuffle", None)
    for name in ("sampler", "batch_sampler"):
        if name in kwargs:
            raise ValueError(f"please remove the {name!r} argument: "
                             "torch_batch_process makes its own")
    if batch_size is not None and "batch_size" in kwargs:
        raise ValueError("batch_size is passed to both torch_batch_process and dataloader_kwargs")
    if batch_size is None:
        batch_size = int(kwargs.pop("batch_size", DEFAULT_BATCH_SIZE))
    if batch_size <= 0:
        raise ValueError(f"batch_size must be a positive integer, not {batch_size}")
    return batch_size


def _iteration_count(max_batches: int | None, per_rank: int) -> int:
    """Batches each rank runs: ``max_batches`` when it is in ``1..per_rank``."""
    if max_batches is None:
        return per_rank
    if max_batches <= 0 or max_batches > per_rank:
        reason = "is not valid" if max_batches <= 0 else "exceeds the sharded dataset length"
        warnings.warn(f"max_batches {max_batches} {reason}: ignoring it and going over the "
                      "entire dataset once", stacklevel=3)
        return per_rank
    return max_batches


def _resume_point(core_context: Context) -> tuple[int, str]:
    """Batches already done per rank and the run's output uuid (new, or the checkpoint's:
    a restart keeps writing ``upload_path()`` files next to the earlier ones)."""
    latest = core_context.info.latest_checkpoint
    if latest is not None:
        metadata = core_context.checkpoint.get_metadata(latest)
        if "default_output_uuid" in metadata:
            return int(metadata["steps_completed"]), str(metadata["default_output_uuid"])
    dist = core_context.distributed
    # The chief picks the uuid so that every rank writes under the same one.
    output_uuid = str(uuid.uuid4()) if dist.is_chief else None
    return 0, str(dist.broadcast(output_uuid))


def _checkpoint(core_context: Context, steps: int, output_uuid: str) -> None:
    """Save the batches every rank has finished (a collective: all ranks call it)."""
    done = core_context.distributed.gather(steps)
    if done is None:  # not the chief
        return
    completed = min(done)
    metadata = {"steps_completed": completed, "default_output_uuid": output_uuid}
    with core_context.checkpoint.store_path(metadata) as (path, _):
        (path / BATCH_COMPLETED_FILE).write_text(f'{{"batch_completed": {completed}}}\n')


def _report_reducers(
    context: TorchBatchProcessorContext, core_context: Context, steps: int
) -> None:
    """Reduce the wrapped MetricReducers over all ranks; the chief reports the result."""
    if not context.reducers:
        return
    dist = core_context.distributed
    gathered = dist.gather([wrapped.reducer.per_slot_reduce() for wrapped in context.reducers])
    if gathered is None:
        return
    metrics: dict[str, Any] = {}
    for index, wrapped in enumerate(context.reducers):
        value = wrapped.reducer.cross_slot_reduce([rank[index] for rank in gathered])
        if wrapped.name is not None:
            metrics[wrapped.name] = value
        elif isinstance(value, dict):
            metrics.update(value)
        else:
            raise TypeError(f"a reducer wrapped without a name must return a dict, not {value!r}")
    core_context.train.report_validation_metrics(steps_completed=steps, metrics=metrics)


class _Progress:
    """Reports the fraction of the dataset done to the master (chief only, as hpcdet's
    ``train.report_progress`` does)."""

    def __init__(self, core_context: Context, records_per_step: int, size: int,
                 total: int) -> None:
        self._train = core_context.train
        self._per_step = records_per_step
        self._size = max(size, 1)
        self._total = total

    def report(self, steps: int) -> None:
        """After ``steps`` batches per rank."""
        done = min(steps, self._total) * self._per_step
        self._train.report_progress(min(done / self._size, 1.0))

    def finish(self) -> None:
        """The run is complete."""
        self._train.report_progress(1.0)
