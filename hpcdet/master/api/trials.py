"""Trial routes: describe, metrics (read and report), checkpoints (register).

Reports take one path, :func:`hpcdet.master.reports.reports.apply_reports`, shared with the
spooled reports the master collects from job directories
(:mod:`hpcdet.master.reports.spool_ingest`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from flask import current_app, request
from sqlalchemy import select

from hpcdet.master.api.access import CHANGE, trial_for
from hpcdet.master.api.auth import bearer_token, current_user, require_token
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.checkpoints import storage_dir
from hpcdet.master.api.common import db, int_arg, json_body, with_reason_words
from hpcdet.master.api.rows import history, jobs_by_trial
from hpcdet.master.errors import Conflict, Invalid, NotFound
from hpcdet.master.experiments import checkpoint_marks, lifecycle
from hpcdet.master.model_base import iso_time
from hpcdet.master.models import Checkpoint, Experiment, Metric, Trial
from hpcdet.master.reports import serialize
from hpcdet.master.reports.failure import trial_failure
from hpcdet.master.reports.ingest import MetricWriter
from hpcdet.master.reports.reports import (
    apply_reports,
    checkpoint_batch,
    metric_group,
    metrics_batch,
)
from hpcdet.master.security.tokens import token_matches


@bp.get("/trials/<int:trial_id>")
def describe_trial(trial_id: int) -> Any:
    """A trial with its state history, Slurm jobs and checkpoints."""
    return trial_detail(trial_for(trial_id))


def trial_detail(trial: Trial) -> dict[str, Any]:
    """``{"trial": Trial + history + jobs, "checkpoints": [...]}`` (also the trial page's data)."""
    jobs = jobs_by_trial([trial.id]).get(trial.id, [])
    body = with_reason_words(serialize.trial(trial, jobs), "pending_reason", "pending_words")
    body["history"] = history("trial", trial.id)
    body["jobs"] = [serialize.job(j) for j in jobs]
    # Why an ERROR or CANCELED trial ended (null otherwise): the one classifier's answer.
    found = trial_failure(db(), trial)
    body["failure"] = None if found is None else found.as_json()
    checkpoints = db().scalars(select(Checkpoint).where(Checkpoint.trial_id == trial.id)
                               .order_by(Checkpoint.steps_completed)).all()
    # Each with its size, location and best/latest marks (what the trial page lists).
    config = db().get_one(Experiment, trial.experiment_id).config
    return {"trial": body, "checkpoints": checkpoint_marks.marked(checkpoints, config,
                                                                  storage_dir(config))}


@bp.get("/trials/<int:trial_id>/metrics")
def read_metrics(trial_id: int) -> Any:
    """Reported metrics, one entry per (group, step); rows a later run rolled back are hidden.
    ``since_steps=N``: only the steps after N (what a poller has not seen yet);
    ``latest=N`` (with ``group``): only the group's N most recent steps."""
    trial_for(trial_id)
    group = request.args.get("group")
    since = int_arg("since_steps", -1, hi=2**62) if "since_steps" in request.args else None
    latest = int_arg("latest", 1, lo=1) if "latest" in request.args else None
    if latest is not None and not group:
        raise Invalid("bad_request", "query parameter latest: needs group")
    return {"metrics": metric_reports(trial_id, [metric_group(group)] if group else None,
                                      since, latest)}


def metric_reports(trial_id: int, groups: Collection[str] | None = None,
                   since_steps: int | None = None,
                   latest_steps: int | None = None) -> list[dict[str, Any]]:
    """The trial's reports, one entry per (group, step), in group then step order.

    Only ``groups`` when given, only steps after ``since_steps`` when given, only the
    ``latest_steps`` most recent steps (of all ``groups`` together) when given; rows a
    later run rolled back (``archived``) are hidden.
    """
    visible = [Metric.trial_id == trial_id, Metric.archived.is_(False)]
    if groups is not None:
        visible.append(Metric.group.in_(list(groups)))
    if since_steps is not None:
        visible.append(Metric.steps_completed > since_steps)
    # Columns, not ORM objects: a long trial's 20,000 validations took 2 s as objects.
    query = select(Metric.group, Metric.steps_completed, Metric.name, Metric.value,
                   Metric.reported_at).where(*visible)
    if latest_steps is not None:
        # det trial describe wants the latest validation: a 2-million-step trial's full list
        # of validations was a 2.9 MB answer (114 ms at 10^8 rows) to show one of them.
        recent = (select(Metric.steps_completed).where(*visible).distinct()
                  .order_by(Metric.steps_completed.desc()).limit(latest_steps))
        query = query.where(Metric.steps_completed.in_(recent.scalar_subquery()))
    steps: dict[tuple[str, int], dict[str, Any]] = {}
    for group, step, name, value, reported_at in db().execute(
            query.order_by(Metric.group, Metric.steps_completed, Metric.id)):
        entry = steps.get((group, step))
        if entry is None:
            entry = steps[(group, step)] = {"group": group, "steps_completed": step,
                                            "metrics": {},
                                            "reported_at": iso_time(reported_at)}
        entry["metrics"][name] = value
    return list(steps.values())


@bp.post("/trials/<int:trial_id>/metrics")
def report_metrics(trial_id: int) -> Any:
    """Store a batch of metric reports from the trial's harness (Bearer token).

    Rows take the group-commit path (:mod:`hpcdet.master.reports.ingest`); with ``stream`` and
    ``seq`` each report is stored once however often it is sent, and validations, far
    rarer, also move the trial's latest and best validation and queue a searcher event.
    """
    writer = metric_writer()
    require_trial_token(writer, trial_id)
    batch = metrics_batch(trial_id, json_body())
    applied = apply_reports(writer, batch)
    answer: dict[str, Any] = {"stored": applied.rows}
    if batch.stream is not None:
        answer["duplicates"] = applied.duplicates
    return answer


@bp.post("/trials/<int:trial_id>/checkpoints")
def report_checkpoint(trial_id: int) -> Any:
    """Register a checkpoint the harness finished writing (Bearer token).

    201 when registered now; 200 with the stored checkpoint when this trial registered the
    uuid before (a retry); 409 ``conflict`` when another trial did.
    """
    writer = metric_writer()
    require_trial_token(writer, trial_id)
    batch = checkpoint_batch(trial_id, json_body())
    applied = apply_reports(writer, batch)
    uuid = str(batch.reports[0].checkpoint["uuid"]) if batch.reports[0].checkpoint else ""
    checkpoint = db().get(Checkpoint, uuid)
    if checkpoint is None:  # its seq was taken by another report of the stream
        raise Conflict("conflict", f"checkpoint {uuid}: seq {batch.reports[0].seq} "
                       "was already used by another report of this stream")
    status = 201 if uuid in applied.created_checkpoints else 200
    return {"checkpoint": serialize.checkpoint(checkpoint)}, status


def metric_writer() -> MetricWriter:
    """The app's metric writer (it caches trial tokens' hashes)."""
    writer: MetricWriter = current_app.config["HPCDET_METRIC_WRITER"]
    return writer


def require_trial_token(writer: MetricWriter, trial_id: int) -> None:
    """401/403 unless the request carries the trial's current token (404: no such trial)."""
    token = writer.token_of(trial_id)
    if token is None:
        raise NotFound("not_found", f"trial {trial_id} not found")
    if not token_matches(bearer_token(), token):
        # The cached hash may be the previous submission's: read the current one once.
        token = writer.token_of(trial_id, fresh=True) or token
    require_token(trial_id, token)


@bp.post("/trials/<int:trial_id>/kill")
def kill_trial(trial_id: int) -> Any:
    """Stop one trial at once; 409 for one that already ended."""
    actor = current_user()
    trial = trial_for(trial_id, CHANGE, actor)
    lifecycle.kill_trial(db(), trial, actor)
    db().commit()
    return {"trial": serialize.trial(trial, jobs_by_trial([trial.id]).get(trial.id, []))}
