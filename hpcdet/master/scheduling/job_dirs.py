"""Where each job's directory is: the one place that names them.

``<job_storage_root>/exp-N/trial-M`` for a trial, ``<job_storage_root>/exp-N/arrays/NAME`` for
a job array of its trials (its script and index file, docs/job-arrays.md),
``<job_storage_root>/tasks/task-N`` for a command task (``det sbatch``/``det qsub``); under
``<job_storage_root>/<owner>/`` when jobs run as their owner (``security.jobs_run_as: owner``),
so each user's files are in their own tree.
"""

from __future__ import annotations

from pathlib import Path

from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.runas import owner_root


def _root(settings: MasterSettings, owner: str) -> Path:
    return owner_root(settings.resource_manager.job_storage_root, settings.runas, owner)


def trial_job_dir(settings: MasterSettings, experiment_id: int, trial_id: int,
                  owner: str = "") -> str:
    """``<root>/exp-N/trial-M``: every run of the trial uses it."""
    return str(_root(settings, owner) / f"exp-{experiment_id}" / f"trial-{trial_id}")


def task_job_dir(settings: MasterSettings, task_id: int | str, owner: str = "") -> str:
    """``<root>/tasks/task-N`` (``task-NEW`` for a dry run, before the id exists)."""
    return str(_root(settings, owner) / "tasks" / f"task-{task_id}")


def array_dir(settings: MasterSettings, experiment_id: int, name: str, owner: str = "") -> str:
    """``<root>/exp-N/arrays/NAME``: a job array's own script, index file and Slurm output."""
    return str(_root(settings, owner) / f"exp-{experiment_id}" / "arrays" / name)
