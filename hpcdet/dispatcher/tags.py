"""hpcdet's tag on a batch job: which master, trial run or command task it belongs to.

Written in one place (:func:`trial_tag`, :func:`task_tag`, :func:`array_tag`,
:func:`allocation_tag`) and read in one
(:func:`parse_tag`). Backends carry it where their scheduler keeps free text for a job (Slurm
``--comment``; PBS a job variable), and report it as :attr:`QueueEntry.comment`. A tag alone
does not make a job hpcdet's: the master also checks the job id against its own records, so a
copied tag or another master's job is not mistaken for one of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TRIAL = re.compile(r"^hpcdet:(?P<cluster>.+):trial-(?P<trial>\d+):run-(?P<run>\d+)$")
_TASK = re.compile(r"^hpcdet:(?P<cluster>.+):task-(?P<task>\d+|NEW)$")
_ARRAY = re.compile(r"^hpcdet:(?P<cluster>.+):experiment-(?P<experiment>\d+):array$")
_ALLOCATION = re.compile(r"^hpcdet:(?P<cluster>.+):allocation-(?P<allocation>\d+)$")


@dataclass(frozen=True)
class JobTag:
    """What a tag says: the cluster name, and a trial run, a task (``task_id`` None: NEW),
    or a job array of an experiment's trials (``experiment_id``; its tasks' trials are
    known by their job ids), or an experiment's allocation (``allocation_id``)."""

    cluster: str
    trial_id: int | None = None
    run_id: int | None = None
    task_id: int | None = None
    experiment_id: int | None = None
    allocation_id: int | None = None


def trial_tag(cluster: str, trial_id: int, run_id: int) -> str:
    """``hpcdet:<cluster>:trial-<id>:run-<n>``: the tag of one run of a trial."""
    return f"hpcdet:{cluster}:trial-{trial_id}:run-{run_id}"


def task_tag(cluster: str, task_id: int | None) -> str:
    """``hpcdet:<cluster>:task-<id>`` (``task-NEW`` in a dry run, before the id exists)."""
    return f"hpcdet:{cluster}:task-{'NEW' if task_id is None else task_id}"


def array_tag(cluster: str, experiment_id: int) -> str:
    """``hpcdet:<cluster>:experiment-<id>:array``: the tag of a job array of trials."""
    return f"hpcdet:{cluster}:experiment-{experiment_id}:array"


def allocation_tag(cluster: str, allocation_id: int) -> str:
    """``hpcdet:<cluster>:allocation-<id>``: the tag of an experiment's allocation job."""
    return f"hpcdet:{cluster}:allocation-{allocation_id}"


def parse_tag(text: str | None) -> JobTag | None:
    """The tag in ``text``, or None when it is not one of hpcdet's."""
    if not text:
        return None
    trial = _TRIAL.match(text)
    if trial:
        return JobTag(trial["cluster"], trial_id=int(trial["trial"]), run_id=int(trial["run"]))
    array = _ARRAY.match(text)
    if array:
        return JobTag(array["cluster"], experiment_id=int(array["experiment"]))
    task = _TASK.match(text)
    if task and task["task"] != "NEW":
        return JobTag(task["cluster"], task_id=int(task["task"]))
    allocation = _ALLOCATION.match(text)
    if allocation:
        return JobTag(allocation["cluster"], allocation_id=int(allocation["allocation"]))
    return None
