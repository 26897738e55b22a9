"""Translate an experiment's effective config plus the master's settings into a JobSpec."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpcdet.client_tls import CERT_FILE_VAR
from hpcdet.dispatcher import BindMount, ContainerSpec, JobSpec
from hpcdet.dispatcher.batch_args import split_cpus_per_rank, without_gpu_options
from hpcdet.dispatcher.containers import holds
from hpcdet.dispatcher.jobdir import MASTER_CERT_FILE
from hpcdet.dispatcher.tags import trial_tag
from hpcdet.dispatcher.transport import Transport
from hpcdet.errors import ConfigError
from hpcdet.expconf import environment_variables
from hpcdet.master.queue.placement import place_config
from hpcdet.master.queue.pools import GPU_SLOT_TYPES, Pool, cpu_only, settings_pool
from hpcdet.master.queue.slots import slot_layout
from hpcdet.master.scheduling.container_checks import (
    check_bind_mounts,
    check_charliecloud,
    check_image,
)
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.experiment_config import batch_args, batch_section, checkpoint_dir

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


@dataclass(frozen=True)
class SlotMapping:
    """A trial's slots as nodes of ranks (one rank per slot), in scheduler-neutral terms."""

    nodes: int
    ranks_per_node: int
    cpus_per_rank: int
    gpus_per_node: int = 0
    gpu_type: str | None = None


def slot_mapping(settings: MasterSettings, config: Mapping[str, Any], pool: Pool, *,
                 cpus_per_rank: int = CPUS_PER_RANK) -> SlotMapping:
    """Determined's slot table: one rank per slot, and a GPU per slot in a GPU pool; 0
    slots is one rank and no GPU in any pool.

    Each backend turns the mapping into its scheduler's request (Slurm ``--gpus``/``--gres``
    as ``tres_supported``/``gres_supported`` say; PBS ``ngpus`` in ``-l select``).
    """
    scheduler = settings.resource_manager.type
    nodes, per_node = slot_layout(config, pool, scheduler)
    if not pool.uses_gpus or cpu_only(config):
        return SlotMapping(nodes, per_node, cpus_per_rank)
    name, section = batch_section(config, scheduler)
    gpu_type = section.get("gpu_type") or pool.gpu_type
    if gpu_type is not None and not _GPU_TYPE.match(str(gpu_type)):
        where = (f"<config>.{name}.gpu_type" if section.get("gpu_type")
                 else f"<master.yaml> gpu_type of resource pool {pool.name}")
        raise ConfigError([f"{where}: {gpu_type!r} is not a GPU type name (letters, digits, "
                           "'.', '_', '-')"])
    return SlotMapping(nodes, per_node, cpus_per_rank, per_node,
                       None if gpu_type is None else str(gpu_type))


def build_job_spec(settings: MasterSettings, config: Mapping[str, Any], run: TrialRun,
                   pool: Pool | None = None, *, files: Transport) -> JobSpec:
    """The JobSpec for ``run`` of a trial of an experiment with effective ``config``.

    ``pool`` is the trial's resource pool (:func:`hpcdet.master.queue.pools.pool_for_config`);
    None means the pool as master.yaml alone describes it. ``files``: where the container
    paths are checked (the backend's transport).
    """
    rm = settings.resource_manager
    if pool is None:
        pool = settings_pool(settings, (config.get("resources") or {}).get("resource_pool"),
                             aux=cpu_only(config))
    # A CPU-only trial's rank is a CPU slot even in a GPU pool: no GPU, no --nv, cpu image.
    slot_type = "cpu" if cpu_only(config) else pool.slot_type
    where, own_args = batch_args(config, rm.type)
    pool_args = pool.sbatch_args
    if cpu_only(config):  # the pool's GPU options (--mem-per-gpu...) would fail a GPU-less job
        pool_args = without_gpu_options(rm.type, pool_args, f"resource pool {pool.name}")
    # The pool's first: the scheduler takes the last of a repeated option, so the user's win.
    user_args = (*pool_args, *own_args)
    cpus_per_rank, user_args = split_cpus_per_rank(rm.type, user_args, where)
    mapping = slot_mapping(settings, config, pool, cpus_per_rank=cpus_per_rank)
    placement = place_config(settings, pool, config, run.owner)
    return JobSpec(
        name=run.job_name,
        job_dir=run.job_dir,
        nodes=mapping.nodes,
        ranks_per_node=mapping.ranks_per_node,
        cpus_per_rank=mapping.cpus_per_rank,
        gpus_per_node=mapping.gpus_per_node,
        gpu_type=mapping.gpu_type,
        command=_harness_command(rm.container_run_type),
        partition=placement.partition,
        qos=placement.qos,
        nice=placement.nice,
        account=placement.account,
        wckey=placement.wckey,
        comment=trial_tag(rm.cluster_name, run.trial_id, run.run_id),
        exclude=",".join(run.excluded_nodes) or None,
        signal=f"USR2@{rm.walltime_signal_seconds}",
        # The scheduler may requeue the job itself (preemption, node failure, a requeue
        # command); the master adopts the requeue (see hpcdet.master.scheduling.job_outcomes).
        requeue=True,
        sbatch_args=user_args,
        environment=_environment(settings, config, run, slot_type),
        container=_container(settings, config, run, slot_type, files),
        script_name=f"job-{run.run_id}.sh",
        owner=run.owner if settings.runas.owner_mode else None,
        launcher=batch_section(config, rm.type)[1].get("launcher") or "default",
    )


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
    cache = settings.resource_manager.image_cache_dir
    if cache and settings.resource_manager.container_run_type in ("apptainer", "singularity"):
        # Where `apptainer exec docker://...` keeps what it pulled (both names: Singularity
        # 3.x reads only its own, Apptainer reads both).
        env.update({"APPTAINER_CACHEDIR": cache, "SINGULARITY_CACHEDIR": cache})
    return env


def _container(settings: MasterSettings, config: Mapping[str, Any], run: TrialRun,
               slot_type: str, files: Transport) -> ContainerSpec:
    rm = settings.resource_manager
    if rm.container_run_type == "none":
        return ContainerSpec()
    if rm.container_path_checks:
        check_bind_mounts(config, files)
    binds = [_job_dir_bind(settings, run.job_dir)]
    ckpt = checkpoint_dir(config, run.job_dir)
    if not any(holds(bind, ckpt) for bind in binds):  # e.g. an object store's staging dir
        binds.append(BindMount(ckpt, ckpt, create=True))
    first_user_bind = len(binds)
    binds += [BindMount(b["host_path"], b["container_path"], bool(b.get("read_only")))
              for b in config.get("bind_mounts") or []]
    image = _image(settings, config, slot_type, files)
    if rm.container_run_type == "charliecloud":
        check_charliecloud(image, binds, first_user_bind, look=rm.container_path_checks,
                           files=files)
    environment = _environment(settings, config, run, slot_type)
    return ContainerSpec(run_type=rm.container_run_type, image=image, bind_mounts=tuple(binds),
                         use_gpus=slot_type in GPU_SLOT_TYPES,
                         pass_environment=tuple(sorted(environment)),
                         force_pull=bool((config.get("environment") or {}).get(
                             "force_pull_image")))


def _job_dir_bind(settings: MasterSettings, job_dir: str) -> BindMount:
    """The job directory at its own path; for Charliecloud the whole job storage root, which
    holds every job directory (:mod:`.job_dirs`): ch-run binds only onto a directory the
    image already has, so the image needs one mount point, the root, not one per job."""
    rm = settings.resource_manager
    if rm.container_run_type == "charliecloud":
        root = str(Path(rm.job_storage_root).expanduser())
        return BindMount(root, root)
    return BindMount(job_dir, job_dir)


def _image(settings: MasterSettings, config: Mapping[str, Any], slot_type: str,
           files: Transport) -> str:
    image = (config.get("environment") or {}).get("image")
    if isinstance(image, Mapping):
        slot = "gpu" if slot_type in GPU_SLOT_TYPES else "cpu"
        image = image.get(slot) or image.get("cuda") or image.get("cpu")
    rm = settings.resource_manager
    if not image:
        raise ConfigError(["<config>.environment.image: is required when the master's "
                           f"container_run_type is {rm.container_run_type}"])
    root = rm.apptainer_image_root
    resolved = str(image)
    # Not podman's: a relative name there is a registry reference (docker.io/...).
    if root and rm.container_run_type != "podman" and "://" not in image \
            and not image.startswith("/"):
        resolved = str(Path(root) / image)
    if rm.container_path_checks:
        check_image(rm.container_run_type, resolved, root if resolved != image else None, files)
    return resolved
