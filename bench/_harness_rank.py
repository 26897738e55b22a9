"""One rank of a ``bench/harness.py throughput`` run (the entrypoint the hpcdet harness runs).

``python -m hpcdet.harness python3 bench/_harness_rank.py {ddp|trial} OUT.json`` trains the
workload named in ``trial.json``'s hyperparameters (``workload``: ``digits`` or ``mlp``)
either in a hand-written ``torch.distributed`` loop (``ddp``) or through
``hpcdet.pytorch.run_trial_class`` (``trial``). Both run the same model, optimizer,
global batch and data, in the process group the harness joined, and time the same thing:
from the first batch of epoch ``warmup_epochs`` (0-based) to the end of the last training
batch, on rank 0, which writes ``OUT.json``. Epoch 0 is a warm-up and is not timed.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import time
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples" / "digits"))

MLP_FEATURES, MLP_HIDDEN, MLP_CLASSES = 256, 512, 10


def hparams() -> dict[str, Any]:
    """The trial's hyperparameters, as the hpcdet harness was given them."""
    info = json.loads(pathlib.Path(os.environ["DET_TRIAL_INFO"]).read_text())
    return dict(info["hparams"])


def workload_data(name: str, records: int) -> tuple[TensorDataset, TensorDataset]:
    """Training and validation sets: the digits, or ``records`` synthetic MLP inputs."""
    if name == "digits":
        import model_def  # examples/digits/model_def.py

        return model_def.load_data()  # type: ignore[no-any-return]
    generator = torch.Generator().manual_seed(1234)
    x = torch.randn(records + 1024, MLP_FEATURES, generator=generator)
    y = torch.randint(0, MLP_CLASSES, (records + 1024,), generator=generator)
    return TensorDataset(x[:records], y[:records]), TensorDataset(x[records:], y[records:])


def workload_model(name: str) -> nn.Module:
    """The digits MLP (hidden 128, as examples/digits/const.yaml), or the larger MLP."""
    if name == "digits":
        import model_def

        return model_def.build_model(128)  # type: ignore[no-any-return]
    return nn.Sequential(nn.Linear(MLP_FEATURES, MLP_HIDDEN), nn.ReLU(),
                         nn.Linear(MLP_HIDDEN, MLP_HIDDEN), nn.ReLU(),
                         nn.Linear(MLP_HIDDEN, MLP_CLASSES))


def make_optimizer(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=lr)


class Stopwatch:
    """Rank 0's timing window: first batch of the first timed epoch to the last batch."""

    def __init__(self, warmup_epochs: int) -> None:
        self.warmup_epochs = warmup_epochs
        self.start: float | None = None
        self.end = 0.0
        self.records = 0
        self.batches = 0
        self.losses: list[float] = []

    def batch_started(self, epoch: int) -> None:
        if self.start is None and epoch >= self.warmup_epochs:
            self.start = time.perf_counter()

    def batch_ended(self, records: int) -> None:
        if self.start is not None:
            self.end = time.perf_counter()
            self.records += records
            self.batches += 1

    def write(self, out: pathlib.Path, loop: str, size: int) -> None:
        if self.start is None:
            raise RuntimeError("no batch was timed: train more epochs than warmup_epochs")
        seconds = self.end - self.start
        result = {"loop": loop, "ranks": size, "records": self.records * size,
                  "batches": self.batches, "seconds": seconds,
                  "samples_per_s": self.records * size / seconds, "losses": self.losses}
        out.write_text(json.dumps(result))


def ddp_loop(out: pathlib.Path) -> None:
    """The hand-written baseline: DDP, DistributedSampler, zero_grad/backward/step."""
    hp = hparams()
    rank, size = dist.get_rank(), dist.get_world_size()
    train_set, _ = workload_data(hp["workload"], int(hp["records"]))
    torch.manual_seed(int(hp["seed"]))
    model = workload_model(hp["workload"])
    optimizer = make_optimizer(model, float(hp["lr"]))
    wrapped = DistributedDataParallel(model)
    sampler: DistributedSampler[Any] = DistributedSampler(train_set, num_replicas=size,
                                                          rank=rank, seed=int(hp["seed"]))
    loader = DataLoader(train_set, batch_size=int(hp["global_batch_size"]) // size,
                        sampler=sampler)
    watch = Stopwatch(int(hp["warmup_epochs"]))
    for epoch in range(int(hp["epochs"])):
        sampler.set_epoch(epoch)
        watch.losses.append(ddp_epoch(wrapped, loader, optimizer, watch, epoch))
    if rank == 0:
        watch.write(out, "ddp", size)


def ddp_epoch(model: nn.Module, loader: DataLoader[Any], optimizer: torch.optim.Optimizer,
              watch: Stopwatch, epoch: int) -> float:
    """One epoch; returns the mean training loss over all ranks."""
    model.train()
    losses = []
    for x, y in loader:
        watch.batch_started(epoch)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
        watch.batch_ended(len(y))
    mean = torch.stack(losses).mean()
    dist.all_reduce(mean)
    return float(mean) / dist.get_world_size()


WATCH: Stopwatch | None = None


def trial_loop(out: pathlib.Path) -> None:
    """The same training through hpcdet's PyTorchTrial trainer."""
    global WATCH
    hp = hparams()
    WATCH = Stopwatch(int(hp["warmup_epochs"]))
    from _harness_trial import make_trial_class  # imports hpcdet.pytorch

    import hpcdet.pytorch

    trial_class = make_trial_class(sys.modules[__name__], WATCH)
    code = hpcdet.pytorch.run_trial_class(trial_class)
    if code != 0:
        raise SystemExit(code)
    # The trainer may have left the process group by now; the harness exported the ranks.
    if os.environ.get("RANK", "0") == "0":
        WATCH.write(out, "trial", int(os.environ.get("WORLD_SIZE", "1")))


def main() -> None:
    loop, out = sys.argv[1], pathlib.Path(sys.argv[2])
    {"ddp": ddp_loop, "trial": trial_loop}[loop](out)


if __name__ == "__main__":
    main()
