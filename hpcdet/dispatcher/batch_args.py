"""A user's or a pool's extra batch options, checked by the scheduler they are for.

Experiments carry them as Determined does (``slurm.sbatch_args``, ``pbs.pbsbatch_args``) and
pools as ``sbatch_args``/``pbsbatch_args`` in master.yaml. The master, which knows no
scheduler, goes through these functions; each scheduler's plug-in names its module with the
same four functions (its ``batch_args`` role, imported lazily, like the backends).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from hpcdet.dispatcher import registry


def _module(scheduler: str) -> ModuleType:
    module = registry.scheduler(scheduler).module("batch_args")
    if module is None:
        raise ValueError(f"the {scheduler} scheduler takes no extra batch options")
    return module


def check_args(scheduler: str, args: Sequence[str], path: str) -> tuple[str, ...]:
    """``args`` once every item is safe and none sets what hpcdet controls; otherwise a
    :class:`~hpcdet.errors.ConfigError` naming ``path[i]`` and the option."""
    checked: tuple[str, ...] = _module(scheduler).check_args(args, path)
    return checked


def split_cpus_per_rank(scheduler: str, args: Sequence[str],
                        path: str) -> tuple[int, tuple[str, ...]]:
    """The CPUs per rank ``args`` ask for (Slurm ``--cpus-per-task``/``-c``; 1 if none),
    and the other arguments: hpcdet sizes each node's request from it."""
    result: tuple[int, tuple[str, ...]] = _module(scheduler).split_cpus_per_rank(args, path)
    return result


def without_gpu_options(scheduler: str, args: Sequence[str], path: str) -> tuple[str, ...]:
    """``args`` less the options that only mean something for a job with GPUs (Slurm's
    ``--mem-per-gpu``, ``--cpus-per-gpu``, ...): a pool's defaults, which a CPU-only trial
    (``slots_per_trial: 0``) leaves out."""
    result: tuple[str, ...] = _module(scheduler).without_gpu_options(args, path)
    return result


def node_filter(scheduler: str, args: Sequence[str]) -> tuple[set[str] | None, set[str]]:
    """(nodes a pool keeps, or None for all; nodes it drops) as its ``args`` carve it."""
    result: tuple[set[str] | None, set[str]] = _module(scheduler).node_filter(args)
    return result


def check_rest_args(scheduler: str, args: Sequence[str], path: str) -> None:
    """Refuse, naming ``path``, the options of ``args`` the scheduler's REST server cannot be
    sent (Slurm: slurmrestd reads no ``#SBATCH`` line; each option must have a job
    description field), so that ``det e create`` says so instead of the job's submission."""
    check = registry.scheduler(scheduler).attribute("rest_backend", "check_rest_args")
    if check is None:
        raise ValueError(f"the {scheduler} scheduler has no rest backend")
    check(args, path)
