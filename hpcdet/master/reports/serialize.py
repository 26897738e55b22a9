"""Models to the JSON shapes documented in docs/api.md."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hpcdet.master.model_base import iso_time
from hpcdet.master.models import Checkpoint, Experiment, Job, StateChange, Trial, TrialLog
from hpcdet.master.reports.searcher_metric import SearcherMetric
from hpcdet.states import State


def experiment(exp: Experiment, num_trials: int) -> dict[str, Any]:
    return {
        "id": exp.id, "name": exp.name, "description": exp.description,
        "labels": list(exp.labels or []), "state": exp.state, "owner": exp.owner,
        "searcher": exp.searcher_name, "resource_pool": exp.resource_pool,
        "archived": exp.archived, "workspace_id": exp.workspace_id,
        "project_id": exp.project_id, "created_at": iso_time(exp.created_at),
        "ended_at": iso_time(exp.ended_at), "num_trials": num_trials,
        "progress": exp.progress, "parent_id": exp.parent_id,
        "unmanaged": bool(exp.unmanaged), "external_id": exp.external_id,
    }


def trial(t: Trial, jobs: Iterable[Job] = ()) -> dict[str, Any]:
    """A trial; ``jobs`` are its jobs in submission order."""
    jobs = list(jobs)
    return {
        "id": t.id, "experiment_id": t.experiment_id, "state": t.state, "hparams": t.hparams,
        "seed": t.seed, "restarts": t.restarts, "steps_completed": t.steps_completed,
        "best_validation": t.best_validation, "latest_validation": t.latest_validation,
        "latest_checkpoint": t.latest_checkpoint,
        "early_exit": t.early_exit, "stop_reason": t.stop_reason,
        # An unmanaged trial's job is the user's own, which its run is linked to.
        "job_ids": [j.job_id for j in jobs if j.job_id] or (
            [t.external_job] if t.external_job else []),
        "slurm_jobs": [{"job_id": j.job_id, "run_id": j.run_id, "requeues": j.requeues}
                       for j in jobs if j.job_id],
        "nodes": next((j.nodes for j in reversed(jobs) if j.nodes), None),
        "pending_reason": pending_reason(t, jobs),
        "interruptions": t.interruptions, "cancel_retries": t.cancel_retries,
        "excluded_nodes": list(t.excluded_nodes or []),
        "external_id": t.external_id, "external_job": t.external_job,
        "created_at": iso_time(t.created_at), "ended_at": iso_time(t.ended_at),
    }


def pending_reason(t: Trial, jobs: Iterable[Job]) -> str | None:
    """Slurm's reason code (``Priority``, ``Resources``...) for a QUEUED trial's active job."""
    if t.state != State.QUEUED.value:
        return None
    active = [j for j in jobs if j.active and j.job_id]
    reason = active[-1].reason if active else None
    return reason if reason and reason != "None" else None


def job(j: Job) -> dict[str, Any]:
    return {"job_id": j.job_id, "run_id": j.run_id, "phase": j.phase,
            "native_state": j.native_state, "reason": j.reason, "exit_code": j.exit_code,
            "nodes": j.nodes, "requeues": j.requeues, "active": j.active,
            "submitted_at": iso_time(j.submitted_at), "ended_at": iso_time(j.ended_at)}


def state_change(c: StateChange) -> dict[str, Any]:
    return {"from": c.from_state, "to": c.to_state, "at": iso_time(c.at), "cause": c.cause,
            "actor": c.actor}


def checkpoint(c: Checkpoint) -> dict[str, Any]:
    return {"uuid": c.uuid, "trial_id": c.trial_id, "steps_completed": c.steps_completed,
            "metadata": c.metadata_, "resources": c.resources,
            "validation_metrics": c.validation_metrics, "state": c.state,
            "reported_at": iso_time(c.reported_at)}


def checkpoint_detail(c: Checkpoint, experiment_id: int, storage_dir: str | None,
                      searcher: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint with where it lives and its searcher metric (the checkpoint routes)."""
    body = checkpoint(c)
    metric = SearcherMetric.of({"searcher": searcher})
    body.update(experiment_id=experiment_id,
                storage_path=f"{storage_dir}/{c.uuid}" if storage_dir else None,
                searcher_metric=metric.name,
                smaller_is_better=metric.smaller_is_better,
                searcher_metric_value=(c.validation_metrics or {}).get(str(metric.name)))
    return body


def log_line(entry: TrialLog) -> dict[str, Any]:
    return {"id": entry.id, "rank": entry.rank, "node": entry.node, "stream": entry.stream,
            "line": entry.line, "job_id": entry.job_id, "at": iso_time(entry.at)}

