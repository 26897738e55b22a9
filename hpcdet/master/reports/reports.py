"""Report bodies, and the one path that applies them: the HTTP routes and spooled files alike.

A trial's reporter sends its reports in order, each numbered ``seq`` within its stream
(see :mod:`hpcdet.master.reports.ingest`):

* ``POST /trials/<id>/metrics``: ``{"group", "reports": [{"steps_completed", "metrics"}],
  "stream": {"run_id", "requeue", "rank"}, "seq": <seq of reports[0]; the others follow>,
  "resumed_from": {"uuid", "steps_completed"}}``;
* ``POST /trials/<id>/checkpoints``: ``{"uuid", "steps_completed", "metadata", "resources",
  "stream", "seq", "resumed_from"}``.

``stream`` and ``seq`` come together or not at all (old clients: stored without dedup, as
run 0). ``resumed_from`` says which checkpoint the execution started from; the master acts
on it once, when the stream first appears (without it, the stream rolls nothing back). A
spooled file holds one report per line, with its ``seq`` (:func:`spooled_report`). All of
them become a :class:`ReportBatch` for :func:`apply_reports`, so HTTP and spool cannot
differ in what a report does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from hpcdet.master.errors import Conflict, Invalid
from hpcdet.master.models import Checkpoint
from hpcdet.master.reports.ingest import (
    CHECKPOINT,
    Applied,
    MetricWriter,
    Report,
    ReportBatch,
    StaleRunError,
    Stream,
    StreamKey,
)
from hpcdet.master.reports.report_effects import METRIC_GROUPS
from hpcdet.master.security.storage_roots import is_uuid

MAX_REPORTS = 10_000
STALE_RUN = "stale_run"


def apply_reports(writer: MetricWriter, batch: ReportBatch, *, now: bool = False) -> Applied:
    """Store ``batch`` exactly once (group commit; ``now``: in this thread).

    A Conflict ``conflict`` if one of its checkpoints belongs to another trial (nothing
    stored); a Conflict ``stale_run`` if a newer execution of the trial has reported since.
    """
    foreign = foreign_checkpoints(writer.engine, batch)
    if foreign:
        raise Conflict("conflict", f"checkpoint {sorted(foreign)[0]} is registered to "
                       "another trial")
    try:
        return writer.apply_now(batch) if now else writer.apply(batch)
    except StaleRunError as exc:
        raise Conflict(STALE_RUN, str(exc)) from None


def foreign_checkpoints(engine: Engine, batch: ReportBatch) -> set[str]:
    """uuids of the batch's checkpoints that are registered to another trial."""
    uuids = {str(r.checkpoint["uuid"]) for r in batch.reports if r.checkpoint is not None}
    if not uuids:
        return set()
    with engine.connect() as conn:
        rows = conn.execute(select(Checkpoint.uuid, Checkpoint.trial_id).where(
            Checkpoint.uuid.in_(uuids))).all()
    return {uuid for uuid, trial_id in rows if trial_id != batch.trial_id}


def metrics_batch(trial_id: int, body: Mapping[str, Any]) -> ReportBatch:
    """The batch of a ``POST /trials/<id>/metrics`` body (Invalid naming what is wrong)."""
    group = metric_group(body.get("group"))
    raw = body.get("reports")
    if not isinstance(raw, list) or len(raw) > MAX_REPORTS:
        raise Invalid("bad_request", f"reports: must be a list of at most {MAX_REPORTS}")
    stream, first = _stream(trial_id, body)
    return ReportBatch(trial_id, [
        Report(group, *_metrics_report(i, r), seq=None if first is None else first + i)
        for i, r in enumerate(raw)], stream)


def checkpoint_batch(trial_id: int, body: Mapping[str, Any]) -> ReportBatch:
    """The batch of a ``POST /trials/<id>/checkpoints`` body (one checkpoint)."""
    stream, seq = _stream(trial_id, body)
    return ReportBatch(trial_id, [_checkpoint_report(body, seq)], stream)


def spooled_report(line: Any) -> Report:
    """One line of a spool file: a metrics report or a checkpoint registration, with its seq."""
    if not isinstance(line, Mapping):
        raise Invalid("bad_request", "a spooled report must be an object")
    seq = _count("seq", line.get("seq"))
    if line.get("group") == CHECKPOINT:
        body = line.get("checkpoint")
        if not isinstance(body, Mapping):
            raise Invalid("bad_request", "checkpoint: must be an object")
        return _checkpoint_report(body, seq)
    return Report(metric_group(line.get("group")), *_metrics_report(None, line), seq=seq)


def metric_group(value: Any) -> str:
    if value not in METRIC_GROUPS:
        raise Invalid("bad_request", f"group: must be one of {', '.join(METRIC_GROUPS)}")
    return str(value)


def stream_identity(trial_id: int, raw: Any, resumed: Any) -> Stream:
    """``{"run_id", "requeue", "rank"}`` and ``resumed_from`` as a :class:`Stream`."""
    if not isinstance(raw, Mapping):
        raise Invalid("bad_request", "stream: must be an object")
    key = StreamKey(trial_id, *(_count(f"stream.{name}", raw.get(name))
                                for name in ("run_id", "requeue", "rank")))
    # Without resumed_from, where the execution started is unknown: it rolls nothing back.
    return Stream(key, None if resumed is None else resumed_steps(resumed))


def resumed_steps(raw: Any) -> int:
    """``resumed_from.steps_completed`` (0 when absent: the execution started afresh)."""
    if raw is None:
        return 0
    if not isinstance(raw, Mapping):
        raise Invalid("bad_request", "resumed_from: must be an object")
    steps = raw.get("steps_completed")
    return 0 if steps is None else _count("resumed_from.steps_completed", steps)


def _stream(trial_id: int, body: Mapping[str, Any]) -> tuple[Stream | None, int | None]:
    if body.get("stream") is None and body.get("seq") is None:
        return None, None
    if body.get("stream") is None or body.get("seq") is None:
        raise Invalid("bad_request", "stream and seq: give both or neither")
    stream = stream_identity(trial_id, body.get("stream"), body.get("resumed_from"))
    return stream, _count("seq", body.get("seq"))


def _metrics_report(index: int | None, report: Any) -> tuple[int, dict[str, float]]:
    """``reports[index]`` (a spooled line's report: None) as (steps, metrics)."""
    if not isinstance(report, Mapping):
        raise Invalid("bad_request", f"{_where(index)}: must be an object")
    steps, metrics = report.get("steps_completed"), report.get("metrics")
    if type(steps) is not int or steps < 0:  # not a bool (an int subclass) either
        raise Invalid("bad_request",
                      f"{_where(index)}.steps_completed: must be an integer >= 0")
    if not isinstance(metrics, Mapping):
        raise Invalid("bad_request", f"{_where(index)}.metrics: must be an object")
    checked = {}
    for name, value in metrics.items():
        # Reports are many: the common value (a finite float) costs one test, and the
        # message of an error is only written for an error.
        if type(value) is not float or not math.isfinite(value):
            value = _finite(f"{_where(index)}.metrics.{name}", value)
        checked[str(name)] = value
    return steps, checked


def _where(index: int | None) -> str:
    return "report" if index is None else f"reports[{index}]"


def _checkpoint_report(body: Mapping[str, Any], seq: int | None) -> Report:
    uuid, steps = body.get("uuid"), body.get("steps_completed")
    if not is_uuid(uuid):
        raise Invalid("bad_request", "uuid: must be a UUID (32 hex digits, dashes "
                      "allowed): it names the checkpoint's directory")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise Invalid("bad_request", "steps_completed: must be an integer >= 0")
    checkpoint = {"uuid": uuid, "metadata": _obj(body, "metadata"),
                  "resources": _obj(body, "resources")}
    return Report(CHECKPOINT, steps, checkpoint=checkpoint, seq=seq)


def _obj(body: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = body.get(key) or {}
    if not isinstance(value, dict):
        raise Invalid("bad_request", f"{key}: must be an object")
    return value


def _count(where: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise Invalid("bad_request", f"{where}: must be an integer >= 0")
    return value


def _finite(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise Invalid("bad_request", f"{where}: must be a finite number, got {value!r}")
    return float(value)
