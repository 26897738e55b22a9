"""``hpcdet.pytorch.init()``: the PyTorchTrialContext a script hands to ``Trainer``.

In a hpcdet job it is built on the Core API of the job (the trial's hyperparameters,
config, seed and ranks); anywhere else on the dummy Core API contexts ("local training",
as Determined calls it): metrics printed, checkpoints in ``./checkpoints``, one process,
or the ranks of a ``torchrun`` launch.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

import torch
import torch.distributed as torch_dist

from hpcdet.core import Context, DistributedContext, DummyDistributedContext, Info
from hpcdet.core import init as core_init
from hpcdet.core._context import dummy_context
from hpcdet.job.trial_info import trial_info_path
from hpcdet.pytorch._context import PyTorchTrialContext
from hpcdet.pytorch._trainer import seed_everything

# Variables torchrun (torch.distributed.run) sets on every rank it starts.
_TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@contextlib.contextmanager
def init(
    *,
    hparams: Mapping[str, Any] | None = None,
    exp_conf: Mapping[str, Any] | None = None,
    distributed: DistributedContext | None = None,
    aggregation_frequency: int = 1,
    enable_tensorboard_logging: bool = True,
) -> Iterator[PyTorchTrialContext]:
    """A :class:`PyTorchTrialContext` for ``Trainer(trial, context).fit(...)``; train inside
    the ``with`` block (the Core API contexts close when it ends).

    In a hpcdet job: the process group the harness joined (or ``distributed``), the
    trial's seed set on every rank, ``exp_conf`` replaced by the experiment's config, and
    ``hparams`` defaulting to the trial's. Outside a job: ``hparams`` and ``exp_conf`` as
    given (``{}`` when not), ``distributed`` or the ranks of an initialised
    ``torch.distributed`` group, or of a ``torchrun`` launch (the group is joined here
    and left at the end), else one process.

    Example::

        with hpcdet.pytorch.init(hparams={"lr": 0.1}) as context:
            trial = MyTrial(context)
            hpcdet.pytorch.Trainer(trial, context).fit(max_length=hpcdet.pytorch.Epoch(1))
    """
    with contextlib.ExitStack() as stack:
        if trial_info_path() is not None:
            core = core_init(distributed=distributed)
            seed_everything(core.info.trial_seed)
            exp_conf = core.info.experiment_config
        else:
            dist = distributed or _local_distributed(stack)
            core = local_core_context(exp_conf or {}, hparams=hparams or {}, distributed=dist)
        stack.enter_context(core)
        yield PyTorchTrialContext(
            core,
            hparams=hparams,
            exp_conf=exp_conf,
            aggregation_frequency=aggregation_frequency,
            enable_tensorboard_logging=enable_tensorboard_logging,
        )


def local_core_context(
    experiment_config: Mapping[str, Any],
    *,
    hparams: Mapping[str, Any] | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    latest_checkpoint: str | None = None,
    distributed: DistributedContext | None = None,
) -> Context:
    """Dummy Core API contexts for a trial outside a job: ``hparams`` (default: the
    constant ones of ``experiment_config``), the seed ``reproducibility.experiment_seed``
    (default 0), checkpoints in ``checkpoint_dir`` (default ``./checkpoints``), the ranks
    of ``distributed`` or of an initialised ``torch.distributed`` group."""
    if distributed is None:
        distributed = (
            DistributedContext.from_torch_distributed()
            if _group_initialized()
            else DummyDistributedContext()
        )
    info = Info(
        trial_id=None,
        experiment_id=None,
        trial_seed=_seed(experiment_config),
        hparams=dict(hparams if hparams is not None else constant_hparams(experiment_config)),
        latest_checkpoint=latest_checkpoint,
        experiment_config=dict(experiment_config),
    )
    return dummy_context(distributed, info, checkpoint_dir)


def constant_hparams(experiment_config: Mapping[str, Any]) -> dict[str, Any]:
    """Hyperparameters given as ``lr: 0.1`` or ``lr: {type: const, val: 0.1}``; others
    (ranges for a search) have no single value and are left out."""
    hparams: dict[str, Any] = {}
    for name, spec in (experiment_config.get("hyperparameters") or {}).items():
        if not isinstance(spec, Mapping):
            hparams[name] = spec
        elif spec.get("type") == "const":
            hparams[name] = spec.get("val")
    return hparams


def launched_by_torchrun(environ: Mapping[str, str]) -> bool:
    """Whether this process is one of several ranks started by ``torchrun``."""
    if not all(environ.get(name) for name in _TORCHRUN_VARS):
        return False
    return int(environ["WORLD_SIZE"]) > 1


def _local_distributed(stack: contextlib.ExitStack) -> DistributedContext:
    """The ranks of a local run: an initialised group's, or torchrun's (joined here)."""
    if _group_initialized():
        return DistributedContext.from_torch_distributed()
    if not launched_by_torchrun(os.environ):
        return DummyDistributedContext()
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    torch_dist.init_process_group(backend)
    stack.callback(torch_dist.destroy_process_group)
    return DistributedContext.from_torch_distributed()


def _group_initialized() -> bool:
    return bool(torch_dist.is_available() and torch_dist.is_initialized())


def _seed(experiment_config: Mapping[str, Any]) -> int:
    reproducibility = experiment_config.get("reproducibility") or {}
    return int(reproducibility.get("experiment_seed") or 0)

