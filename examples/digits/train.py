"""Train a small MLP on scikit-learn's bundled 8x8 digits with hpcdet's Core API.

In a hpcdet job (``det experiment create const.yaml .``) the harness has already joined
``torch.distributed`` over the trial's slots, so the model is wrapped in
DistributedDataParallel and each rank trains on its shard. Run standalone
(``python train.py``), the Core API falls back to dummy contexts: one process, metrics on
stderr, checkpoints in ``./checkpoints``, hyperparameters from ``const.yaml``.
"""

from __future__ import annotations

import pathlib
from typing import Any

import torch
import torch.distributed as dist
import yaml
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import hpcdet.core

HERE = pathlib.Path(__file__).resolve().parent
STATE_FILE = "state.pt"


def load_local_config() -> dict[str, Any]:
    """const.yaml, for runs outside a job (inside one, the master sends the config)."""
    config: dict[str, Any] = yaml.safe_load((HERE / "const.yaml").read_text())
    return config


def constant_hparams(config: dict[str, Any]) -> dict[str, Any]:
    """Hyperparameters given as ``lr: 0.01`` or ``lr: {type: const, val: 0.01}``."""
    hparams = config.get("hyperparameters") or {}
    return {k: v["val"] if isinstance(v, dict) else v for k, v in hparams.items()}


def load_data() -> tuple[TensorDataset, TensorDataset]:
    """1437 training and 360 validation images, pixel values scaled to [0, 1]."""
    images, labels = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(
        images / 16.0, labels, test_size=0.2, random_state=0, stratify=labels
    )

    def tensors(x: Any, y: Any) -> TensorDataset:
        return TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(y))

    return tensors(x_train, y_train), tensors(x_val, y_val)


def build_model(hidden_size: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(64, hidden_size),
        nn.ReLU(),
        nn.Linear(hidden_size, hidden_size),
        nn.ReLU(),
        nn.Linear(hidden_size, 10),
    )


def distributed_ready() -> bool:
    """True in a hpcdet job (the harness joined the group), False standalone."""
    return dist.is_available() and dist.is_initialized()


def all_reduce_sum(values: list[float]) -> list[float]:
    """Sum ``values`` element-wise over all ranks."""
    tensor = torch.tensor(values, dtype=torch.float64)
    if distributed_ready():
        dist.all_reduce(tensor)
    return tensor.tolist()


def train_epoch(
    model: nn.Module, loader: DataLoader[Any], optimizer: torch.optim.Optimizer
) -> float:
    """One pass over this rank's shard; returns the loss averaged over all ranks."""
    model.train()
    loss_sum, count = 0.0, 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()  # DDP averages the gradients across ranks here
        optimizer.step()
        loss_sum, count = loss_sum + loss.item() * len(y), count + len(y)
    total_loss, total_count = all_reduce_sum([loss_sum, count])
    return total_loss / total_count


@torch.no_grad()
def validate(model: nn.Module, data: TensorDataset, rank: int, size: int) -> dict[str, float]:
    """Each rank scores every size-th example; the sums are combined over all ranks."""
    model.eval()
    x, y = data.tensors[0][rank::size], data.tensors[1][rank::size]
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, y, reduction="sum").item()
    correct = (logits.argmax(dim=1) == y).sum().item()
    loss_sum, correct_sum, count = all_reduce_sum([loss, correct, len(y)])
    return {"validation_loss": loss_sum / count, "accuracy": correct_sum / count}


def save(
    core: hpcdet.core.Context, model: nn.Module, optimizer: Any, epoch: int, steps: int
) -> None:
    """Checkpoint from the chief; DDP keeps every rank's replica identical."""
    if not core.distributed.is_chief:
        return
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}
    with core.checkpoint.store_path({"steps_completed": steps, "epoch": epoch}) as (path, _):
        torch.save({**state, "steps_completed": steps}, path / STATE_FILE)


def restore(core: hpcdet.core.Context, model: nn.Module, optimizer: Any) -> tuple[int, int]:
    """Load the trial's latest checkpoint, if any; returns (epochs done, steps done)."""
    uuid = core.info.latest_checkpoint
    if uuid is None:
        return 0, 0
    with core.checkpoint.restore_path(uuid) as path:
        state = torch.load(path / STATE_FILE, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["epoch"]), int(state["steps_completed"])


def main() -> None:
    local_config = load_local_config()
    with hpcdet.core.init(hparams=constant_hparams(local_config)) as core:
        config = core.info.experiment_config or local_config
        run(core, epochs=int(config["searcher"]["max_length"]["epochs"]))


def run(core: hpcdet.core.Context, epochs: int) -> None:
    torch.manual_seed(core.info.trial_seed)  # the same initial weights on every rank
    train_data, val_data = load_data()
    sampler, loader = make_loader(core, train_data)
    model = build_model(core.info.hparams["hidden_size"])
    optimizer = torch.optim.Adam(model.parameters(), lr=core.info.hparams["lr"])
    start_epoch, steps = restore(core, model, optimizer)
    wrapped = DistributedDataParallel(model) if distributed_ready() else model
    metrics: dict[str, float] = {}
    for epoch in range(start_epoch, epochs):
        sampler.set_epoch(epoch)
        loss = train_epoch(wrapped, loader, optimizer)
        steps += len(loader)
        core.train.report_training_metrics(steps, {"loss": loss, "epoch": epoch + 1})
        metrics = validate(model, val_data, core.distributed.rank, core.distributed.size)
        core.train.report_validation_metrics(steps, metrics)
        save(core, model, optimizer, epoch + 1, steps)
        if core.preempt.should_preempt():
            print(f"digits: preempted after epoch {epoch + 1}; the checkpoint resumes it")
            return
    if core.distributed.is_chief and metrics:
        print(f"digits: done, validation accuracy {metrics['accuracy']:.3f}")


def make_loader(
    core: hpcdet.core.Context, data: TensorDataset
) -> tuple[DistributedSampler[Any], DataLoader[Any]]:
    """This rank's shard, reshuffled each epoch; the global batch is split over the ranks."""
    rank, size = core.distributed.rank, core.distributed.size
    sampler: DistributedSampler[Any] = DistributedSampler(
        data, num_replicas=size, rank=rank, seed=core.info.trial_seed
    )
    batch_size = core.info.hparams["global_batch_size"] // size
    return sampler, DataLoader(data, batch_size=batch_size, sampler=sampler)


if __name__ == "__main__":
    main()
