"""``TorchBatchProcessorContext``: what a batch processor gets from hpcdet (Determined 0.38)."""

from __future__ import annotations

import contextlib
import pathlib
import sys
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch import nn

from hpcdet.core import Context, DistributedContext
from hpcdet.pytorch._context import WrappedReducer
from hpcdet.pytorch._data import to_device
from hpcdet.pytorch._reducer import MetricReducer


def get_default_device(core_context: Context) -> torch.device:
    """``cuda:<local rank>`` when this node has GPUs, else the CPU (Determined's rule:
    one process per GPU)."""
    if torch.cuda.device_count() == 0:
        return torch.device("cpu")
    return torch.device("cuda", core_context.distributed.local_rank)


class TorchBatchProcessorContext:
    """Handed to a :class:`TorchBatchProcessor`'s ``__init__``: the device, uploads,
    metrics and ranks of this batch-inference run.

    Example::

        class Embed(TorchBatchProcessor):
            def __init__(self, context: TorchBatchProcessorContext) -> None:
                self.context = context
                self.model = context.prepare_model_for_inference(build_model())

            def process_batch(self, batch, batch_idx) -> None:
                with torch.no_grad():
                    out = self.model(self.context.to_device(batch[0]))
                with self.context.upload_path() as path:
                    torch.save(out, path / f"out_{batch_idx}.pt")
    """

    def __init__(self, core_context: Context, storage_path: str) -> None:
        self._core_context = core_context
        self._distributed = core_context.distributed
        self.device = get_default_device(core_context)
        self._storage_path = storage_path
        self._tensorboard_path: pathlib.Path | None = None
        self._use_default_storage = False
        self._warned: set[str] = set()
        self.reducers: list[WrappedReducer] = []

    @property
    def distributed(self) -> DistributedContext:
        """The Core API's distributed context of this run."""
        return self._distributed

    def get_distributed_context(self) -> DistributedContext:
        """The Core API's distributed context (ranks and collectives)."""
        return self._distributed

    def get_hparams(self) -> dict[str, Any]:
        """The trial's hyperparameters (``{}`` outside a job: hpcdet runs there too)."""
        return dict(self._core_context.info.hparams)

    def to_device(self, data: Any, warned_types: set[type] | None = None) -> Any:
        """``data`` with every tensor in it (nested in dicts, lists, tuples) on this
        rank's device; numpy arrays become tensors. ``warned_types`` is Determined's and
        unused: what cannot move is returned as it is, silently."""
        del warned_types
        return to_device(_numpy_to_tensors(data), self.device)

    def get_tensorboard_path(self) -> pathlib.Path:
        """A directory for TensorBoard files (e.g. of ``torch.profiler``).

        hpcdet differs from Determined here: it uploads no TensorBoard files, so this is a
        local temporary directory of this rank that nothing collects (made on first call).
        """
        if self._tensorboard_path is None:
            rank = self._distributed.rank
            self._tensorboard_path = pathlib.Path(
                tempfile.mkdtemp(prefix=f"hpcdet-tensorboard-rank{rank}-")
            )
        return self._tensorboard_path

    def prepare_model_for_inference(self, model: nn.Module) -> nn.Module:
        """Put ``model`` in eval mode on this rank's device; returns it."""
        model.eval()
        model.to(self.device)
        return model

    def upload_path(self) -> contextlib.AbstractContextManager[pathlib.Path]:
        """A directory to write outputs into, kept in the checkpoint storage on exit.

        The directory is ``<checkpoint_dir>/<run uuid>/rank_<rank>/`` (the same uuid for
        every rank and for every restart of the run); on an object store it is uploaded
        there on exit. Files are not a registered checkpoint: no GC or ``det checkpoint``
        command knows them.
        """
        self._use_default_storage = True
        return self._upload_path()

    @contextlib.contextmanager
    def _upload_path(self) -> Iterator[pathlib.Path]:
        checkpoint = self._core_context.checkpoint
        path = checkpoint.checkpoint_dir / self._storage_path
        path.mkdir(parents=True, exist_ok=True)
        yield path
        storage = checkpoint._storage  # an object store, or None on a shared filesystem
        if storage is not None:
            storage.upload(path, self._storage_path)

    def default_storage_location(self) -> pathlib.Path:
        """Where :meth:`upload_path` files of all ranks go (the run uuid's directory)."""
        return self._core_context.checkpoint.checkpoint_dir / self._storage_path.split("/")[0]

    def report_metrics(
        self, group: str, steps_completed: int, metrics: Mapping[str, Any]
    ) -> None:
        """Report ``metrics`` at ``steps_completed`` (batches processed) in ``group``.

        hpcdet differs from Determined: ``group`` must be ``training`` or ``validation``.
        Only the chief's report is kept: reduce across ranks first (or use
        :meth:`wrap_reducer`).
        """
        self._core_context.train.report_metrics(group, steps_completed, metrics)

    def wrap_reducer(
        self, reducer: MetricReducer, name: str | None = None, for_training: bool = False
    ) -> MetricReducer:
        """Register a :class:`~hpcdet.pytorch.MetricReducer`; at the end of the run (and
        before a preemption) it is reduced over all ranks and reported as validation
        metrics, named ``name`` (or the dict it returns when ``name`` is None)."""
        if not isinstance(reducer, MetricReducer):
            raise TypeError(f"wrap_reducer needs a MetricReducer, not {type(reducer).__name__}")
        self.reducers.append(WrappedReducer(reducer, name, for_training))
        return reducer

    def report_task_using_model_version(self, model_version: Any) -> None:
        """Accepted for Determined's API; hpcdet's master does not link tasks to model
        versions, so this only says so once in the log."""
        del model_version
        self._warn_unlinked("report_task_using_model_version")

    def report_task_using_checkpoint(self, checkpoint: Any) -> None:
        """Accepted for Determined's API; hpcdet's master does not link tasks to
        checkpoints, so this only says so once in the log."""
        del checkpoint
        self._warn_unlinked("report_task_using_checkpoint")

    def get_distributed_rank(self) -> int:
        """This process's rank in the trial."""
        return self._distributed.rank

    def get_distributed_size(self) -> int:
        """How many processes (slots) the trial runs."""
        return self._distributed.size

    def _warn_unlinked(self, method: str) -> None:
        if method not in self._warned:
            self._warned.add(method)
            print(f"hpcdet batch processing: {method}() is not supported by hpcdet's master; "
                  "ignored", file=sys.stderr, flush=True)


def _numpy_to_tensors(data: Any) -> Any:
    """Determined's to_device also converts numpy arrays; hpcdet's helper does not."""
    if type(data).__module__ == "numpy" and type(data).__name__ == "ndarray":
        return torch.from_numpy(data)
    if isinstance(data, Mapping):
        return {key: _numpy_to_tensors(value) for key, value in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return type(data)(*(_numpy_to_tensors(value) for value in data))
    if isinstance(data, list | tuple):
        return type(data)(_numpy_to_tensors(value) for value in data)
    return data
