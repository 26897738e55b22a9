"""Checking ``det job update`` requests against Slurm's queue read afresh: unknown ids are
NotFound, jobs that are not hpcdet's Forbidden, running or held jobs a Conflict; nothing
runs in Slurm here."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy.orm import Session

from hpcdet.dispatcher import Backend, UnsupportedError
from hpcdet.dispatcher.queue import OrderImpossibleError, QueueEntry
from hpcdet.errors import ConfigError, SchedulerError
from hpcdet.master.errors import Conflict, Forbidden, Invalid, NotFound, Unavailable, Unsupported
from hpcdet.master.queue.job_queue import (
    Ownership,
    experiment_pool_name,
    find_pool,
    ownerships,
    read_fresh_queue,
)
from hpcdet.master.queue.job_updates.parsing import UpdateRequest
from hpcdet.master.queue.pools import Pool
from hpcdet.master.security import authz
from hpcdet.master.settings.core import MasterSettings


@dataclass
class QueueState:
    """Slurm's queue as last read in this action, and whose each job is."""

    entries: list[QueueEntry]
    owned: dict[str, Ownership]
    # The backend's class, which reads its array entries' ids.
    ids: type[Backend]
    by_id: dict[str, QueueEntry] = field(init=False)
    stale: bool = False

    def __post_init__(self) -> None:
        self.by_id = {entry.job_id: entry for entry in self.entries}
        for entry in self.entries:  # an array's pending tasks, listed as one entry
            for task_id in self.ids.array_pending_task_ids(entry.job_id):
                self.by_id.setdefault(task_id, replace(entry, job_id=task_id))
                self.owned.setdefault(task_id, self.owned.get(entry.job_id, Ownership()))


@dataclass
class UpdateAction:
    """What one update needs while it runs."""

    session: Session
    backend: Backend
    settings: MasterSettings
    actor: str
    queue: QueueState

    def refresh(self) -> None:
        """Read the queue again if an earlier update of this action changed it."""
        if self.queue.stale:
            self.queue = read_queue_state(self.session, self.settings, self.backend)


def read_queue_state(session: Session, settings: MasterSettings, backend: Backend) -> QueueState:
    """Slurm's queue now (one ``squeue``) and whose each job is; Unavailable if Slurm cannot
    say."""
    try:
        entries = read_fresh_queue(backend)
    except SchedulerError as exc:
        raise Unavailable("scheduler_unavailable",
                          f"could not read Slurm's queue: {exc}") from exc
    return QueueState(entries, ownerships(session, settings, entries), type(backend))


def check_request(action: UpdateAction, request: UpdateRequest, where: str) -> None:
    """Raise the refusal of ``request``, if any; nothing runs in Slurm."""
    entry, owner = _own_pending_job(action.queue, request, where)
    _require_change(action, owner, entry, where)
    if request.other:
        _check_order(action, request, entry, where)
    if request.resource_pool:
        target = _pool(action, request.resource_pool, where)
        _check_pool_move(action.settings, owner, entry, target, where)


def _own_pending_job(queue: QueueState, request: UpdateRequest,
                     where: str) -> tuple[QueueEntry, Ownership]:
    entry = queue.by_id.get(request.job_id)
    if entry is None:
        raise NotFound("not_found", f"{where}: job {request.job_id} is not in Slurm's "
                       "queue (no such job, or it has ended)")
    owner = queue.owned[entry.job_id]
    if owner.external:
        raise Forbidden("forbidden", f"{where}: job {entry.job_id} is not an hpcdet job "
                        f"(Slurm user {entry.user} submitted it outside this master); only "
                        "hpcdet's jobs can be updated")
    if not entry.pending:
        raise Conflict("conflict", f"{where}: job {entry.job_id} is {entry.state}: "
                       + _running_reason(request))
    return entry, owner


def _require_change(action: UpdateAction, owner: Ownership, entry: QueueEntry, where: str) -> None:
    """NotFound unless the actor sees the job's experiment or task; Forbidden unless they may
    change it
    (:mod:`hpcdet.master.security.authz`): another user's job is never updated."""
    row: Any = owner.experiment if owner.experiment is not None else owner.task
    if row is None:  # a task row that no longer exists: nobody's to change but an admin's
        row = _Nobody()
    authz.require(action.session, action.settings, action.actor, row,
                  f"{where}: job {entry.job_id}", authz.Access.CHANGE)


class _Nobody:
    """The owner of a job whose hpcdet row is gone: only cluster admins may change it."""

    owner = ""
    workspace_id = None


def _running_reason(request: UpdateRequest) -> str:
    if request.other:
        return "only pending jobs have a place in Slurm's queue"
    return ("Slurm cannot move a running job to another partition or QOS (a new priority "
            "or pool applies to pending jobs)")


def _check_order(action: UpdateAction, request: UpdateRequest, entry: QueueEntry,
                 where: str) -> None:
    queue = action.queue
    other = queue.by_id.get(request.other or "")
    key = "ahead_of" if request.ahead_of else "behind_of"
    if other is None:
        raise NotFound("not_found", f"{where}: {key} job {request.other} is not in "
                       "Slurm's queue (no such job, or it has ended)")
    for job in (entry, other):
        if not job.pending:
            raise Conflict("conflict", f"{where}: {key} job {job.job_id} is {job.state}: "
                           "only pending jobs have a place in Slurm's queue")
        if job.held:
            raise Conflict("conflict", f"{where}: job {job.job_id} is held "
                           f"({job.reason}): release it first")
    job_nice_for_position(action.backend, entry, other, ahead=request.ahead_of is not None,
                          where=where)


def _pool(action: UpdateAction, name: str, where: str) -> Pool:
    try:
        return find_pool(action.session, action.settings, name, where=f"{where}: resource_pool")
    except ConfigError as exc:
        raise Invalid("bad_request", "; ".join(exc.errors)) from exc


def _check_pool_move(settings: MasterSettings, owner: Ownership, entry: QueueEntry,
                     target: Pool, where: str) -> None:
    """Refuse a move scontrol cannot make whole: a custom pool's own sbatch options."""
    current = _current_pool(settings, owner, entry)
    if current is not None and current.lower() == target.name.lower():
        return
    for pool_name, verb in ((target.name, "into"), (current, "out of")):
        args = custom_pool_args(settings, pool_name)
        if args:
            raise Conflict("conflict", f"{where}: cannot move job {entry.job_id} {verb} "
                           f"pool {pool_name}: its sbatch_args {list(args)} are not something "
                           "scontrol can change on a queued job (submit the job to that pool "
                           "instead)")


def custom_pool_args(settings: MasterSettings, pool_name: str | None) -> tuple[str, ...]:
    """The ``sbatch_args`` a custom pool adds of its own (() for a partition's pool)."""
    if pool_name is None:
        return ()
    found = next((pool for pool in settings.resource_manager.resource_pools
                  if pool.pool_name.lower() == pool_name.lower()), None)
    return found.slurm.sbatch_args if found is not None else ()


def _current_pool(settings: MasterSettings, owner: Ownership, entry: QueueEntry) -> str | None:
    if owner.experiment is not None:
        return (experiment_pool_name(owner.experiment)
                or settings.resource_manager.default_compute_resource_pool)
    return getattr(owner.task, "pool", None)


def job_nice_for_position(backend: Backend, entry: QueueEntry, other: QueueEntry, *,
                          ahead: bool, where: str = "ordering") -> int:
    """The nice that puts ``entry`` just ahead of (or behind) ``other``, as the scheduler
    orders its queue; a Conflict where the scheduler cannot, Unsupported where it cannot
    reorder at all."""
    try:
        return backend.nice_to_pass(entry, other, ahead=ahead)
    except OrderImpossibleError as exc:
        raise Conflict("conflict", f"{where}: {exc}") from exc
    except UnsupportedError as exc:
        raise Unsupported("not_implemented", f"{where}: {exc}") from exc

