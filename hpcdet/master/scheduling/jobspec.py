"""Translate an experiment's effective config plus the master's settings into a JobSpec."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpcdet.client_tls import CERT_FILE_VAR
from hpcdet.dispatcher import BindMount, ContainerSpec, JobSpec
from hpcdet.dispatcher.jobdir import MASTER_CERT_FILE
from hpcdet.dispatcher.slurm.sbatch_args import parse_sbatch_args
from hpcdet.errors import ConfigError
from hpcdet.expconf import environment_variables
from hpcdet.master.queue.pools import GPU_SLOT_TYPES, Pool, settings_pool
from hpcdet.master.scheduling.placement import JobOwner, Placement, place
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.runas import owner_root

# CPUs each rank (slot) gets in the srun step; the allocation holds them all per node.
CPUS_PER_RANK = 1
# A Slurm GRES type: it is written into --gpus/--gres, where ":" and "," have meanings.
_GPU_TYPE = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class TrialRun:
    """Identifies one job of one trial."""

    experiment_id: int
    trial_id: int
    run_id: int
    job_dir: str
    # Nodes a log policy (exclude_node) took out of this trial's submissions.
    excluded_nodes: tuple[str, ...] = ()
    # Distinguishes this trial from the same ids in another master's database.
    tag: str = ""
    # The experiment's owner: the fair-share account may be theirs.
    owner: str = ""

    @property
    def job_name(self) -> str:
        """Unique per run: a restarted master finds a job it submitted by this name."""
        name = f"det-{self.experiment_id}-{self.trial_id}-{self.run_id}"
        return f"{name}-{self.tag}" if self.tag else name


def job_dir_for(settings: MasterSettings, experiment_id: int, trial_id: int,
                owner: str = "") -> str:
    """``<root>/exp-N/trial-M``; under ``<root>/<owner>/`` when jobs run as their owner."""
    root = owner_root(settings.resource_manager.job_storage_root, settings.runas, owner)
    return str(root / f"exp-{experiment_id}" / f"trial-{trial_id}")


def slot_layout(config: Mapping[str, Any], pool: Pool | None = None) -> tuple[int, int]:
    """(nodes, ranks per node) from ``resources.slots_per_trial`` and ``slurm.slots_per_node``.

    Without ``slots_per_node``, a GPU pool puts as many slots on a node as its nodes have
    GPUs (all on one node if that is unknown), and a CPU pool puts them all on one node.
    The slots must then split evenly over the nodes. One rank per slot.
    """
    slots = int(config.get("resources", {}).get("slots_per_trial", 1))
    explicit = (config.get("slurm") or {}).get("slots_per_node")
    if explicit:
        per_node = int(explicit)
        if slots % per_node:
            raise ConfigError([f"<config>.resources.slots_per_trial: {slots} is not a multiple "
                               f"of slurm.slots_per_node ({per_node})"])
        return slots // per_node, per_node
    per_node = slots
    if pool is not None and pool.uses_gpus and pool.gpus_per_node > 0:
        per_node = min(slots, pool.gpus_per_node)
    if slots % per_node:
        raise ConfigError([_uneven_slots(slots, per_node, pool)])
    return slots // per_node, per_node


def _uneven_slots(slots: int, per_node: int, pool: Pool | None) -> str:
    fits = max(n for n in range(1, per_node + 1) if slots % n == 0)
    where = f" in resource pool {pool.name}" if pool is not None else ""
    return (f"<config>.resources.slots_per_trial: {slots} GPUs do not split evenly over nodes "
            f"with {per_node} GPUs{where}; set slurm.slots_per_node (e.g. {fits}) or ask "
            f"for a multiple of {per_node}")


@dataclass(frozen=True)
class SlotMapping:
    """How a trial's slots become a Slurm allocation and its one-rank-per-slot step."""

    nodes: int
    ranks_per_node: int
    cpus_per_rank: int
    # GPU directives by long option name: gpus, gpus-per-node or gres.
    directives: Mapping[str, str]

    @property
    def alloc_cpus_per_task(self) -> int:
        """The allocation has one task per node, holding the CPUs of all its ranks."""
        return self.ranks_per_node * self.cpus_per_rank


def slot_mapping(settings: MasterSettings, config: Mapping[str, Any], pool: Pool, *,
                 cpus_per_rank: int = CPUS_PER_RANK) -> SlotMapping:
    """Determined's slot table for Slurm, with one task per node and one rank per slot.

    cuda/rocm with TRES: ``--gpus=[type:]N`` (``--gpus-per-node=[type:]spn`` when
    ``slurm.slots_per_node`` is set); cuda/rocm with GRES only: ``--gres=gpu[:type]:spn``;
    neither, or cpu: no GPU option. Always an exact node count (Slurm 22.05.5-8 refuses
    ``--gpus=N`` with a node range when N exceeds one node's GPUs).
    """
    nodes, per_node = slot_layout(config, pool)
    directives: dict[str, str] = {}
    if pool.uses_gpus:
        directives = _gpu_directives(settings, config, pool, nodes * per_node, per_node)
    return SlotMapping(nodes, per_node, cpus_per_rank, directives)


def _gpu_directives(settings: MasterSettings, config: Mapping[str, Any], pool: Pool,
                    slots: int, per_node: int) -> dict[str, str]:
    rm = settings.resource_manager
    slurm = config.get("slurm") or {}
    gpu_type = slurm.get("gpu_type") or pool.gpu_type
    if gpu_type is not None and not _GPU_TYPE.match(str(gpu_type)):
        where = ("<config>.slurm.gpu_type" if slurm.get("gpu_type")
                 else f"<master.yaml> gpu_type of resource pool {pool.name}")
        raise ConfigError([f"{where}: {gpu_type!r} is not a GPU type name (letters, digits, "
                           "'.', '_', '-')"])
    typed = f"{gpu_type}:" if gpu_type else ""
    if rm.tres_supported:
        if slurm.get("slots_per_node"):
            return {"gpus-per-node": f"{typed}{per_node}"}
        return {"gpus": f"{typed}{slots}"}
    if rm.gres_supported:
        return {"gres": f"gpu:{typed}{per_node}"}
    return {}  # the site guarantees GPUs otherwise (e.g. a pool of GPU-only nodes)


def checkpoint_dir(config: Mapping[str, Any]) -> str:
    """The host directory checkpoints are written to."""
    storage = config["checkpoint_storage"]
    if storage.get("type") == "directory":
        return str(storage["container_path"])
    host = Path(storage["host_path"])
    return str(host / storage["storage_path"]) if storage.get("storage_path") else str(host)


def build_job_spec(settings: MasterSettings, config: Mapping[str, Any], run: TrialRun,
                   pool: Pool | None = None) -> JobSpec:
    """The JobSpec for ``run`` of a trial of an experiment with effective ``config``.

    ``pool`` is the trial's resource pool (:func:`hpcdet.master.queue.pools.pool_for_config`);
    None means the pool as master.yaml alone describes it.
    """
    rm = settings.resource_manager
    if pool is None:
        pool = settings_pool(settings, (config.get("resources") or {}).get("resource_pool"))
    # The pool's first: sbatch takes the last of a repeated option, so the user's win.
    user_args = (*pool.sbatch_args, *((config.get("slurm") or {}).get("sbatch_args") or ()))
    cpus_per_rank, user_args = split_cpus_per_task(user_args)
    mapping = slot_mapping(settings, config, pool, cpus_per_rank=cpus_per_rank)
    placement = place_config(settings, pool, config, run.owner)
    return JobSpec(
        name=run.job_name,
        job_dir=run.job_dir,
        nodes=mapping.nodes,
        ntasks_per_node=mapping.ranks_per_node,
        cpus_per_task=mapping.cpus_per_rank,
        alloc_ntasks_per_node=1,
        alloc_cpus_per_task=mapping.alloc_cpus_per_task,
        resource_directives=mapping.directives,
        command=_harness_command(rm.container_run_type),
        partition=placement.partition,
        qos=placement.qos,
        nice=placement.nice,
        account=placement.account,
        wckey=placement.wckey,
        comment=f"hpcdet:{rm.cluster_name}:trial-{run.trial_id}:run-{run.run_id}",
        exclude=",".join(run.excluded_nodes) or None,
        signal=f"USR2@{rm.walltime_signal_seconds}",
        # Slurm may requeue the job itself (preemption, node failure, scontrol requeue);
        # the master adopts the requeue (see hpcdet.master.scheduling.job_outcomes).
        requeue=True,
        sbatch_args=user_args,
        environment=_environment(settings, config, run, pool.slot_type),
        container=_container(settings, config, run, pool.slot_type),
        script_name=f"job-{run.run_id}.sh",
        owner=run.owner if settings.runas.owner_mode else None,
    )


def split_cpus_per_task(args: Sequence[str]) -> tuple[int, tuple[str, ...]]:
    """The CPUs per rank a user's ``--cpus-per-task``/``-c`` asks for (the last one wins, as
    in sbatch), and the other arguments. hpcdet sizes the allocation's one task per node
    from it (ranks per node times CPUs per rank) and gives each rank that many."""
    cpus, rest = CPUS_PER_RANK, []
    for arg in args:
        if _option_of(arg) in ("--cpus-per-task", "-c"):
            cpus = _positive(parse_sbatch_args([arg])[0].value, arg)
        else:
            rest.append(arg)
    return cpus, tuple(rest)


def _option_of(arg: str) -> str:
    return parse_sbatch_args([arg])[0].option


def _positive(value: str | None, arg: str) -> int:
    if value is None or not value.isdigit() or int(value) < 1:
        raise ConfigError([f"<config>.slurm.sbatch_args: {arg!r} needs a positive number of CPUs"])
    return int(value)


def place_config(settings: MasterSettings, pool: Pool, config: Mapping[str, Any],
                 owner: str) -> Placement:
    """Where an experiment's jobs go in Slurm's queue (:mod:`.placement`)."""
    resources = config.get("resources") or {}
    job_owner = JobOwner(owner, workspace=config.get("workspace"), project=config.get("project"),
                         labels=tuple(config.get("labels") or ()))
    return place(settings, pool, job_owner, priority=resources.get("priority"),
                 weight=float(resources.get("weight") or 1.0))


def _harness_command(run_type: str) -> tuple[str, ...]:
    # Without a container the ranks use the master's own interpreter, which has hpcdet.
    python = sys.executable if run_type == "none" else "python3"
    return (python, "-m", "hpcdet.harness")


def _environment(settings: MasterSettings, config: Mapping[str, Any], run: TrialRun,
                 slot_type: str) -> dict[str, str]:
    env = environment_variables(config.get("environment"))
    env.update({
        "DET_MASTER": settings.master_url,
        "DET_EXPERIMENT_ID": str(run.experiment_id),
        "DET_TRIAL_ID": str(run.trial_id),
        "DET_TRIAL_RUN_ID": str(run.run_id),
        "DET_JOB_DIR": run.job_dir,
        "DET_TRIAL_INFO": str(Path(run.job_dir) / "trial.json"),
        "DET_SLOT_TYPE": slot_type,
        "PYTHONUNBUFFERED": "1",
    })
    if settings.tls is not None:
        env[CERT_FILE_VAR] = str(Path(run.job_dir) / MASTER_CERT_FILE)
    return env


def _container(settings: MasterSettings, config: Mapping[str, Any], run: TrialRun,
               slot_type: str) -> ContainerSpec:
    rm = settings.resource_manager
    if rm.container_run_type == "none":
        return ContainerSpec()
    binds = [BindMount(run.job_dir, run.job_dir)]
    ckpt = checkpoint_dir(config)
    binds.append(BindMount(ckpt, ckpt))
    binds += [BindMount(b["host_path"], b["container_path"], bool(b.get("read_only")))
              for b in config.get("bind_mounts") or []]
    environment = _environment(settings, config, run, slot_type)
    return ContainerSpec(run_type=rm.container_run_type,
                         image=_image(settings, config, slot_type), bind_mounts=tuple(binds),
                         use_gpus=slot_type in GPU_SLOT_TYPES,
                         pass_environment=tuple(sorted(environment)))


def _image(settings: MasterSettings, config: Mapping[str, Any], slot_type: str) -> str:
    image = (config.get("environment") or {}).get("image")
    if isinstance(image, Mapping):
        slot = "gpu" if slot_type in GPU_SLOT_TYPES else "cpu"
        image = image.get(slot) or image.get("cuda") or image.get("cpu")
    if not image:
        raise ConfigError(["<config>.environment.image: is required when the master's "
                           f"container_run_type is {settings.resource_manager.container_run_type}"])
    root = settings.resource_manager.apptainer_image_root
    if root and "://" not in image and not image.startswith("/"):
        return str(Path(root) / image)
    return str(image)
