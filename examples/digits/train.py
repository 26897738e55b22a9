"""Train a small MLP on scikit-learn's bundled 8x8 digits with hpcdet's Core API.

The Core API version of the digits example (``model_def.py`` is the same model as a
``PyTorchTrial``, which the other configs train). In a hpcdet job
(``det experiment create core_api.yaml .``) the harness has already joined
``torch.distributed`` over the trial's slots, so the model is wrapped in
DistributedDataParallel and each rank trains on its shard. Run standalone
(``python train.py``), the Core API falls back to dummy contexts: one process, metrics on
stderr, checkpoints in ``./checkpoints``, hyperparameters from ``core_api.yaml``.

The same script can serve the searches of grid.yaml, random.yaml and asha.yaml (with
``--config entrypoint="python3 train.py"``): the hyperparameters
come from the master's searcher, the training length from the searcher section, and every
validation reports ``epochs`` so that adaptive ASHA can place the trial on its rungs. When
ASHA stops a trial, ``core.preempt.should_preempt()`` turns true and the script returns
after its checkpoint. ``bench/searcher.py`` imports :func:`make_trial`, :func:`fit_epoch`
and :func:`validate` to run whole searches in one process.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass
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
    """core_api.yaml, for runs outside a job (inside one, the master sends the config)."""
    config: dict[str, Any] = yaml.safe_load((HERE / "core_api.yaml").read_text())
    return config


def constant_hparams(config: dict[str, Any]) -> dict[str, Any]:
    """Hyperparameters given as ``lr: 0.01`` or ``lr: {type: const, val: 0.01}``."""
    hparams = config.get("hyperparameters") or {}
    return {k: v["val"] if isinstance(v, dict) else v for k, v in hparams.items()}


def training_epochs(config: dict[str, Any]) -> int:
    """Epochs to train, from the searcher section: ``max_time`` counted in
    ``time_metric: epochs`` (Determined 0.38), or the legacy ``max_length: {epochs: N}``."""
    searcher = config.get("searcher") or {}
    if searcher.get("max_time") is not None:
        unit = searcher.get("time_metric") or "epochs"
        if unit != "epochs":
            raise ValueError(f"searcher.time_metric: this script counts epochs, not {unit!r}")
        return int(searcher["max_time"])
    length = searcher.get("max_length")
    if isinstance(length, dict) and length.get("epochs") is not None:
        return int(length["epochs"])
    raise ValueError("set searcher.max_time with time_metric: epochs, or "
                     "searcher.max_length: {epochs: N}, to say how long to train")


@dataclass(frozen=True)
class HParams:
    """The hyperparameters this script reads, checked to be numbers."""

    lr: float
    hidden_size: int
    global_batch_size: int

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> HParams:
        """From ``core.info.hparams`` (JSON numbers; an int is fine where a float is due)."""
        return cls(lr=float(_number(raw, "lr", (int, float))),
                   hidden_size=int(_number(raw, "hidden_size", (int,))),
                   global_batch_size=int(_number(raw, "global_batch_size", (int,))))


def _number(raw: dict[str, Any], name: str, kinds: tuple[type, ...]) -> Any:
    value = raw.get(name)
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = " or ".join(k.__name__ for k in kinds)
        raise TypeError(f"hyperparameter {name!r} must be {kind}, got {value!r}")
    return value


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
        run(core, epochs=training_epochs(config))


@dataclass
class Trial:
    """What one trial trains: the model, its optimizer, and this rank's data."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    sampler: DistributedSampler[Any]
    loader: DataLoader[Any]


def make_trial(
    hparams: HParams, seed: int, data: TensorDataset, rank: int = 0, size: int = 1
) -> Trial:
    """A fresh model (initial weights from ``seed``, equal on every rank) and this rank's
    shard, reshuffled each epoch; the global batch is split over the ranks."""
    torch.manual_seed(seed)
    model = build_model(hparams.hidden_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=hparams.lr)
    sampler: DistributedSampler[Any] = DistributedSampler(
        data, num_replicas=size, rank=rank, seed=seed
    )
    loader = DataLoader(data, batch_size=max(hparams.global_batch_size // size, 1),
                        sampler=sampler)
    return Trial(model, optimizer, sampler, loader)


def fit_epoch(trial: Trial, epoch: int, model: nn.Module | None = None) -> float:
    """Train epoch ``epoch`` (0-based) through ``model`` (default the trial's own; pass the
    DDP wrapper in a distributed job); returns the training loss."""
    trial.sampler.set_epoch(epoch)
    return train_epoch(model or trial.model, trial.loader, trial.optimizer)


def run(core: hpcdet.core.Context, epochs: int) -> None:
    rank, size = core.distributed.rank, core.distributed.size
    train_data, val_data = load_data()
    trial = make_trial(HParams.parse(core.info.hparams), core.info.trial_seed, train_data,
                       rank, size)
    start_epoch, steps = restore(core, trial.model, trial.optimizer)
    wrapped = DistributedDataParallel(trial.model) if distributed_ready() else trial.model
    metrics: dict[str, float] = {}
    for epoch in range(start_epoch, epochs):
        loss = fit_epoch(trial, epoch, wrapped)
        steps += len(trial.loader)
        core.train.report_training_metrics(steps, {"loss": loss, "epoch": epoch + 1})
        # "epochs" is the searcher's time_metric: adaptive ASHA places the trial on a rung by it.
        metrics = {**validate(trial.model, val_data, rank, size), "epochs": epoch + 1}
        core.train.report_validation_metrics(steps, metrics)
        save(core, trial.model, trial.optimizer, epoch + 1, steps)
        if core.preempt.should_preempt():
            print(f"digits: asked to stop after epoch {epoch + 1} (preempted, or stopped by "
                  "the searcher); the checkpoint is saved")
            return
    if core.distributed.is_chief and metrics:
        print(f"digits: done, validation accuracy {metrics['accuracy']:.3f}")


if __name__ == "__main__":
    main()
