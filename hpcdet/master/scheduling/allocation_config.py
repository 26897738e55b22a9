"""``resources.allocation`` of an experiment config: read it, and refuse what cannot run.

Allocation mode (docs/allocation-mode.md) is opt-in per experiment; an experiment without
the field runs every trial as its own batch job, exactly as before.
"""

from __future__ import annotations

import posixpath
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hpcdet.dispatcher import Backend, Submission, registry
from hpcdet.dispatcher.allocation import AllocationSpec, render_allocation
from hpcdet.dispatcher.jobdir import MASTER_CERT_FILE, TOKEN_FILE
from hpcdet.dispatcher.tags import allocation_tag
from hpcdet.errors import ConfigError
from hpcdet.master.queue.pools import Pool
from hpcdet.master.scheduling.job_dirs import trial_job_dir
from hpcdet.master.scheduling.jobspec import TrialRun, build_job_spec
from hpcdet.master.settings.core import MasterSettings

_WHERE = "<config>.resources.allocation"


@dataclass(frozen=True)
class AllocationRequest:
    """What an experiment asks of its allocation: ``slots`` ranks for ``walltime``."""

    slots: int
    walltime: str


def allocation_request(config: Mapping[str, Any]) -> AllocationRequest | None:
    """The experiment's allocation request, or None when it runs trials as jobs."""
    block = (config.get("resources") or {}).get("allocation")
    if not isinstance(block, Mapping):
        return None
    return AllocationRequest(int(block["slots"]), str(block["walltime"]))


def check_allocation(config: Mapping[str, Any], scheduler: str, *,
                     owner_mode: bool = False) -> None:
    """Refuse an allocation this master cannot run, with one message each.

    PBS has no steps inside a job that hpcdet drives (no ``srun``); in run-as-owner mode
    the master could not write the step scripts the owner's agent runs; and a trial that
    needs more slots than the allocation holds could never be placed in it.
    """
    request = allocation_request(config)
    if request is None:
        return
    capability = registry.scheduler(scheduler).capabilities.allocation
    if not capability.supported:
        raise ConfigError([f"{_WHERE}: {capability.reason}; this master's resource manager "
                           f"is {scheduler}"])
    if owner_mode:
        raise ConfigError([f"{_WHERE}: allocation mode is not available when jobs run as "
                           "their owners (security.jobs_run_as: owner)"])
    slots = int((config.get("resources") or {}).get("slots_per_trial") or 1)
    if slots > request.slots:
        raise ConfigError([f"{_WHERE}.slots: {request.slots} is fewer than a trial needs "
                           f"(resources.slots_per_trial: {slots})"])


def allocation_dir(settings: MasterSettings, experiment_id: int, allocation_id: int,
                   owner: str = "") -> str:
    """``<root>/exp-N/allocation-K``: next to the experiment's trials' directories."""
    trial_dir = trial_job_dir(settings, experiment_id, 0, owner)
    return posixpath.join(posixpath.dirname(trial_dir), f"allocation-{allocation_id}")


def allocation_spec(settings: MasterSettings, backend: Backend, pool: Pool,
                    allocation_id: int, job_dir: str, name: str, config: Mapping[str, Any],
                    owner: str, request: AllocationRequest, *,
                    tls: bool = False) -> AllocationSpec:
    """The allocation job: the queue placement, pool and per-slot CPUs/GPUs of the
    experiment's trial jobs (:func:`build_job_spec` of a probe run), ``slots`` tasks."""
    probe = build_job_spec(settings, config, TrialRun(0, 0, 0, job_dir, owner=owner), pool,
                           files=backend.transport)
    command = [sys.executable, "-m", "hpcdet.launch.allocation_agent",
               "--master", settings.master_url, "--allocation", str(allocation_id),
               "--token-file", posixpath.join(job_dir, TOKEN_FILE)]
    if tls:
        command += ["--cert-file", posixpath.join(job_dir, MASTER_CERT_FILE)]
    return AllocationSpec(
        name=name, job_dir=job_dir, slots=request.slots, time_limit=request.walltime,
        command=tuple(command), cpus_per_slot=probe.cpus_per_rank,
        gpus_per_slot=1 if probe.gpus_per_node else 0, gpu_type=probe.gpu_type,
        partition=probe.partition, account=probe.account, qos=probe.qos, wckey=probe.wckey,
        comment=allocation_tag(settings.resource_manager.cluster_name, allocation_id),
        nice=probe.nice, exclude=probe.exclude, sbatch_args=probe.sbatch_args,
        environment={"PYTHONUNBUFFERED": "1"})


def dry_run_allocation(settings: MasterSettings, backend: Backend, pool: Pool,
                       config: Mapping[str, Any], owner: str,
                       job_root: str) -> Submission | None:
    """The allocation job ``--dry-run`` shows (None without allocation mode)."""
    request = allocation_request(config)
    if request is None:
        return None
    job_dir = posixpath.join(job_root, "allocation-NEW")
    spec = allocation_spec(settings, backend, pool, 0, job_dir, "det-NEW-alloc", config, owner,
                           request, tls=settings.tls is not None)
    return render_allocation(backend, spec)
