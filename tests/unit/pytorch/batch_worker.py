"""One rank of a 2-rank batch inference run: ``python batch_worker.py <args.json> <rank>``.

Joins a gloo group over TCP on 127.0.0.1, runs ``torch_batch_process`` over a dataset of
record indices and writes the batches this rank processed to ``<out>/rank-<rank>.json``.
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import torch
import torch.distributed as dist

from hpcdet.core import DistributedContext
from hpcdet.harness.main import exit_process
from hpcdet.pytorch.experimental import (
    TorchBatchProcessor,
    TorchBatchProcessorContext,
    torch_batch_process,
)

SEEN: list[dict[str, Any]] = []


class Indices(torch.utils.data.Dataset[torch.Tensor]):
    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor(index)


class Recorder(TorchBatchProcessor):
    def __init__(self, context: TorchBatchProcessorContext) -> None:
        self.context = context

    def process_batch(self, batch: Any, batch_idx: int) -> None:
        SEEN.append({"idx": batch_idx, "records": batch.tolist()})
        with self.context.upload_path() as path:
            (path / f"batch-{batch_idx}.json").write_text(json.dumps(batch.tolist()))


def main(args: dict[str, Any], rank: int) -> None:
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{args['port']}", rank=rank, world_size=args["world"]
    )
    try:
        torch_batch_process(
            Recorder, Indices(args["size"]), batch_size=args["batch_size"],
            checkpoint_interval=args["interval"],
            distributed_context=DistributedContext.from_torch_distributed(),
        )
    finally:
        dist.destroy_process_group()
    (pathlib.Path(args["out"]) / f"rank-{rank}.json").write_text(json.dumps(SEEN))


if __name__ == "__main__":
    main(json.loads(pathlib.Path(sys.argv[1]).read_text()), int(sys.argv[2]))
    # As rank_worker.py: a normal interpreter teardown races with gloo's C++ threads.
    exit_process(0)
