"""``hpcdet.pytorch.experimental``: Determined 0.38's batch inference API.

Subclass :class:`TorchBatchProcessor` and hand it to :func:`torch_batch_process`, which
shards the dataset over the trial's ranks, checkpoints progress every
``checkpoint_interval`` batches and, after a preemption or requeue, resumes after the
last checkpointed batch::

    from hpcdet.pytorch import experimental

    class Predict(experimental.TorchBatchProcessor):
        def __init__(self, context):
            self.context = context
            self.model = context.prepare_model_for_inference(build_model())

        def process_batch(self, batch, batch_idx):
            with torch.no_grad():
                pred = self.model(self.context.to_device(batch[0]))
            with self.context.upload_path() as path:
                torch.save(pred, path / f"pred_{batch_idx}.pt")

    experimental.torch_batch_process(Predict, dataset, batch_size=200, checkpoint_interval=5)

See docs/batch-inference.md for the differences from Determined.
"""

from __future__ import annotations

from hpcdet.pytorch.experimental._batch_context import (
    TorchBatchProcessorContext,
    get_default_device,
)
from hpcdet.pytorch.experimental._batch_process import TorchBatchProcessor, torch_batch_process

__all__ = [
    "TorchBatchProcessor",
    "TorchBatchProcessorContext",
    "get_default_device",
    "torch_batch_process",
]
