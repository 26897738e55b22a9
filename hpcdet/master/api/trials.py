"""Trial routes: describe, metrics (read and report), checkpoints."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from flask import current_app, request
from sqlalchemy import select

from hpcdet.master import serialize
from hpcdet.master.api import bp
from hpcdet.master.api.auth import current_user, require_token, require_trial_token
from hpcdet.master.api.common import db, get_or_404, json_body
from hpcdet.master.errors import ApiError
from hpcdet.master.ingest import MetricWriter
from hpcdet.master.models import (
    Checkpoint,
    Experiment,
    Job,
    Metric,
    SearcherEvent,
    Trial,
)
from hpcdet.master.searcher_metric import SearcherMetric

METRIC_GROUPS = ("training", "validation", "profiling")
MAX_REPORTS = 10_000


def jobs_by_trial(trial_ids: list[int]) -> dict[int, list[Job]]:
    out: dict[int, list[Job]] = defaultdict(list)
    if trial_ids:
        for j in db().scalars(select(Job).where(Job.trial_id.in_(trial_ids)).order_by(Job.id)):
            out[j.trial_id].append(j)
    return out


@bp.get("/trials/<int:trial_id>")
def describe_trial(trial_id: int) -> Any:
    """A trial with its state history, Slurm jobs and checkpoints."""
    from hpcdet.master.api.experiments import history

    current_user()
    trial = get_or_404(Trial, trial_id, "trial")
    jobs = jobs_by_trial([trial_id]).get(trial_id, [])
    body = serialize.trial(trial, jobs)
    body["history"] = history("trial", trial_id)
    body["jobs"] = [serialize.job(j) for j in jobs]
    checkpoints = db().scalars(select(Checkpoint).where(Checkpoint.trial_id == trial_id)
                               .order_by(Checkpoint.steps_completed)).all()
    return {"trial": body, "checkpoints": [serialize.checkpoint(c) for c in checkpoints]}


@bp.get("/trials/<int:trial_id>/metrics")
def read_metrics(trial_id: int) -> Any:
    """Reported metrics, one entry per (group, step)."""
    get_or_404(Trial, trial_id, "trial")
    query = select(Metric).where(Metric.trial_id == trial_id)
    group = request.args.get("group")
    if group:
        query = query.where(Metric.group == _group(group))
    steps: dict[tuple[str, int], dict[str, Any]] = {}
    for m in db().scalars(query.order_by(Metric.group, Metric.steps_completed, Metric.id)):
        entry = steps.setdefault((m.group, m.steps_completed), {
            "group": m.group, "steps_completed": m.steps_completed, "metrics": {},
            "reported_at": serialize._time(m.reported_at)})
        entry["metrics"][m.name] = m.value
    return {"metrics": list(steps.values())}


def _group(value: Any) -> str:
    if value not in METRIC_GROUPS:
        raise ApiError(400, "bad_request", f"group: must be one of {', '.join(METRIC_GROUPS)}")
    return str(value)


@bp.post("/trials/<int:trial_id>/metrics")
def report_metrics(trial_id: int) -> Any:
    """Store a batch of metric reports from the trial's harness (Bearer token).

    Rows take the group-commit path (:mod:`hpcdet.master.ingest`); validation metrics,
    far rarer, then also update the trial's latest and best validation.
    """
    writer: MetricWriter = current_app.config["HPCDET_METRIC_WRITER"]
    token = writer.token_of(trial_id)
    if token is None:
        raise ApiError(404, "not_found", f"trial {trial_id} not found")
    require_token(trial_id, token)
    body = json_body()
    group = _group(body.get("group"))
    reports = _reports(body.get("reports"))
    stored = writer.write(trial_id, group, reports)
    if group == "validation":
        trial = get_or_404(Trial, trial_id, "trial")
        _update_progress(trial, reports)
        _queue_for_searcher(trial, reports)
        db().commit()
    return {"stored": stored}


def _reports(raw: Any) -> list[tuple[int, dict[str, float]]]:
    if not isinstance(raw, list) or len(raw) > MAX_REPORTS:
        raise ApiError(400, "bad_request", f"reports: must be a list of at most {MAX_REPORTS}")
    return [_one_report(i, r) for i, r in enumerate(raw)]


def _one_report(index: int, report: Any) -> tuple[int, dict[str, float]]:
    where = f"reports[{index}]"
    if not isinstance(report, Mapping):
        raise ApiError(400, "bad_request", f"{where}: must be an object")
    steps, metrics = report.get("steps_completed"), report.get("metrics")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ApiError(400, "bad_request", f"{where}.steps_completed: must be an integer >= 0")
    if not isinstance(metrics, Mapping):
        raise ApiError(400, "bad_request", f"{where}.metrics: must be an object")
    return steps, {str(k): _finite(f"{where}.metrics.{k}", v) for k, v in metrics.items()}


def _finite(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ApiError(400, "bad_request", f"{where}: must be a finite number, got {value!r}")
    return float(value)


def _update_progress(trial: Trial, reports: list[tuple[int, dict[str, float]]]) -> None:
    """Latest and best validation (the writer has already advanced ``steps_completed``)."""
    if not reports:
        return
    latest_steps, latest = max(reports, key=lambda r: r[0])
    trial.latest_validation = {"steps_completed": latest_steps, "metrics": latest}
    _update_best(trial, reports)


def _queue_for_searcher(trial: Trial, reports: list[tuple[int, dict[str, float]]]) -> None:
    """Hand each validation to the experiment's searcher (the reconciler consumes them)."""
    db().add_all(SearcherEvent(experiment_id=trial.experiment_id, trial_id=trial.id,
                               steps_completed=steps, metrics=metrics)
                 for steps, metrics in reports)


def _update_best(trial: Trial, reports: list[tuple[int, dict[str, float]]]) -> None:
    metric = SearcherMetric.of(db().scalars(select(Experiment.config).where(
        Experiment.id == trial.experiment_id)).one())
    best = trial.best_validation
    for steps, metrics in reports:
        value = metric.value_in(metrics)
        if value is not None and (best is None or metric.key(value) < metric.key(
                float(best["metrics"][metric.name]))):
            best = {"steps_completed": steps, "metrics": metrics}
    trial.best_validation = best


@bp.post("/trials/<int:trial_id>/checkpoints")
def report_checkpoint(trial_id: int) -> Any:
    """Register a checkpoint the harness finished writing (Bearer token)."""
    trial = get_or_404(Trial, trial_id, "trial")
    require_trial_token(trial)
    body = json_body()
    uuid, steps = body.get("uuid"), body.get("steps_completed")
    if not isinstance(uuid, str) or not 8 <= len(uuid) <= 64:
        raise ApiError(400, "bad_request", "uuid: must be a string of 8 to 64 characters")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ApiError(400, "bad_request", "steps_completed: must be an integer >= 0")
    if db().get(Checkpoint, uuid) is not None:
        raise ApiError(409, "conflict", f"checkpoint {uuid} is already registered")
    checkpoint = Checkpoint(uuid=uuid, trial_id=trial_id, steps_completed=steps,
                            metadata_=_obj(body, "metadata"), resources=_obj(body, "resources"),
                            validation_metrics=_validation_at(trial, steps))
    db().add(checkpoint)
    trial.latest_checkpoint = uuid
    db().commit()
    return {"checkpoint": serialize.checkpoint(checkpoint)}, 201


def _obj(body: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = body.get(key) or {}
    if not isinstance(value, dict):
        raise ApiError(400, "bad_request", f"{key}: must be an object")
    return value


def _validation_at(trial: Trial, steps: int) -> dict[str, Any] | None:
    latest = trial.latest_validation
    if latest and latest.get("steps_completed") == steps:
        return dict(latest["metrics"])
    return None
