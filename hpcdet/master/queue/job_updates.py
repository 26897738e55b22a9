"""``det job update``: re-map a queued job's priority or pool, or move it in Slurm's order.

Priority and resource pool are *experiment* settings in hpcdet (``resources.priority``,
``resources.resource_pool``), as in Determined, where a job is an experiment. So updating
either for a trial's job changes the experiment's config (later jobs of its trials get the
new value) and re-maps every queued job of the experiment through
:func:`hpcdet.master.scheduling.placement.place` (``scontrol update`` of partition, QOS and nice). A
command task is one job: only that job changes.

``ahead_of``/``behind_of`` is per job: the job's nice is set so that Slurm's priority puts
it :data:`ORDER_MARGIN` above (below) the other job's (priority = factors - nice, and
Slurm recomputes it at once when nice changes). A later priority update re-maps the nice.

Every update reads Slurm's queue afresh first (one ``squeue``), checks every request
(unknown ids 404, jobs that are not hpcdet's 403, running jobs 409), applies them in
order, then reads the queue once more to report positions, check that a requested order
holds and refresh the stored ``queue`` snapshot.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy.orm import Session

from hpcdet.dispatcher import Backend, UnsupportedError, registry
from hpcdet.dispatcher.queue import (
    JobUpdate,
    JobUpdateRefusedError,
    OrderImpossibleError,
    QueueEntry,
)
from hpcdet.errors import ConfigError, SchedulerError
from hpcdet.master.errors import ApiError
from hpcdet.master.models import Experiment
from hpcdet.master.queue.job_queue import (
    COMMAND,
    EXPERIMENT,
    Ownership,
    experiment_pool_name,
    find_pool,
    ownerships,
    read_fresh_queue,
    store_queue,
)
from hpcdet.master.queue.pools import Pool
from hpcdet.master.scheduling.jobspec import place_config
from hpcdet.master.scheduling.placement import DEFAULT_PRIORITY, JobOwner, Placement, place
from hpcdet.master.security import authz
from hpcdet.master.settings.core import MasterSettings

log = logging.getLogger(__name__)

UPDATE_KEYS = ("priority", "ahead_of", "behind_of", "resource_pool")
# Slurm: digits, or an array task (12_3); PBS: digits and the server name (12.pbs01).
_JOB_ID = re.compile(r"^\d+(?:_\d+|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*)?$")


@dataclass(frozen=True)
class UpdateRequest:
    """One job's update, as the API and ``det job update[-batch]`` ask for it."""

    job_id: str
    priority: int | None = None
    ahead_of: str | None = None
    behind_of: str | None = None
    resource_pool: str | None = None

    @property
    def other(self) -> str | None:
        """The job to go ahead of or behind, if this request reorders."""
        return self.ahead_of or self.behind_of


@dataclass
class _Queue:
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
class _Action:
    """What one update needs while it runs."""

    session: Session
    backend: Backend
    settings: MasterSettings
    actor: str
    queue: _Queue

    def refresh(self) -> None:
        """Read the queue again if an earlier update of this action changed it."""
        if self.queue.stale:
            self.queue = read_queue_state(self.session, self.settings, self.backend)


# ---- requests ----------------------------------------------------------------------------


def parse_update(job_id: str, body: Mapping[str, Any], where: str) -> UpdateRequest:
    """The request in ``body`` for ``job_id``; 400 naming ``where`` and the bad key."""
    unknown = sorted(set(body) - set(UPDATE_KEYS))
    if unknown:
        raise _bad(where, f"unknown key {unknown[0]!r} (known: {', '.join(UPDATE_KEYS)})")
    request = UpdateRequest(job_id=_job_id(job_id, where, "job id"),
                            priority=_priority(body.get("priority"), where),
                            ahead_of=_other(body.get("ahead_of"), where, "ahead_of"),
                            behind_of=_other(body.get("behind_of"), where, "behind_of"),
                            resource_pool=_pool_name(body.get("resource_pool"), where))
    _check_combination(request, where)
    return request


def _job_id(value: Any, where: str, what: str) -> str:
    text = str(value) if isinstance(value, int | str) and not isinstance(value, bool) else ""
    if not _JOB_ID.match(text):
        raise _bad(where, f"{what} must be a job id (Slurm: 12345, PBS: 12.server), got {value!r}")
    return text


def _priority(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 99:
        raise _bad(where, f"priority must be an integer from 1 to 99 (1 is the most "
                          f"important), got {value!r}")
    return value


def _other(value: Any, where: str, key: str) -> str | None:
    return None if value is None else _job_id(value, where, key)


def _pool_name(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _bad(where, f"resource_pool must be a pool name, got {value!r}")
    return value.strip()


def _check_combination(request: UpdateRequest, where: str) -> None:
    if request.ahead_of and request.behind_of:
        raise _bad(where, "give ahead_of or behind_of, not both")
    if request.other and (request.priority is not None or request.resource_pool):
        raise _bad(where, "ahead_of/behind_of cannot be combined with priority or "
                          "resource_pool (a new priority re-maps the nice); update one after "
                          "the other")
    if request.other == request.job_id:
        raise _bad(where, f"job {request.job_id} cannot be ordered against itself")
    if request.priority is None and request.resource_pool is None and not request.other:
        raise _bad(where, "nothing to update: give priority, ahead_of, behind_of or "
                          "resource_pool")


def _bad(where: str, message: str) -> ApiError:
    return ApiError(400, "bad_request", f"{where}: {message}")


# ---- the actions ---------------------------------------------------------------------------


def update_job_placement(session: Session, backend: Backend, settings: MasterSettings,
                         job_id: str, *, priority: int | None = None, ahead_of: str | None = None,
                         behind_of: str | None = None, resource_pool: str | None = None,
                         actor: str) -> dict[str, Any]:
    """Update one job; a refusal (ours or Slurm's) is raised as an :class:`ApiError`."""
    body = {key: value for key, value in (("priority", priority), ("ahead_of", ahead_of),
                                          ("behind_of", behind_of),
                                          ("resource_pool", resource_pool)) if value is not None}
    request = parse_update(job_id, body, f"job {job_id}")
    result = update_jobs(session, backend, settings, [request], actor=actor)[0]
    if not result["ok"]:
        raise ApiError(result["status"], result["error_code"], result["error"])
    return result


def update_jobs(session: Session, backend: Backend, settings: MasterSettings,
                requests: Sequence[UpdateRequest], *, actor: str,
                wheres: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Check every request against a fresh queue, then apply them in order; one result each.

    A request that fails our checks raises before anything is applied; Slurm refusing one
    is reported in its result and the others still run.
    """
    action = _Action(session, backend, settings, actor,
                     read_queue_state(session, settings, backend))
    places = list(wheres or [f"job {r.job_id}" for r in requests])
    for request, where in zip(requests, places, strict=True):
        check_request(action, request, where)
    results = [_apply(action, request, where)
               for request, where in zip(requests, places, strict=True)]
    _after(session, backend, results)
    return results


def read_queue_state(session: Session, settings: MasterSettings, backend: Backend) -> _Queue:
    """Slurm's queue now (one ``squeue``) and whose each job is; 503 if Slurm cannot say."""
    try:
        entries = read_fresh_queue(backend)
    except SchedulerError as exc:
        raise ApiError(503, "scheduler_unavailable",
                       f"could not read Slurm's queue: {exc}") from exc
    return _Queue(entries, ownerships(session, settings, entries), type(backend))


def check_request(action: _Action, request: UpdateRequest, where: str) -> None:
    """Raise the ApiError that refuses ``request``, if any; nothing runs in Slurm."""
    entry, owner = _own_pending_job(action.queue, request, where)
    _require_change(action, owner, entry, where)
    if request.other:
        _check_order(action, request, entry, where)
    if request.resource_pool:
        target = _pool(action, request.resource_pool, where)
        _check_pool_move(action.settings, owner, entry, target, where)


def _own_pending_job(queue: _Queue, request: UpdateRequest,
                     where: str) -> tuple[QueueEntry, Ownership]:
    entry = queue.by_id.get(request.job_id)
    if entry is None:
        raise ApiError(404, "not_found", f"{where}: job {request.job_id} is not in Slurm's "
                       "queue (no such job, or it has ended)")
    owner = queue.owned[entry.job_id]
    if owner.external:
        raise ApiError(403, "forbidden", f"{where}: job {entry.job_id} is not an hpcdet job "
                       f"(Slurm user {entry.user} submitted it outside this master); only "
                       "hpcdet's jobs can be updated")
    if not entry.pending:
        raise ApiError(409, "conflict", f"{where}: job {entry.job_id} is {entry.state}: "
                       + _running_reason(request))
    return entry, owner


def _require_change(action: _Action, owner: Ownership, entry: QueueEntry, where: str) -> None:
    """404 unless the actor sees the job's experiment or task; 403 unless they may change it
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


def _check_order(action: _Action, request: UpdateRequest, entry: QueueEntry,
                 where: str) -> None:
    queue = action.queue
    other = queue.by_id.get(request.other or "")
    key = "ahead_of" if request.ahead_of else "behind_of"
    if other is None:
        raise ApiError(404, "not_found", f"{where}: {key} job {request.other} is not in "
                       "Slurm's queue (no such job, or it has ended)")
    for job in (entry, other):
        if not job.pending:
            raise ApiError(409, "conflict", f"{where}: {key} job {job.job_id} is {job.state}: "
                           "only pending jobs have a place in Slurm's queue")
        if job.held:
            raise ApiError(409, "conflict", f"{where}: job {job.job_id} is held "
                           f"({job.reason}): release it first")
    job_nice_for_position(action.backend, entry, other, ahead=request.ahead_of is not None,
                          where=where)


def _pool(action: _Action, name: str, where: str) -> Pool:
    try:
        return find_pool(action.session, action.settings, name, where=f"{where}: resource_pool")
    except ConfigError as exc:
        raise ApiError(400, "bad_request", "; ".join(exc.errors)) from exc


def _check_pool_move(settings: MasterSettings, owner: Ownership, entry: QueueEntry,
                     target: Pool, where: str) -> None:
    """Refuse a move scontrol cannot make whole: a custom pool's own sbatch options."""
    current = _current_pool(settings, owner, entry)
    if current is not None and current.lower() == target.name.lower():
        return
    for pool_name, verb in ((target.name, "into"), (current, "out of")):
        args = custom_pool_args(settings, pool_name)
        if args:
            raise ApiError(409, "conflict", f"{where}: cannot move job {entry.job_id} {verb} "
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
    orders its queue; 409 where the scheduler cannot, 501 where it cannot reorder at all."""
    try:
        return backend.nice_to_pass(entry, other, ahead=ahead)
    except OrderImpossibleError as exc:
        raise ApiError(409, "conflict", f"{where}: {exc}") from exc
    except UnsupportedError as exc:
        raise ApiError(501, "not_implemented", f"{where}: {exc}") from exc


# ---- applying ------------------------------------------------------------------------------


def _apply(action: _Action, request: UpdateRequest, where: str) -> dict[str, Any]:
    result: dict[str, Any] = {"job_id": request.job_id, "ok": True, "changes": [],
                              "messages": [], "error": None, "error_code": None,
                              "position": None}
    try:
        action.refresh()
        check_request(action, request, where)
        if request.other:
            _apply_order(action, request, result)
        else:
            _apply_placement(action, request, result)
    except ApiError as exc:
        result.update(ok=False, error=exc.message, error_code=exc.code, status=exc.status)
    except ConfigError as exc:
        result.update(ok=False, error="; ".join(exc.errors), error_code="invalid_config",
                      status=400)
    except JobUpdateRefusedError as exc:
        result.update(ok=False, error=_refusal(action.backend, request.job_id, exc),
                      error_code=f"{action.backend.name}_refused", status=409)
    except UnsupportedError as exc:
        result.update(ok=False, error=str(exc), error_code="not_implemented", status=501)
    return result


def _refusal(backend: Backend, job_id: str, exc: JobUpdateRefusedError) -> str:
    message = f"{_scheduler(backend)} refused to update job {job_id}: {exc.reason}"
    if any(arg.startswith("Nice=-") for arg in exc.argv):
        message += (" (a negative nice raises a job above others: only Slurm operators and "
                    "administrators may set one)")
    return message


def _scheduler(backend: Backend) -> str:
    return registry.scheduler(backend.name).display_name


def _update(action: _Action, job_id: str, update: JobUpdate, result: dict[str, Any]) -> None:
    """One update command (as the job's owner in run-as-owner mode); the queue is stale
    afterwards."""
    action.queue.stale = True
    entry = action.queue.by_id.get(job_id)
    action.backend.update_job(job_id, update, entry.user if entry is not None else None)
    result["changes"].append({"job_id": job_id, "partition": update.partition,
                              "qos": update.qos, "nice": update.nice})
    log.info("%s updated %s job %s: %s", action.actor, action.backend.name, job_id, update)


def _apply_order(action: _Action, request: UpdateRequest, result: dict[str, Any]) -> None:
    entry, other = action.queue.by_id[request.job_id], action.queue.by_id[request.other or ""]
    ahead = request.ahead_of is not None
    nice = job_nice_for_position(action.backend, entry, other, ahead=ahead)
    result.update(relative_to=other.job_id, ahead=ahead)
    if nice != entry.nice:
        _update(action, entry.job_id, JobUpdate(nice=nice), result)
    side = "ahead of" if ahead else "behind"
    result["messages"].append(f"job {entry.job_id}: nice {nice}, for a "
                              f"{_scheduler(action.backend)} priority "
                              f"{'above' if ahead else 'below'} job "
                              f"{other.job_id}'s ({other.priority}), {side} it")


def _apply_placement(action: _Action, request: UpdateRequest, result: dict[str, Any]) -> None:
    owner = action.queue.owned[request.job_id]
    if owner.kind == EXPERIMENT and owner.experiment is not None:
        _place_experiment(action, request, owner.experiment, result)
    elif owner.kind == COMMAND:
        _place_task(action, request, result)


def _place_experiment(action: _Action, request: UpdateRequest, experiment: Experiment,
                      result: dict[str, Any]) -> None:
    pool = find_pool(action.session, action.settings,
                     request.resource_pool or experiment_pool_name(experiment))
    config = updated_config(experiment.config, request, pool)
    # The rule the experiment's next submission follows (hpcdet.master.scheduling.jobspec).
    placement = place_config(action.settings, pool, config, experiment.owner)
    named = action.queue.by_id[request.job_id]
    _place_job(action, named, placement, result)  # refused: nothing else changes
    _record(experiment, request, config, result)
    for sibling in _queued_siblings(action.queue, experiment, named.job_id):
        try:
            _place_job(action, sibling, placement, result)
        except JobUpdateRefusedError as exc:
            result["messages"].append(f"job {sibling.job_id}: {_scheduler(action.backend)} "
                                      f"refused: {exc.reason}")
    result["messages"].append(_where_placed(pool, config["resources"].get("priority"),
                                            placement))


def _place_task(action: _Action, request: UpdateRequest, result: dict[str, Any]) -> None:
    entry = action.queue.by_id[request.job_id]
    pool = find_pool(action.session, action.settings, request.resource_pool or entry.partition)
    if request.priority is None:
        _place_job(action, entry, Placement(pool.partition, None, entry.nice, None, None), result)
        return
    placement = place(action.settings, pool, JobOwner(entry.user), priority=request.priority)
    _place_job(action, entry, placement, result)
    result["messages"].append(_where_placed(pool, request.priority, placement))


def _place_job(action: _Action, entry: QueueEntry, placement: Placement,
               result: dict[str, Any]) -> None:
    update = placement_update(entry, placement)
    if update.empty:
        result["messages"].append(f"job {entry.job_id}: already placed there")
        return
    _update(action, entry.job_id, update, result)
    result["messages"].append(f"job {entry.job_id}: {_describe(update)}")


def placement_update(entry: QueueEntry, placement: Placement) -> JobUpdate:
    """The partition, QOS and nice of ``placement`` that differ from the job's now."""
    partition = placement.partition
    if partition is not None and partition.lower() == entry.partition.lower():
        partition = None
    qos = placement.qos if placement.qos and placement.qos != entry.qos else None
    nice = placement.nice if placement.nice != entry.nice else None
    return JobUpdate(partition=partition, qos=qos, nice=nice)


def _queued_siblings(queue: _Queue, experiment: Experiment, job_id: str) -> list[QueueEntry]:
    """The experiment's other pending jobs."""
    return [entry for entry in queue.entries
            if entry.pending and entry.job_id != job_id
            and _experiment_id(queue.owned[entry.job_id]) == experiment.id]


def _experiment_id(owner: Ownership) -> int | None:
    return owner.experiment.id if owner.experiment is not None else None


def updated_config(config: Mapping[str, Any], request: UpdateRequest,
                   pool: Pool) -> dict[str, Any]:
    """The experiment's config with the requested priority and pool."""
    resources = dict(config.get("resources") or {})
    if request.priority is not None:
        resources["priority"] = request.priority
    if request.resource_pool:
        resources["resource_pool"] = pool.name
    return {**config, "resources": resources}


def _record(experiment: Experiment, request: UpdateRequest, config: dict[str, Any],
            result: dict[str, Any]) -> None:
    """Store the new priority/pool in the experiment for its later jobs."""
    experiment.config = config
    resources = config["resources"]
    if request.resource_pool:
        experiment.resource_pool = resources["resource_pool"]
    changed = [f"resources.{key} is now {resources[key]}" for key in ("priority", "resource_pool")
               if getattr(request, key)]
    result["messages"].append(f"experiment {experiment.id} ({experiment.name}): "
                              f"{' and '.join(changed)}; its other queued jobs follow, and so "
                              "do later jobs of its trials")


def _where_placed(pool: Pool, priority: int | None, placement: Placement) -> str:
    parts = [f"pool {pool.name}" if pool.name else "the default pool",
             f"partition {placement.partition}" if placement.partition
             else "Slurm's default partition"]
    if placement.qos:
        parts.append(f"QOS {placement.qos}")
    shown = priority or DEFAULT_PRIORITY
    return f"priority {shown} maps to {', '.join(parts)}, nice {placement.nice}"


def _describe(update: JobUpdate) -> str:
    parts = [f"{name} {value}" for name, value in (("partition", update.partition),
                                                   ("QOS", update.qos), ("nice", update.nice))
             if value is not None]
    return ", ".join(parts)


# ---- after -----------------------------------------------------------------------------------


def _after(session: Session, backend: Backend, results: list[dict[str, Any]]) -> None:
    """Read the queue once more: store it, and report positions and orders from it."""
    try:
        final = read_fresh_queue(backend)
    except SchedulerError as exc:  # the updates stand; only the report is missing
        log.warning("could not read Slurm's queue after updating jobs: %s", exc)
        for result in results:
            result["messages"].append(f"could not read Slurm's queue afterwards: {exc}")
        return
    store_queue(session, final)
    _report_positions(results, final)


def _report_positions(results: list[dict[str, Any]], final: Sequence[QueueEntry]) -> None:
    """Each job's position in the queue read after the updates, and whether an asked-for
    order holds there."""
    positions = {entry.job_id: index for index, entry in enumerate(final, start=1)}
    for result in results:
        result["position"] = positions.get(result["job_id"])
        if result.get("relative_to") and result["ok"]:
            _check_order_holds(result, positions)


def _check_order_holds(result: dict[str, Any], positions: Mapping[str, int]) -> None:
    mine, theirs = positions.get(result["job_id"]), positions.get(result["relative_to"])
    holds = mine is not None and theirs is not None and (mine < theirs) == result["ahead"]
    result["order_holds"] = holds
    side = "ahead of" if result["ahead"] else "behind"
    if holds:
        result["messages"].append(f"job {result['job_id']} is now at position {mine}, {side} "
                                  f"job {result['relative_to']} (position {theirs})")
    else:
        result["messages"].append(f"Slurm's queue does not show job {result['job_id']} "
                                  f"{side} job {result['relative_to']} (positions {mine} and "
                                  f"{theirs}): one of them may have started or changed")
