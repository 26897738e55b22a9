"""Job arrays in the job queue (docs/job-arrays.md): whose array tasks are, and one row per array.

Slurm lists an array's running tasks one by one (``12_3``) and its pending tasks as one
entry (``12_[4-9%2]``); PBS (``qstat -t``) each subjob (``12[3].server``). Only the
backend's class reads these ids (:meth:`Backend.array_entry`). Every entry of an hpcdet array
carries the array's tag (``hpcdet:<cluster>:experiment-<id>:array``); it is the
experiment's when job rows of that experiment's trials hold task ids of that array, and a
task's trial is the one whose job row holds its id.

:func:`group_arrays` folds the rows of one array into one row with counts per state
(``det job list``, /queue); ``?expand`` (``det job list --expand``) keeps a row per entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from hpcdet.dispatcher import Backend
from hpcdet.dispatcher.queue import QueueEntry
from hpcdet.dispatcher.tags import parse_tag
from hpcdet.master.models import Job, Trial


def array_trials(session: Session, cluster: str, entries: Sequence[QueueEntry],
                 ids: type[Backend]) -> dict[str, tuple[int, int | None]]:
    """``{entry job id: (experiment id, trial id or None)}`` for the entries of hpcdet
    arrays of this cluster whose tasks the database confirms (one query); ``ids``: the
    backend whose job ids these are."""
    tagged: dict[str, tuple[str, int]] = {}
    for entry in entries:
        tag = parse_tag(entry.comment)
        parts = ids.array_entry(entry.job_id)
        if tag is None or tag.cluster != cluster or tag.experiment_id is None or parts is None:
            continue
        tagged[entry.job_id] = (parts[0], tag.experiment_id)
    if not tagged:
        return {}
    prefixes = {ids.array_task_prefix(array_id) for array_id, _ in tagged.values()}
    rows = session.execute(select(Job.job_id, Job.trial_id, Trial.experiment_id)
                           .join(Trial, Trial.id == Job.trial_id)
                           .where(or_(*(Job.job_id.startswith(prefix, autoescape=True)
                                        for prefix in prefixes)))).all()
    trial_of = {str(job_id): (trial_id, exp_id) for job_id, trial_id, exp_id in rows}
    experiment_of = {task[0]: exp_id for job_id, _, exp_id in rows
                     if (task := ids.array_entry(str(job_id)))}
    owned: dict[str, tuple[int, int | None]] = {}
    for job_id, (array_id, exp_id) in tagged.items():
        if experiment_of.get(array_id) != exp_id:
            continue  # another master's array, or a copied tag
        trial = trial_of.get(job_id)
        owned[job_id] = (exp_id, trial[0] if trial and trial[1] == exp_id else None)
    return owned


def group_arrays(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per array, at its first row's place: ``job_id`` the array's id,
    ``array_tasks`` {state: count}, slots summed, ``array_entries`` its rows as Slurm lists
    them (``job_id``, ``slurm_state``, ``array_task_count``, ``trial_id``, ``nodes``)."""
    out: list[dict[str, Any]] = []
    by_array: dict[str, dict[str, Any]] = {}
    for row in rows:
        array_id = row.get("array_id")
        if array_id is None:
            out.append(dict(row))
            continue
        group = by_array.get(array_id)
        if group is None:
            group = by_array[array_id] = {**row, "job_id": array_id, "trial_id": None,
                                          "array_tasks": {}, "slots_acquired": 0,
                                          "slots_needed": 0, "nodes": [], "reason": None,
                                          "array_entries": []}
            out.append(group)
        _add(group, row)
    return out


def _add(group: dict[str, Any], row: Mapping[str, Any]) -> None:
    tasks = int(row.get("array_task_count") or 1)
    counts: dict[str, int] = group["array_tasks"]
    state = str(row.get("slurm_state") or "")
    counts[state] = counts.get(state, 0) + tasks
    group["slots_needed"] += int(row.get("slots_needed") or 0) * tasks
    group["slots_acquired"] += int(row.get("slots_acquired") or 0)
    group["nodes"] = sorted({*group["nodes"], *(row.get("nodes") or [])})
    if row.get("state") == "SCHEDULED":
        group["state"] = "SCHEDULED"  # an array holds resources while one task runs
    group["reason"] = group["reason"] or row.get("reason")
    group["array_entries"].append({key: row.get(key) for key in (
        "job_id", "slurm_state", "array_task_count", "trial_id", "nodes")})
