"""Readers of an experiment's config that every layer of the master may need: its scheduler
section and extra batch options, and where its checkpoints are written. Pure functions of
the config (and the scheduler's plug-in), kept here, at the bottom, rather than in the job
spec that builds on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hpcdet.dispatcher import registry


def batch_section(config: Mapping[str, Any], scheduler: str) -> tuple[str, Mapping[str, Any]]:
    """The experiment's scheduler section (Determined's ``slurm:`` or ``pbs:``) and its name."""
    name = registry.scheduler(scheduler).config_section
    return name, config.get(name) or {}


def batch_args(config: Mapping[str, Any], scheduler: str) -> tuple[str, tuple[str, ...]]:
    """The config path and value of the user's extra batch options: ``slurm.sbatch_args``
    or ``pbs.pbsbatch_args``."""
    plugin = registry.scheduler(scheduler)
    section = config.get(plugin.config_section) or {}
    return plugin.args_path(), tuple(section.get(plugin.args_key) or ())


# Under the trial's job directory: where a trial with object storage writes a checkpoint
# before uploading it (and keeps each one's metadata.json).
OBJECT_STORE_STAGING = "checkpoints"


def checkpoint_dir(config: Mapping[str, Any], job_dir: str | None = None) -> str:
    """The host directory checkpoints are written to (for an object store such as s3: the
    staging directory in ``job_dir``, the trial's job directory)."""
    storage = config["checkpoint_storage"]
    if storage.get("type") not in ("shared_fs", "directory"):
        if job_dir is None:
            raise ValueError("an object store's staging directory needs the job directory")
        return str(Path(job_dir) / OBJECT_STORE_STAGING)
    if storage.get("type") == "directory":
        return str(storage["container_path"])
    host = Path(storage["host_path"])
    return str(host / storage["storage_path"]) if storage.get("storage_path") else str(host)
