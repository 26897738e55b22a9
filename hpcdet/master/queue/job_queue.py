"""The job queue as ``det job list`` shows it: Slurm's queue merged with hpcdet's database.

The reconciler reads Slurm's queue every ``pool_refresh_seconds`` (:func:`read_queue_snapshot`,
one ``squeue``) and stores it as the ``queue`` snapshot; :func:`job_list` serves API
requests from that copy and the database only, never from Slurm.

Each Slurm job is one of:

* ``EXPERIMENT``: a trial's job, recognised by its comment
  ``hpcdet:<cluster_name>:trial-<trial id>:run-<n>`` *and* a job row of that trial with that
  Slurm job id (so a reused Slurm id or another master's job is not mistaken for one);
* ``COMMAND``: a command task (``det sbatch``, ``det cmd``), comment
  ``hpcdet:<cluster_name>:task-<id>``; a TensorBoard's (notebook's, shell's) row shows its
  kind instead (``TENSORBOARD``), as Determined's ``det job list`` does;
* ``EXTERNAL``: anything else in the cluster (plain ``sbatch``, other masters).

An array of trials (docs/job-arrays.md) is its experiment's by its tag and its tasks' job
rows (:mod:`.array_rows`); its rows can be folded into one per array with counts.

Rows come in Slurm's scheduling order (running jobs, then pending ones by Slurm priority;
see :func:`hpcdet.dispatcher.slurm.queue.queue_order`). A row's slots are GPUs when the
job asks for GPUs and CPUs otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Executable, select
from sqlalchemy.orm import Session, load_only

from hpcdet.dispatcher import Backend, UnsupportedError, backend_class
from hpcdet.dispatcher.queue import QueueEntry
from hpcdet.dispatcher.tags import parse_tag
from hpcdet.master import models
from hpcdet.master.allocation_models import Allocation
from hpcdet.master.errors import Unsupported
from hpcdet.master.models import Experiment, Job, Trial, as_utc
from hpcdet.master.queue.array_rows import array_trials
from hpcdet.master.queue.placement import DEFAULT_PRIORITY
from hpcdet.master.queue.pools import Pool, pools_from_snapshot, resolve_pool, settings_pool
from hpcdet.master.queue.snapshots import POOLS, QUEUE, load_snapshot, store_snapshot
from hpcdet.master.security import authz
from hpcdet.master.settings.core import MasterSettings

EXPERIMENT, COMMAND, EXTERNAL = "EXPERIMENT", "COMMAND", "EXTERNAL"
# Determined's names for a job that waits (QUEUED) and one that holds resources (SCHEDULED).
QUEUED, SCHEDULED = "QUEUED", "SCHEDULED"


@dataclass(frozen=True)
class Ownership:
    """Whose a Slurm job is, as far as hpcdet knows."""

    kind: str = EXTERNAL
    experiment: Experiment | None = None
    trial_id: int | None = None
    task_id: int | None = None
    task: Any = None  # a CommandTask row, when that table exists

    @property
    def external(self) -> bool:
        return self.kind == EXTERNAL


# ---- the snapshot --------------------------------------------------------------------------


def read_fresh_queue(backend: Backend) -> list[QueueEntry]:
    """The scheduler's queue right now, in its order: one command; 501 for a scheduler
    without a queue view."""
    try:
        return backend.read_queue()
    except UnsupportedError as exc:
        raise Unsupported("not_implemented", str(exc)) from exc


def read_queue_snapshot(backend: Backend, settings: MasterSettings) -> dict[str, Any]:
    """The ``queue`` snapshot (JSON-able): every pending and running job, one ``squeue``."""
    return queue_snapshot(read_fresh_queue(backend))


def queue_snapshot(entries: Iterable[QueueEntry]) -> dict[str, Any]:
    """What is stored as the ``queue`` snapshot for ``entries``."""
    return {"jobs": [entry.to_dict() for entry in entries]}


def store_queue(session: Session, entries: Iterable[QueueEntry]) -> None:
    """Replace the stored queue (after an update read it afresh)."""
    store_snapshot(session, QUEUE, queue_snapshot(entries))


def entries_of(data: Mapping[str, Any]) -> list[QueueEntry]:
    """The entries of a stored ``queue`` snapshot, in the scheduler's order (as read)."""
    return [QueueEntry.from_dict(item) for item in data.get("jobs") or ()]


# ---- whose jobs ----------------------------------------------------------------------------


def ownerships(session: Session, settings: MasterSettings,
               entries: Sequence[QueueEntry]) -> dict[str, Ownership]:
    """``{slurm job id: Ownership}`` for every entry, with a few queries in all."""
    cluster = settings.resource_manager.cluster_name
    ids = backend_class(settings.resource_manager.type)
    trials = {**_trial_jobs(session, cluster, entries),
              **_array_jobs(session, cluster, entries, ids),
              **_allocation_jobs(session, cluster, entries)}
    tasks = _task_rows(session, cluster, entries)
    return {entry.job_id: trials.get(entry.job_id) or tasks.get(entry.job_id) or Ownership()
            for entry in entries}


def _trial_jobs(session: Session, cluster: str,
                entries: Sequence[QueueEntry]) -> dict[str, Ownership]:
    confirmed = _confirmed(session, _claims(entries, cluster, "trial"), lambda claimed: (
        select(Job.job_id, Job.trial_id, Trial.experiment_id)
        .join(Trial, Trial.id == Job.trial_id).where(Job.job_id.in_(list(claimed)))))
    return _experiments_jobs(session, confirmed, trials=True)


def _array_jobs(session: Session, cluster: str, entries: Sequence[QueueEntry],
                ids: type[Backend]) -> dict[str, Ownership]:
    owned = array_trials(session, cluster, entries, ids)
    experiments = _experiments(session, {exp_id for exp_id, _ in owned.values()})
    return {job_id: Ownership(EXPERIMENT, experiments[exp_id], trial_id)
            for job_id, (exp_id, trial_id) in owned.items() if exp_id in experiments}


def _allocation_jobs(session: Session, cluster: str,
                     entries: Sequence[QueueEntry]) -> dict[str, Ownership]:
    """Allocation jobs (allocation mode) are their experiment's, like its trials' jobs."""
    confirmed = _confirmed(session, _claims(entries, cluster, "allocation"), lambda claimed: (
        select(Allocation.job_id, Allocation.id, Allocation.experiment_id)
        .where(Allocation.id.in_(set(claimed.values())))))
    return _experiments_jobs(session, confirmed, trials=False)


def _claims(entries: Sequence[QueueEntry], cluster: str, kind: str) -> dict[str, int]:
    """``{job id: tagged id}`` of the entries whose hpcdet tag names a ``kind`` here."""
    return {entry.job_id: tagged for entry in entries
            if (tagged := _tagged(entry, cluster, kind))}


def _confirmed(session: Session, claimed: Mapping[str, int],
               rows_of: Callable[[Mapping[str, int]], Executable],
               ) -> dict[str, tuple[int, int]]:
    """``{job id: (tagged id, experiment id)}`` of the claims the database confirms: the
    rows of ``rows_of(claimed)`` (job id, tagged id, experiment id) recording that job id
    for that id (so a reused job id or another master's job is not mistaken for one)."""
    if not claimed:
        return {}
    return {job_id: (tagged, exp_id) for job_id, tagged, exp_id in session.execute(
        rows_of(claimed)).all() if job_id is not None and claimed.get(job_id) == tagged}


def _experiments_jobs(session: Session, confirmed: Mapping[str, tuple[int, int]], *,
                      trials: bool) -> dict[str, Ownership]:
    """Confirmed jobs as their experiments' (with the trial, when the tagged id is one)."""
    experiments = _experiments(session, {exp_id for _, exp_id in confirmed.values()})
    return {job_id: Ownership(EXPERIMENT, experiments[exp_id], tagged if trials else None)
            for job_id, (tagged, exp_id) in confirmed.items() if exp_id in experiments}


def _experiments(session: Session, ids: set[int]) -> dict[int, Experiment]:
    if not ids:
        return {}
    columns = load_only(Experiment.id, Experiment.name, Experiment.owner, Experiment.config,
                        Experiment.labels, Experiment.resource_pool, Experiment.workspace_id)
    query = select(Experiment).options(columns).where(Experiment.id.in_(ids))
    return {exp.id: exp for exp in session.scalars(query)}


def _task_rows(session: Session, cluster: str,
               entries: Sequence[QueueEntry]) -> dict[str, Ownership]:
    claimed = {entry.job_id: task for entry in entries
               if (task := _tagged(entry, cluster, "task"))}
    rows = _command_tasks(session, set(claimed.values()))
    return {job_id: Ownership(COMMAND, task_id=task_id, task=rows.get(task_id))
            for job_id, task_id in claimed.items()}


def _command_tasks(session: Session, ids: set[int]) -> dict[int, Any]:
    """Command task rows by id; none while the command-task table does not exist."""
    model: Any = getattr(models, "CommandTask", None)
    if model is None or not ids:
        return {}
    return {task.id: task for task in session.scalars(select(model).where(model.id.in_(ids)))}


def _tagged(entry: QueueEntry, cluster: str, kind: str) -> int | None:
    """The trial, task or allocation id in ``entry``'s hpcdet tag, when it names this
    cluster."""
    tag = parse_tag(entry.comment)
    if tag is None or tag.cluster != cluster:
        return None
    return {"trial": tag.trial_id, "task": tag.task_id, "allocation": tag.allocation_id}[kind]


# ---- what an experiment says ---------------------------------------------------------------


def experiment_priority(experiment: Experiment) -> int:
    """The experiment's ``resources.priority`` (Determined's default, 42, when unset)."""
    value = (experiment.config.get("resources") or {}).get("priority")
    return int(value) if value is not None else DEFAULT_PRIORITY


def experiment_pool_name(experiment: Experiment) -> str | None:
    """The pool the experiment named (None: the default compute pool)."""
    resources = experiment.config.get("resources") or {}
    return resources.get("resource_pool") or experiment.resource_pool


def known_pools(session: Session) -> dict[str, Pool] | None:
    """The pools of the last ``pools`` snapshot; None before the first one."""
    found = load_snapshot(session, POOLS)
    return None if found is None else pools_from_snapshot(found[0])


def find_pool(session: Session, settings: MasterSettings, name: str | None, *,
              aux: bool = False, where: str = "resource_pool") -> Pool:
    """The pool called ``name`` (or the default one): from the pools snapshot, else from
    master.yaml alone; an unknown name raises ConfigError listing the known pools."""
    pools = known_pools(session)
    if pools is None:
        return settings_pool(settings, name, aux=aux)
    return resolve_pool(settings, pools, name, aux=aux, where=where)


# ---- det job list --------------------------------------------------------------------------


def job_list(session: Session, settings: MasterSettings, pool_name: str | None,
             actor: str | None = None) -> dict[str, Any]:
    """``GET /jobs``: the rows of the stored queue (of one pool), and when it was read.

    With ``actor``, the hpcdet jobs they may not see are shown as Slurm shows them to
    everyone, with their type (:func:`redact`): no experiment, trial, task or name, and
    no owner beyond the one Slurm shows.
    """
    found = load_snapshot(session, QUEUE)
    pool = find_pool(session, settings, pool_name) if pool_name else None
    if found is None:
        return {"jobs": [], "taken_at": None, "resource_pool": pool_name,
                "refresh_seconds": settings.resource_manager.pool_refresh_seconds}
    data, taken_at = found
    rows = job_rows(session, settings, entries_of(data), pool=pool)
    if actor is not None:
        rows = redact(rows, session, settings, entries_of(data), actor)
    return {"jobs": rows, "taken_at": as_utc(taken_at).isoformat(), "resource_pool": pool_name,
            "refresh_seconds": settings.resource_manager.pool_refresh_seconds}


def redact(rows: list[dict[str, Any]], session: Session, settings: MasterSettings,
           entries: Sequence[QueueEntry], actor: str) -> list[dict[str, Any]]:
    """``rows`` with those of hpcdet jobs ``actor`` may not see reduced to Slurm's facts
    and their type (:func:`_withheld`)."""
    sight = authz.viewer(session, settings, actor)
    owned = ownerships(session, settings, entries)
    out = []
    for row in rows:
        owner = owned.get(row["job_id"], Ownership())
        thing: Any = owner.experiment if owner.experiment is not None else owner.task
        if owner.external or sight.admin or (
                thing is not None and sight.sees(thing.owner, thing.workspace_id)):
            out.append(row)
            continue
        out.append(_withheld(row))
    return out


def _withheld(row: dict[str, Any]) -> dict[str, Any]:
    """An hpcdet job its viewer may not see: still hpcdet's (its type stays, so the page
    does not say "Outside hpcdet"), with no name, ids or priority. Its owner is named
    only where the scheduler names them to everyone anyway (owner mode: the job runs as
    its owner); a job the service account submitted has no user shown."""
    owner = row["user"] if row["user"] == row["slurm_user"] else None
    return {**row, "name": "", "experiment_id": None, "trial_id": None, "task_id": None,
            "priority": None, "user": owner, "hidden": True}


def job_rows(session: Session, settings: MasterSettings, entries: Sequence[QueueEntry], *,
             pool: Pool | None = None) -> list[dict[str, Any]]:
    """One row per entry (of ``pool`` only, when given), numbered in queue order."""
    owned = ownerships(session, settings, entries)
    ids = backend_class(settings.resource_manager.type)
    rows = [job_row(settings, entry, owned[entry.job_id], ids.array_entry(entry.job_id))
            for entry in entries]
    if pool is not None:
        rows = [row for row in rows if in_pool(row, pool)]
    for position, row in enumerate(rows, start=1):
        row["position"] = position
    return rows


def in_pool(row: Mapping[str, Any], pool: Pool) -> bool:
    """A row belongs to ``pool`` when it waits or runs in the pool's partition, or when it
    is an hpcdet job of that pool (a priority band may have put it in another partition)."""
    if row["pool"] is not None and row["pool"].lower() == pool.name.lower() and not row["external"]:
        return True
    partitions = {part.lower() for part in row["partition"].split(",")}
    return pool.partition is not None and pool.partition.lower() in partitions


def job_row(settings: MasterSettings, entry: QueueEntry, owner: Ownership,
            array: tuple[str, int] | None = None) -> dict[str, Any]:
    """The row ``det job list`` shows for one scheduler job; ``array``: its array's id and
    the tasks the entry stands for (:meth:`Backend.array_entry`), if it is of an array."""
    needed = entry.gpus or entry.cpus
    return {
        "position": None, "job_id": entry.job_id, "type": job_type(owner),
        "name": _name(entry, owner), "experiment_id": _experiment_id(owner),
        "trial_id": owner.trial_id, "task_id": owner.task_id,
        "priority": experiment_priority(owner.experiment) if owner.experiment else None,
        "slurm_priority": entry.priority, "nice": entry.nice, "qos": entry.qos,
        "account": entry.account, "submitted": entry.submit_time,
        "slots_acquired": 0 if entry.pending else needed, "slots_needed": needed,
        "slot_kind": "gpu" if entry.gpus else "cpu",
        "state": QUEUED if entry.pending else SCHEDULED, "slurm_state": entry.state,
        "reason": entry.reason if entry.pending else None, "user": _user(entry, owner),
        "slurm_user": entry.user, "pool": _pool_name(settings, entry, owner),
        "partition": entry.partition, "external": owner.external,
        "nodes": list(entry.node_names), "cpus": entry.cpus,
        # An array's entry: its array's id and how many tasks it stands for (12_[4-9]: 6).
        "array_id": array[0] if array else None, "array_task_count": array[1] if array else None,
        # Seconds run and the wall-time limit; a waiting job's expected start (None: none).
        "time_used": entry.time_used, "time_limit": entry.time_limit,
        "expected_start": entry.expected_start,
    }  # fmt: skip


def job_type(owner: Ownership) -> str:
    """Determined's job type: EXPERIMENT, EXTERNAL, COMMAND (also a det sbatch/qsub script),
    or the task's kind for the interactive ones (TENSORBOARD, NOTEBOOK, SHELL)."""
    kind = str(getattr(owner.task, "kind", None) or "")
    if owner.kind == COMMAND and kind not in ("", "batch", "command"):
        return kind.upper()
    return owner.kind


def _name(entry: QueueEntry, owner: Ownership) -> str:
    if owner.experiment is not None:
        return owner.experiment.name
    return str(getattr(owner.task, "name", None) or entry.name)


def _experiment_id(owner: Ownership) -> int | None:
    return owner.experiment.id if owner.experiment is not None else None


def _user(entry: QueueEntry, owner: Ownership) -> str:
    if owner.experiment is not None:
        return owner.experiment.owner
    return str(getattr(owner.task, "owner", None) or entry.user)


def _pool_name(settings: MasterSettings, entry: QueueEntry, owner: Ownership) -> str:
    if owner.experiment is not None:
        return (experiment_pool_name(owner.experiment)
                or settings.resource_manager.default_compute_resource_pool or entry.partition)
    return str(getattr(owner.task, "pool", None) or entry.partition)
