"""Determined's singleton-style Core API (``core_v2``), managed and unmanaged.

Inside a trial job of the master (``$DET_TRIAL_INFO`` set) :func:`init` is
:func:`hpcdet.core.init` and the ``Config`` is ignored, as in Determined. Anywhere else
(a login node, ``torchrun``, ``srun`` in your own sbatch script, ``mpiexec`` in a qsub
job) it makes an *unmanaged* experiment and trial in the master (``$DET_MASTER``, logged
in as ``det`` is) and reports into them.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

from hpcdet import core
from hpcdet.client import MasterClient
from hpcdet.core import _context as core_context
from hpcdet.core._distributed import DistributedContext
from hpcdet.core._preempt import clear_preemption, poll_interval_from_environ
from hpcdet.experimental.core_v2 import _unmanaged
from hpcdet.job.trial_info import trial_info_path

_context: core.Context | None = None
_master_url: str | None = None
_atexit_registered = False


@dataclasses.dataclass
class Config:
    """An unmanaged experiment's settings (ignored in a managed trial).

    ``external_experiment_id``/``external_trial_id`` name them for resuming: a second run
    with the same ids continues the same trial (a new run, from its latest checkpoint).
    ``checkpoint_storage``: a directory (``shared_fs``) or a storage dict; default: the
    cluster's, as for experiments the master runs.
    """

    name: str | None = None
    hparams: dict[str, Any] | None = None
    data: dict[str, Any] | None = None
    description: str | None = None
    labels: list[str] | None = None
    workspace: str | None = None
    project: str | None = None
    checkpoint_storage: str | dict[str, Any] | None = None
    searcher: dict[str, Any] | None = None
    external_experiment_id: str | None = None
    external_trial_id: str | None = None


class DefaultConfig(Config):
    """Deprecated in Determined for :class:`Config`; still accepted, with its warning."""

    def __init__(self, **kwargs: Any) -> None:
        warnings.warn("'DefaultConfig' is deprecated: use 'Config'", FutureWarning,
                      stacklevel=2)
        super().__init__(**kwargs)


class UnmanagedConfig(Config):
    """Deprecated in Determined for :class:`Config`; still accepted, with its warning."""

    def __init__(self, **kwargs: Any) -> None:
        warnings.warn("'UnmanagedConfig' is deprecated: use 'Config'", FutureWarning,
                      stacklevel=2)
        super().__init__(**kwargs)



def _singletons() -> ModuleType:
    """The package whose attributes are Determined's singletons (``core_v2.train``, ...):
    found, not imported, since the package imports this module."""
    return sys.modules[__name__.rpartition(".")[0]]


def init_context(
    *,
    config: Config | None = None,
    defaults: Config | None = None,
    unmanaged: Config | None = None,
    client: Any = None,
    distributed: DistributedContext | None = None,
    checkpoint_storage: str | dict[str, Any] | None = None,
    preempt_mode: core.PreemptMode = core.PreemptMode.WorkersAskChief,
    tensorboard_mode: core.TensorboardMode = core.TensorboardMode.AUTO,
) -> core.Context:
    """A core context for a ``with`` block (an exception in it marks the trial ERROR)."""
    context, _ = _open(_merged(config, defaults, unmanaged), client, distributed,
                       checkpoint_storage, preempt_mode, tensorboard_mode)
    return context


def init(
    *,
    config: Config | None = None,
    defaults: Config | None = None,
    unmanaged: Config | None = None,
    client: Any = None,
    distributed: DistributedContext | None = None,
    checkpoint_storage: str | dict[str, Any] | None = None,
    preempt_mode: core.PreemptMode = core.PreemptMode.WorkersAskChief,
    tensorboard_mode: core.TensorboardMode = core.TensorboardMode.AUTO,
) -> None:
    """Start the singleton: ``core_v2.train``, ``.checkpoint``, ``.info``... are set.

    Close it with :func:`close` (also called at exit; an uncaught exception or a non-zero
    ``sys.exit`` marks an unmanaged trial ERROR, else it ends COMPLETED).
    """
    global _context, _master_url, _atexit_registered
    close()
    _context, _master_url = _open(_merged(config, defaults, unmanaged), client, distributed,
                                  checkpoint_storage, preempt_mode, tensorboard_mode)
    for name in ("train", "checkpoint", "distributed", "preempt", "searcher", "info"):
        setattr(_singletons(), name, getattr(_context, name))
    if not _atexit_registered:
        atexit.register(close)
        _atexit_registered = True


def close() -> None:
    """Ship what is queued, report the trial's end (unmanaged) and clear the singleton."""
    global _context
    context, _context = _context, None
    for name in ("train", "checkpoint", "distributed", "preempt", "searcher", "info"):
        setattr(_singletons(), name, None)
    if context is not None:
        context.close()


def url_reverse_webui_exp_view() -> str:
    """The web page of the running experiment."""
    info: core.Info | None = _singletons().info
    if info is None or info.experiment_id is None or _master_url is None:
        raise RuntimeError("core_v2.init() has not started an experiment in a master")
    return f"{_master_url}/experiments/{info.experiment_id}"


def _merged(config: Config | None, defaults: Config | None,
            unmanaged: Config | None) -> Config | None:
    """Determined's rule: ``config`` wins; else ``defaults`` with ``unmanaged``'s ids."""
    if config is not None:
        return config
    if defaults is None:
        return None
    # A plain Config: copying a DefaultConfig would warn again.
    merged = Config(**{f.name: getattr(defaults, f.name) for f in dataclasses.fields(Config)})
    if unmanaged is not None:
        for field in ("workspace", "project", "external_experiment_id", "external_trial_id"):
            setattr(merged, field, getattr(merged, field) or getattr(unmanaged, field))
    return merged


def _open(config: Config | None, client: Any, distributed: DistributedContext | None,
          checkpoint_storage: str | dict[str, Any] | None, preempt_mode: core.PreemptMode,
          tensorboard_mode: core.TensorboardMode) -> tuple[core.Context, str | None]:
    if trial_info_path() is not None:  # a trial of the master: it decides everything
        context = core.init(distributed=distributed, preempt_mode=preempt_mode,
                            tensorboard_mode=tensorboard_mode)
        return context, context.info.master_url
    if config is None:
        raise ValueError("either specify `config` (or `defaults`), or run as a managed "
                         "hpcdet experiment")
    core.TensorboardMode(tensorboard_mode)
    mode = core.PreemptMode(preempt_mode)
    clear_preemption()  # an earlier run of this process was stopped, not this one
    cleanup: list[Callable[[], None]] = []
    dist = distributed or core_context.distributed_from_environment({}, cleanup)
    transports: list[Any] = []  # the chief's SDK client's (tests answer in process)
    start = _unmanaged.on_every_rank(
        dist, lambda: _start(config, client, checkpoint_storage, transports))
    trial = _unmanaged.trial_of(start)

    def connect(timeout: float) -> MasterClient:
        return MasterClient(start.master_url, token=start.token, timeout=timeout,
                            cert_file=start.cert_file,
                            transport=transports[0] if transports else None)

    context = core_context.trial_context(
        trial, dist, connect, cleanup, poll_seconds=poll_interval_from_environ(),
        every_rank_reports=True, context_class=_unmanaged.UnmanagedContext)
    context.preempt = type(context.preempt)(dist, mode)
    if dist.is_chief:
        reporter = _unmanaged.RunReporter(connect, trial.trial_id)
        assert isinstance(context, _unmanaged.UnmanagedContext)
        context.run_reporter = reporter
        context.add_cleanup(reporter.close)
    return context, start.master_url


def _start(config: Config, client: Any, checkpoint_storage: str | dict[str, Any] | None,
           transports: list[Any]) -> _unmanaged.RunStart:
    """The chief's part: the experiment and the trial run, asked of the master."""
    from hpcdet.experimental._determined import Determined

    determined = client if client is not None else Determined()
    if getattr(determined, "_transport", None) is not None:
        transports.append(determined._transport)
    storage = checkpoint_storage or config.checkpoint_storage
    doc: dict[str, Any] = {
        "name": config.name or f"unmanaged-{os.urandom(4).hex()}",
        "description": config.description, "labels": config.labels, "data": config.data,
        "searcher": config.searcher,
        "checkpoint_storage": ({"type": "shared_fs", "host_path": os.fspath(storage)}
                               if isinstance(storage, (str, os.PathLike)) else storage),
    }
    return _unmanaged.start_run(
        determined._session, {k: v for k, v in doc.items() if v is not None},
        external_experiment_id=config.external_experiment_id,
        external_trial_id=config.external_trial_id, hparams=config.hparams,
        workspace=config.workspace, project=config.project)
