"""Entry points: train one trial of a PyTorchTrial class; rebuild a trial from a checkpoint."""

from __future__ import annotations

import importlib
import json
import os
import pathlib
import sys
from collections.abc import Mapping
from typing import Any

import hpcdet.pytorch._checkpoint as _checkpoint
from hpcdet.core import init
from hpcdet.job.trial_info import trial_info_path
from hpcdet.pytorch._fit import Trainer
from hpcdet.pytorch._init import local_core_context
from hpcdet.pytorch._instantiate import instantiate_trial
from hpcdet.pytorch._trainer import Outcome
from hpcdet.pytorch._trial import PyTorchTrial


def run_trial_class(
    trial_class: type[PyTorchTrial],
    *,
    local: bool = False,
    experiment_config: Mapping[str, Any] | None = None,
    hparams: Mapping[str, Any] | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    latest_checkpoint: str | None = None,
) -> int:
    """Train one trial of ``trial_class``; returns the process exit code (0 on success,
    also after a preemption or stop once the checkpoint is saved).

    In a hpcdet job (and not ``local``) everything comes from the Core API: the
    hyperparameters, the experiment config (training length, periods), the trial seed
    and the checkpoint to resume from. Otherwise (``local=True``, or outside a job) the
    trial runs in this process with the dummy Core API contexts, on the ranks of an
    initialised ``torch.distributed`` group if there is one: ``experiment_config`` gives
    the length and periods, ``hparams`` the hyperparameters (default: the constant ones
    of ``experiment_config``), the seed is ``reproducibility.experiment_seed`` (default
    0), checkpoints go to ``checkpoint_dir`` (default ``./checkpoints``) and
    ``latest_checkpoint`` names one there to resume from.

    Example::

        config = {"searcher": {"max_length": {"batches": 200}},
                  "hyperparameters": {"global_batch_size": 32, "lr": 0.1}}
        hpcdet.pytorch.run_trial_class(MyTrial, local=True, experiment_config=config)
    """
    if not local and trial_info_path() is not None:
        with init() as core:
            return _exit_code(Trainer(trial_class, core).run())
    core = local_core_context(
        experiment_config or {},
        hparams=hparams,
        checkpoint_dir=checkpoint_dir,
        latest_checkpoint=latest_checkpoint,
    )
    with core:
        return _exit_code(Trainer(trial_class, core).run())


def load_trial_from_checkpoint_path(
    path: str | os.PathLike[str],
    trial_class: type[PyTorchTrial] | None = None,
    trial_kwargs: Mapping[str, Any] | None = None,
) -> PyTorchTrial:
    """The trial saved in checkpoint directory ``path``, its models loaded, in this
    process (off-cluster contexts). ``trial_class`` defaults to the class named in the
    checkpoint, which must be importable.

    Example::

        trial = hpcdet.pytorch.load_trial_from_checkpoint_path("checkpoints/<uuid>")
        trial.model.eval()
    """
    directory = pathlib.Path(path)
    load_data = json.loads((directory / _checkpoint.LOAD_DATA_FILE).read_text())
    cls = trial_class or _import_class(load_data["trial_cls_spec"])
    core = local_core_context(
        load_data.get("experiment_config") or {},
        hparams=load_data.get("hparams") or {},
        checkpoint_dir=directory.parent,
    )
    context = cls.trial_context_class(core)
    trial: PyTorchTrial = instantiate_trial(
        cls, context, context.get_hparams(), **dict(trial_kwargs or {})
    )
    state = _checkpoint.read_state(directory, context.device)
    _checkpoint.load_into(state, context, {})
    return trial


def _import_class(spec: str) -> type[PyTorchTrial]:
    module_name, _, qualname = spec.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, PyTorchTrial)):
        raise TypeError(f"{spec} is not a PyTorchTrial class")
    return obj


def _exit_code(outcome: Outcome) -> int:
    if outcome is Outcome.STOPPED:
        print(f"hpcdet.pytorch: trial {outcome.value}", file=sys.stderr, flush=True)
    return 0
