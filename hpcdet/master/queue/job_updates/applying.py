"""Applying one checked ``det job update`` request: ``scontrol update`` of the job (and of
its experiment's other queued jobs), the experiment's config for its later jobs, and the
result that reports it; a refusal is recorded in the result, not raised."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from hpcdet.dispatcher import Backend, UnsupportedError, registry
from hpcdet.dispatcher.queue import JobUpdate, JobUpdateRefusedError, QueueEntry
from hpcdet.errors import ConfigError
from hpcdet.master.errors import Conflict, DomainError, Invalid, Unsupported
from hpcdet.master.models import Experiment
from hpcdet.master.queue.job_queue import (
    COMMAND,
    EXPERIMENT,
    Ownership,
    experiment_pool_name,
    find_pool,
)
from hpcdet.master.queue.job_updates.checks import (
    QueueState,
    UpdateAction,
    check_request,
    job_nice_for_position,
)
from hpcdet.master.queue.job_updates.parsing import UpdateRequest
from hpcdet.master.queue.placement import DEFAULT_PRIORITY, JobOwner, Placement, place, place_config
from hpcdet.master.queue.pools import Pool

log = logging.getLogger(__name__)


def apply_request(action: UpdateAction, request: UpdateRequest, where: str) -> dict[str, Any]:
    """Apply ``request`` (checked again on the queue as it is now); its result says how it
    went, a refusal included (see :func:`hpcdet.master.queue.job_updates.update_jobs`)."""
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
    except DomainError as exc:
        _refused(result, exc)
    except ConfigError as exc:
        _refused(result, Invalid("invalid_config", "; ".join(exc.errors)))
    except JobUpdateRefusedError as exc:
        _refused(result, Conflict(f"{action.backend.name}_refused",
                                  _refusal(action.backend, request.job_id, exc)))
    except UnsupportedError as exc:
        _refused(result, Unsupported("not_implemented", str(exc)))
    return result


def _refused(result: dict[str, Any], refusal: DomainError) -> None:
    result.update(ok=False, error=refusal.message, error_code=refusal.code, refusal=refusal)


def _refusal(backend: Backend, job_id: str, exc: JobUpdateRefusedError) -> str:
    message = f"{_scheduler(backend)} refused to update job {job_id}: {exc.reason}"
    if any(arg.startswith("Nice=-") for arg in exc.argv):
        message += (" (a negative nice raises a job above others: only Slurm operators and "
                    "administrators may set one)")
    return message


def _scheduler(backend: Backend) -> str:
    return registry.scheduler(backend.name).display_name


def _update(action: UpdateAction, job_id: str, update: JobUpdate, result: dict[str, Any]) -> None:
    """One update command (as the job's owner in run-as-owner mode); the queue is stale
    afterwards."""
    action.queue.stale = True
    entry = action.queue.by_id.get(job_id)
    action.backend.update_job(job_id, update, entry.user if entry is not None else None)
    result["changes"].append({"job_id": job_id, "partition": update.partition,
                              "qos": update.qos, "nice": update.nice})
    log.info("%s updated %s job %s: %s", action.actor, action.backend.name, job_id, update)


def _apply_order(action: UpdateAction, request: UpdateRequest, result: dict[str, Any]) -> None:
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


def _apply_placement(action: UpdateAction, request: UpdateRequest, result: dict[str, Any]) -> None:
    owner = action.queue.owned[request.job_id]
    if owner.kind == EXPERIMENT and owner.experiment is not None:
        _place_experiment(action, request, owner.experiment, result)
    elif owner.kind == COMMAND:
        _place_task(action, request, result)


def _place_experiment(action: UpdateAction, request: UpdateRequest, experiment: Experiment,
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


def _place_task(action: UpdateAction, request: UpdateRequest, result: dict[str, Any]) -> None:
    entry = action.queue.by_id[request.job_id]
    pool = find_pool(action.session, action.settings, request.resource_pool or entry.partition)
    if request.priority is None:
        _place_job(action, entry, Placement(pool.partition, None, entry.nice, None, None), result)
        return
    placement = place(action.settings, pool, JobOwner(entry.user), priority=request.priority)
    _place_job(action, entry, placement, result)
    result["messages"].append(_where_placed(pool, request.priority, placement))


def _place_job(action: UpdateAction, entry: QueueEntry, placement: Placement,
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


def _queued_siblings(queue: QueueState, experiment: Experiment, job_id: str) -> list[QueueEntry]:
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

