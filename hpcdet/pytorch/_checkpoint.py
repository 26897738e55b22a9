"""The PyTorchTrial checkpoint: what it holds, how it is written and read back.

``<uuid>/state_dict.pth`` holds the models (unwrapped, without DDP's ``module.``),
optimizers, LR schedulers, the wrapped GradScaler (``scaler_state_dict``), callback
states, every rank's RNG states and the trainer's position; ``<uuid>/load_data.json``
names the trial class and its hyperparameters so
:func:`hpcdet.pytorch.load_trial_from_checkpoint_path` can rebuild the trial;
``metadata.json`` (written by the Core API) holds the trial, steps, framework, hparams.
"""

from __future__ import annotations

import json
import pathlib
import random
from typing import Any

import numpy as np
import torch
from torch import nn

from hpcdet.core import Context
from hpcdet.pytorch._callback import PyTorchCallback
from hpcdet.pytorch._context import PyTorchTrialContext

STATE_FILE = "state_dict.pth"
LOAD_DATA_FILE = "load_data.json"
FORMAT = "hpcdet.pytorch/1"


def unwrap(model: nn.Module) -> nn.Module:
    """The user's module inside a DistributedDataParallel wrapper."""
    inner = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
    assert isinstance(inner, nn.Module)
    return inner


def rng_state() -> dict[str, Any]:
    """This process's Python, NumPy and torch (CPU and CUDA) random states."""
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def trial_state(
    context: PyTorchTrialContext,
    callbacks: dict[str, PyTorchCallback],
    trainer: dict[str, Any],
    rng_states: list[Any],
) -> dict[str, Any]:
    """Everything a resumed trial needs, as one picklable dict."""
    return {
        "format": FORMAT,
        "models_state_dict": [unwrap(m).state_dict() for m in context.models],
        "optimizers_state_dict": [o.state_dict() for o in context.optimizers],
        "lr_schedulers_state_dict": [s.state_dict() for s in context.lr_schedulers],
        "callbacks": {name: cb.state_dict() for name, cb in callbacks.items()},
        "rng_states": rng_states,
        "trainer": trainer,
    } | ({} if context.scaler is None else {"scaler_state_dict": context.scaler.state_dict()})


def save(
    core: Context,
    state: dict[str, Any],
    metadata: dict[str, Any],
    load_data: dict[str, Any],
    callbacks: dict[str, PyTorchCallback],
) -> str:
    """Write ``state`` as a checkpoint (chief only); returns its uuid."""
    for callback in callbacks.values():
        callback.on_checkpoint_save_start(state)
    with core.checkpoint.store_path(metadata) as (path, storage_id):
        torch.save(state, path / STATE_FILE)
        (path / LOAD_DATA_FILE).write_text(json.dumps(load_data, indent=2, default=str) + "\n")
        for callback in callbacks.values():
            callback.on_checkpoint_write_end(str(path))
    for callback in callbacks.values():
        callback.on_checkpoint_upload_end(storage_id)
    return storage_id


def read_state(path: pathlib.Path, device: torch.device | str = "cpu") -> dict[str, Any]:
    """The state dict of the checkpoint in directory ``path``."""
    file = path / STATE_FILE
    if not file.is_file():
        raise FileNotFoundError(f"{path} is not a hpcdet PyTorchTrial checkpoint: no {STATE_FILE}")
    # Our own file: it holds RNG states (NumPy arrays in tuples), which weights_only refuses.
    state: dict[str, Any] = torch.load(file, map_location=device, weights_only=False)
    return state


def load_into(
    state: dict[str, Any],
    context: PyTorchTrialContext,
    callbacks: dict[str, PyTorchCallback],
) -> None:
    """Restore models, optimizers, schedulers and callbacks from ``state``."""
    _load_list("model", [unwrap(m) for m in context.models], state["models_state_dict"])
    _load_list("optimizer", context.optimizers, state["optimizers_state_dict"])
    _load_list("LR scheduler", context.lr_schedulers, state["lr_schedulers_state_dict"])
    _load_scaler(context, state.get("scaler_state_dict"))
    for name, callback in callbacks.items():
        if name in state["callbacks"]:
            callback.load_state_dict(state["callbacks"][name])


def _load_list(kind: str, targets: list[Any], states: list[Any]) -> None:
    if len(targets) != len(states):
        raise ValueError(
            f"the checkpoint holds {len(states)} {kind}(s) but the trial wrapped {len(targets)}"
        )
    for target, target_state in zip(targets, states, strict=True):
        target.load_state_dict(target_state)


def _load_scaler(context: PyTorchTrialContext, scaler_state: Any) -> None:
    """Restore the wrapped GradScaler; a mismatch is an error, as in Determined."""
    if scaler_state is None and context.scaler is None:
        return
    if scaler_state is None:
        raise ValueError("the trial wrapped a GradScaler but the checkpoint holds no scaler "
                         "state (it was saved without wrap_scaler)")
    if context.scaler is None:
        raise ValueError("the checkpoint holds a GradScaler's state but the trial did not call "
                         "context.wrap_scaler()")
    context.scaler.load_state_dict(scaler_state)
