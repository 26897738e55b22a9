"""``/trials/<id>``: one trial's facts, Slurm jobs, metric charts, checkpoints, history, logs.

Rendered complete on the server (the last 200 log lines included, filtered by ``?rank=`` and
``?stream=``); ``static/trial.js`` then follows the trial through the JSON API
(``/api/v1/trials/<id>``, its ``metrics`` and ``logs?after=``) until it has ended.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from flask import render_template, url_for
from sqlalchemy import func, select

from hpcdet.master.api.common import db, settings
from hpcdet.master.api.logs import STREAMS, last_rows
from hpcdet.master.api.metric_series import (
    DEFAULT_POINTS,
    MAX_NAMES,
    chart_names,
    group_names,
    series_answer,
)
from hpcdet.master.api.trials import trial_detail
from hpcdet.master.models import Experiment, Metric, Trial, TrialLog
from hpcdet.master.reports import serialize
from hpcdet.master.reports.downsample import COUNTERS
from hpcdet.master.reports.searcher_metric import SearcherMetric
from hpcdet.master.web import checkpoints, forking, trial_logs
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.formatting import number_text, poll_seconds, time_text
from hpcdet.master.web.identity import page_sees

CHART_GROUPS = ("training", "validation")
PROFILING = "profiling"
LOG_TAIL = 200
# The page keeps at most this many log lines in the DOM; older ones are dropped from the top.
MAX_LOG_LINES = 5000
LOG_SECONDS = 2
# The facts change at most as often as the master rereads Slurm, and people want them fresh.
MAX_FACTS_SECONDS = 5
# The profiler's charts: (key, title, unit, which profiling names belong on it).
PROFILER_FAMILIES = (
    ("cpu", "CPU utilisation", "%", re.compile(r"^system\.cpu_util_pct(@.*)?$")),
    ("memory", "Memory used", "bytes", re.compile(r"^system\.memory_used_bytes(@.*)?$")),
    ("gpu", "GPU utilisation", "%", re.compile(r"^gpu\.\d+\.util_pct(@.*)?$")),
    ("gpu_memory", "GPU memory used", "bytes", re.compile(r"^gpu\.\d+\.memory_used_bytes(@.*)?$")),
    ("network", "Network", "bytes/s", re.compile(r"^system\.net_\w+_bytes_per_s(@.*)?$")),
    ("disk", "Disk", "bytes/s", re.compile(r"^system\.disk_\w+_bytes_per_s(@.*)?$")),
    ("timings", "Stage timings, mean per window", "ms", re.compile(r"^timing\..+\.mean_ms(@.*)?$")),
)


@bp.get("/trials/<int:trial_id>")
def trial(trial_id: int) -> tuple[str, int]:
    """The trial page; an unknown trial is a 404 page in the layout."""
    found = db().get(Trial, trial_id)
    experiment = None if found is None else db().get_one(Experiment, found.experiment_id)
    if found is None or experiment is None or not page_sees(experiment.owner,
                                                            experiment.workspace_id):
        return render_template("trial.html", page="experiments", trial_id=trial_id,
                               error=f"trial {trial_id} not found"), 404
    return render_template("trial.html", page="experiments", trial_id=trial_id, error=None,
                           **page_data(found, experiment)), 200


def page_data(found: Trial, experiment: Experiment) -> dict[str, Any]:
    """What trial.html renders and embeds for trial.js."""
    answer = trial_detail(found)
    metric = SearcherMetric.of(experiment.config)
    names = {group: chart_names(group_names(db(), found.id, group))
             for group in (*CHART_GROUPS, PROFILING)}
    selected = default_metrics(names, metric.name)
    metrics = {group: latest_report(found.id, group) for group in CHART_GROUPS}
    series = {group: series_answer(db(), found.id, group,
                                   [name] if (name := selected[group]) else [], DEFAULT_POINTS)
              for group in CHART_GROUPS}
    chosen = trial_logs.log_filter()
    logs = tail_logs(found.id, chosen)
    return {
        "answer": answer, "t": answer["trial"], "experiment": experiment, "metrics": metrics,
        "metric_names": names, "searcher_metric": metric.name, "logs": logs,
        "chosen": chosen, "ranks": rank_count(experiment.config, logs, chosen["rank"]),
        "streams": STREAMS, "selected": selected, "profiler": profiler_charts(names[PROFILING]),
        "pending_words": answer["trial"]["pending_words"],
        "script_data": script_data(answer, series, names, metric.name, logs, chosen),
        "number_text": number_text, "time_text": time_text, "metrics_text": metrics_text,
        "validation_text": validation_text, "hparams_text": hparams_text,
        "log_prefix": log_prefix, "log_level": trial_logs.log_level,
        "log_matches": (trial_logs.match_count(found.id, chosen) if chosen["q"] else None),
        "checkpoint_rows": answer["checkpoints"], **checkpoints.template_helpers(),
        "actions": forking.trial_actions(found, experiment),
    }


def latest_report(trial_id: int, group: str) -> dict[str, Any] | None:
    """The group's last step and its values (counters left out), or None: two index reads,
    whatever the length of the trial (the charts fetch their downsampled series)."""
    visible = (Metric.trial_id == trial_id, Metric.group == group, Metric.archived.is_(False))
    last = db().scalar(select(func.max(Metric.steps_completed)).where(*visible))
    if last is None:
        return None
    values = {name: value for name, value in db().execute(
        select(Metric.name, Metric.value).where(*visible, Metric.steps_completed == last)
        .order_by(Metric.id)) if name not in COUNTERS}
    return {"steps_completed": int(last), "metrics": values}


def default_metrics(names: Mapping[str, list[str]], searcher_metric: str | None
                    ) -> dict[str, str | None]:
    """The metric each chart starts with: the searcher metric, and ``loss`` for training."""
    def pick(group: str, preferred: str | None) -> str | None:
        found = names.get(group) or []
        return preferred if preferred in found else (found[0] if found else None)
    return {"training": pick("training", "loss"),
            "validation": pick("validation", searcher_metric)}


def profiler_charts(names: list[str]) -> list[dict[str, Any]]:
    """The profiler's charts that have data: one per family, a series per name (node, rank)."""
    charts = []
    for key, title, unit, pattern in PROFILER_FAMILIES:
        found = [name for name in names if pattern.match(name)][:MAX_NAMES]
        if found:
            charts.append({"key": key, "title": title, "unit": unit, "names": found})
    return charts


def tail_logs(trial_id: int, chosen: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The last :data:`LOG_TAIL` lines that pass the filter, oldest first."""
    query = trial_logs.filtered(select(TrialLog).where(TrialLog.trial_id == trial_id), chosen)
    return [serialize.log_line(row) for row in last_rows(query, LOG_TAIL)]


def rank_count(config: Mapping[str, Any], logs: list[dict[str, Any]], chosen: int | None
               ) -> int:
    """How many ranks the filter offers: one per slot, or more if the lines show more."""
    slots = int((config.get("resources") or {}).get("slots_per_trial") or 1)
    seen = [int(entry["rank"]) + 1 for entry in logs if entry["rank"] is not None]
    return max([1, slots, *seen, (chosen + 1) if chosen is not None else 0])


def script_data(answer: dict[str, Any], series: dict[str, dict[str, Any]],
                names: Mapping[str, list[str]], searcher_metric: str | None,
                logs: list[dict[str, Any]], chosen: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON trial.js starts from: the page's data and the API routes to follow."""
    trial_id = answer["trial"]["id"]
    return {
        "trial_id": trial_id, "answer": answer, "series": series,
        "profiler": profiler_charts(names[PROFILING]), "max_points": DEFAULT_POINTS,
        "searcher_metric": searcher_metric,
        "reasons": settings().resource_manager.scheduler.reasons,
        "last_log_id": logs[-1]["id"] if logs else 0, "log_filter": chosen,
        "log_tail": LOG_TAIL, "max_log_lines": MAX_LOG_LINES, "log_seconds": LOG_SECONDS,
        "facts_seconds": min(poll_seconds(), MAX_FACTS_SECONDS),
        "urls": {"trial": url_for("api.describe_trial", trial_id=trial_id),
                 "metrics": url_for("api.read_metrics", trial_id=trial_id),
                 "series": url_for("api.read_metric_series", trial_id=trial_id),
                 "logs": url_for("api.read_logs", trial_id=trial_id),
                 "logs_text": url_for("web.trial_logs_text", trial_id=trial_id),
                 "checkpoint_download": url_for("web.checkpoint_download", uuid="UUID")},
    }


def metrics_text(metrics: Mapping[str, Any] | None, first: str | None) -> str:
    """``validation_loss 0.25, accuracy 0.9``: the searcher metric first, then by name."""
    values = {name: value for name, value in (metrics or {}).items() if name not in COUNTERS}
    names = sorted(values, key=lambda name: (name != first, name))
    return ", ".join(f"{name} {number_text(values[name])}" for name in names)


def validation_text(validation: Mapping[str, Any] | None, first: str | None) -> str:
    """``step 100: validation_loss 0.25, ...`` for a trial's best or latest validation."""
    if not validation:
        return ""
    return (f"step {validation.get('steps_completed')}: "
            + metrics_text(validation.get("metrics"), first))


def hparams_text(hparams: Mapping[str, Any] | None) -> str:
    """``hidden=32, lr=0.1``; nested values as JSON."""
    return ", ".join(f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in sorted(
        (hparams or {}).items()))


def log_prefix(entry: Mapping[str, Any]) -> str:
    """``[rank 0 node1 stdout]``: where a line came from (batch-script lines have no rank)."""
    parts = [] if entry.get("rank") is None else [f"rank {entry['rank']}"]
    parts += [entry["node"]] if entry.get("node") else []
    return "[" + " ".join([*parts, str(entry.get("stream"))]) + "]"
