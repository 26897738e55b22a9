"""Translate an experiment's effective config plus the master's settings into a JobSpec."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpcdet.dispatcher import BindMount, ContainerSpec, JobSpec
from hpcdet.errors import ConfigError
from hpcdet.expconf import environment_variables
from hpcdet.master.settings import MasterSettings


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

    @property
    def job_name(self) -> str:
        """Unique per run: a restarted master finds a job it submitted by this name."""
        name = f"det-{self.experiment_id}-{self.trial_id}-{self.run_id}"
        return f"{name}-{self.tag}" if self.tag else name


def job_dir_for(settings: MasterSettings, experiment_id: int, trial_id: int) -> str:
    root = Path(settings.resource_manager.job_storage_root).expanduser()
    return str(root / f"exp-{experiment_id}" / f"trial-{trial_id}")


def slot_layout(config: Mapping[str, Any]) -> tuple[int, int]:
    """(nodes, ranks per node) from ``resources.slots_per_trial`` and ``slurm.slots_per_node``.

    Without ``slots_per_node`` all slots go on one node, one rank per slot.
    """
    slots = int(config.get("resources", {}).get("slots_per_trial", 1))
    per_node = int((config.get("slurm") or {}).get("slots_per_node") or slots)
    if slots % per_node:
        raise ConfigError([f"<config>.resources.slots_per_trial: {slots} is not a multiple of "
                           f"slurm.slots_per_node ({per_node})"])
    return slots // per_node, per_node


def checkpoint_dir(config: Mapping[str, Any]) -> str:
    """The host directory checkpoints are written to."""
    storage = config["checkpoint_storage"]
    if storage.get("type") == "directory":
        return str(storage["container_path"])
    host = Path(storage["host_path"])
    return str(host / storage["storage_path"]) if storage.get("storage_path") else str(host)


def build_job_spec(settings: MasterSettings, config: Mapping[str, Any], run: TrialRun) -> JobSpec:
    """The JobSpec for ``run`` of a trial of an experiment with effective ``config``."""
    nodes, per_node = slot_layout(config)
    rm = settings.resource_manager
    return JobSpec(
        name=run.job_name,
        job_dir=run.job_dir,
        nodes=nodes,
        ntasks_per_node=per_node,
        command=_harness_command(rm.container_run_type),
        partition=config.get("resources", {}).get("resource_pool")
        or rm.default_compute_resource_pool,
        comment=f"hpcdet:{rm.cluster_name}:trial-{run.trial_id}:run-{run.run_id}",
        exclude=",".join(run.excluded_nodes) or None,
        signal=f"USR2@{rm.walltime_signal_seconds}",
        # Slurm may requeue the job itself (preemption, node failure, scontrol requeue);
        # the master adopts the requeue (see hpcdet.master.job_outcomes).
        requeue=True,
        sbatch_args=tuple((config.get("slurm") or {}).get("sbatch_args") or ()),
        environment=_environment(settings, config, run),
        container=_container(settings, config, run),
        script_name=f"job-{run.run_id}.sh",
    )


def _harness_command(run_type: str) -> tuple[str, ...]:
    # Without a container the ranks use the master's own interpreter, which has hpcdet.
    python = sys.executable if run_type == "none" else "python3"
    return (python, "-m", "hpcdet.harness")


def _environment(settings: MasterSettings, config: Mapping[str, Any],
                 run: TrialRun) -> dict[str, str]:
    env = environment_variables(config.get("environment"))
    env.update({
        "DET_MASTER": settings.master_url,
        "DET_EXPERIMENT_ID": str(run.experiment_id),
        "DET_TRIAL_ID": str(run.trial_id),
        "DET_TRIAL_RUN_ID": str(run.run_id),
        "DET_JOB_DIR": run.job_dir,
        "DET_TRIAL_INFO": str(Path(run.job_dir) / "trial.json"),
        "DET_SLOT_TYPE": settings.resource_manager.slot_type,
        "PYTHONUNBUFFERED": "1",
    })
    return env


def _container(settings: MasterSettings, config: Mapping[str, Any],
               run: TrialRun) -> ContainerSpec:
    rm = settings.resource_manager
    if rm.container_run_type == "none":
        return ContainerSpec()
    binds = [BindMount(run.job_dir, run.job_dir)]
    ckpt = checkpoint_dir(config)
    binds.append(BindMount(ckpt, ckpt))
    binds += [BindMount(b["host_path"], b["container_path"], bool(b.get("read_only")))
              for b in config.get("bind_mounts") or []]
    return ContainerSpec(run_type=rm.container_run_type, image=_image(settings, config),
                         bind_mounts=tuple(binds), use_gpus=rm.slot_type != "cpu",
                         pass_environment=tuple(sorted(_environment(settings, config, run))))


def _image(settings: MasterSettings, config: Mapping[str, Any]) -> str:
    image = (config.get("environment") or {}).get("image")
    if isinstance(image, Mapping):
        slot = "gpu" if settings.resource_manager.slot_type != "cpu" else "cpu"
        image = image.get(slot) or image.get("cuda") or image.get("cpu")
    if not image:
        raise ConfigError(["<config>.environment.image: is required when the master's "
                           f"container_run_type is {settings.resource_manager.container_run_type}"])
    root = settings.resource_manager.apptainer_image_root
    if root and "://" not in image and not image.startswith("/"):
        return str(Path(root) / image)
    return str(image)
