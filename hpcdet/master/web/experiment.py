"""``/experiments/<id>``: one experiment's facts, trials, charts, config and history.

The page is in sections with a nav of anchors: the validation chart first (beside the
facts), then the hyperparameter views (constant hyperparameters listed once, not drawn),
the trial comparison (and a link to ``/compare`` across experiments), the trials table,
checkpoints, config and history.

The page is rendered complete on the server (tables in Jinja); ``static/experiment.js``
then draws the charts from the JSON embedded in the page and keeps everything current by
polling ``/api/v1/experiments/<id>``, ``.../metrics`` and, for ``adaptive_asha``,
``.../rungs``, until the experiment has ended. The embedded JSON has the same shapes as
those answers, so the first render and every refresh go through the same script code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml
from flask import render_template, request, url_for

from hpcdet.errors import ConfigError
from hpcdet.expconf import without_nulls
from hpcdet.master.api.common import db, settings
from hpcdet.master.api.experiment_metrics import metric_series, rungs_answer
from hpcdet.master.api.experiments import experiment_detail, trials_answer
from hpcdet.master.models import Experiment
from hpcdet.master.queue.pools import pool_for_config
from hpcdet.master.reports.searcher_metric import SearcherMetric
from hpcdet.master.security.shown_config import owner_view, shown_config
from hpcdet.master.web import checkpoints, experiment_trials
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.experiment_trials import TrialsArgs, trials_args
from hpcdet.master.web.formatting import number_text, percent, poll_seconds, time_text
from hpcdet.master.web.identity import page_sees, page_user

# The experiment page refreshes faster than the cluster pages: people watch it after
# pressing Pause or Activate, and its data (the database, not Slurm) is cheap to read.
MAX_POLL_SECONDS = 5


@bp.get("/experiments/<int:exp_id>")
def experiment(exp_id: int) -> tuple[str, int]:
    """The experiment page; an unknown id is a 404 page in the common layout, a bad table
    query (sort, order, page, per_page) a 400 that names it above the default table."""
    exp = db().get(Experiment, exp_id)
    if exp is None or not page_sees(exp.owner, exp.workspace_id):  # unseen: as if unknown
        return render_template("experiment.html", page="experiments", exp=None,
                               exp_id=exp_id), 404
    args, errors = trials_args(request.args, SearcherMetric.of(exp.config))
    return render_template("experiment.html", page="experiments", errors=errors,
                           **page_context(exp, args)), 400 if errors else 200


def page_context(exp: Experiment, args: TrialsArgs) -> dict[str, Any]:
    """What the template renders: the API's JSON, table rows, chart names, the config."""
    metric = SearcherMetric.of(exp.config)
    data = page_data(exp, args)
    names = hparam_names(data["trials"])
    constants = constant_hparams(data["trials"])
    rungs = {row["trial_id"]: row for row in (data["rungs"] or {}).get("rungs", [])}
    best_id = data["experiment"]["best_trial_id"]
    return {"exp": data["experiment"], "data": data, "metric": metric,
            "hparam_names": names, "asha": data["rungs"] is not None,
            "rows": [trial_row(t, names, metric, best_id, rungs.get(t["id"]))
                     for t in data["trials"]],
            "hparam_charts": ([n for n in names if n not in constants]
                              if len(data["trials"]) > 1 else []),
            "constant_hparams": [{"name": name, "text": f"{name}={value_text(value)}"}
                                 for name, value in sorted(constants.items())],
            "compare_href": url_for("web.compare", trials=",".join(
                str(t["id"]) for t in data["trials"][:3])),
            "trial_counts": sorted(data["experiment"]["trial_counts"].items()),
            "pager": experiment_trials.pager(exp.id, args, metric, data["pagination"]),
            "sort_links": experiment_trials.sort_links(exp.id, args, metric),
            "history": data["experiment"]["history"],
            "config_yaml": yaml.safe_dump(
                without_nulls(shown_config(exp.config, to_owner=owns(exp))), sort_keys=False),
            "user_config_yaml": submitted_config_yaml(exp.original_config, to_owner=owns(exp)),
            "pool_name": pool_name(exp.config),
            "fmt_time": time_text, "percent": percent,
            # The checkpoint list across trials, best first (hpcdet/master/web/checkpoints.py).
            **checkpoints.list_context(exp)}


def owns(exp: Experiment) -> bool:
    """Whether the page's user owns ``exp`` (and so sees its config unmasked but for the
    storage secrets)."""
    return owner_view(settings(), page_user(), exp.owner)


def submitted_config_yaml(original: str | None, *, to_owner: bool) -> str:
    """The config the user submitted (secrets masked), or "" when it cannot be read."""
    try:
        parsed = yaml.safe_load(original or "")
    except yaml.YAMLError:
        return ""
    if not isinstance(parsed, Mapping) or not parsed:
        return ""
    return yaml.safe_dump(shown_config(parsed, to_owner=to_owner), sort_keys=False)


def pool_name(config: Mapping[str, Any]) -> str:
    """The pool the trials run in, by name: "(the default)" only when the config names
    none and the master chose it ("the default pool" when none is known yet)."""
    try:
        found = pool_for_config(db(), settings(), config).name
    except ConfigError as exc:
        return f"unknown ({'; '.join(exc.errors)})"
    if (config.get("resources") or {}).get("resource_pool"):
        return found
    return f"{found} (the default)" if found else "the default pool"


def page_data(exp: Experiment, args: TrialsArgs) -> dict[str, Any]:
    """The JSON embedded for the script: the answers it polls, as they are now.

    Only the table's page of trials is read, and the charts draw just those trials (by
    default the best ones): their validation series, rungs and hyperparameters.
    """
    # The API's own views, so the embedded shape is exactly what the script fetches later.
    described = experiment_detail(exp.id, page_user())
    body = {k: v for k, v in described["experiment"].items() if k != "config"}
    listed = trials_answer(exp, args.order, offset=args.offset, limit=args.per_page)
    ids = [t["id"] for t in listed["trials"]]
    metric = SearcherMetric.of(exp.config)
    series = metric_series(db(), exp.id, "validation", metric.name, ids) if (
        metric.name and ids) else []
    return {"experiment": body, "trials": listed["trials"],
            "pagination": listed["pagination"],
            "trials_url": experiment_trials.api_url(exp.id, args),
            "metrics": {"metric": metric.name, "group": "validation", "trials": series},
            # Only ASHA has rungs; None tells the script to leave out the Rung column.
            "rungs": (page_rungs(exp, set(ids)) if exp.searcher_name == "adaptive_asha"
                      else None),
            "searcher_metric": {"name": metric.name,
                                "smaller_is_better": metric.smaller_is_better},
            "log_hparams": log_hparams(exp.config.get("hyperparameters") or {}),
            "poll_seconds": min(poll_seconds(), MAX_POLL_SECONDS)}


def page_rungs(exp: Experiment, trial_ids: set[int]) -> dict[str, Any]:
    """The rungs answer narrowed to the table's trials."""
    answer = rungs_answer(db(), exp)
    return {**answer, "rungs": [r for r in answer["rungs"] if r["trial_id"] in trial_ids]}


def trial_row(trial: Mapping[str, Any], names: list[str], metric: SearcherMetric,
              best_id: int | None, rung: Mapping[str, Any] | None) -> dict[str, Any]:
    """One row of the trials table, as text."""
    flat = flat_hparams(trial.get("hparams") or {})
    best_metrics = (trial.get("best_validation") or {}).get("metrics")
    return {"id": trial["id"], "state": trial["state"], "best": trial["id"] == best_id,
            "hparams": [value_text(flat.get(name)) for name in names],
            "steps": trial["steps_completed"],
            "best_value": number_text(metric.value_in(best_metrics)),
            "restarts": trial["restarts"], "job_ids": list(trial["job_ids"]),
            "rung": rung}


def hparam_names(trials: list[Mapping[str, Any]]) -> list[str]:
    """Every flattened hyperparameter name of the trials, sorted (one table column each)."""
    return sorted({name for t in trials for name in flat_hparams(t.get("hparams") or {})})


def constant_hparams(trials: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The hyperparameters with one value in every trial (of two or more), by flat name:
    the views leave them out and list them once. One a trial lacks is not constant."""
    if len(trials) < 2:
        return {}
    flats = [flat_hparams(t.get("hparams") or {}) for t in trials]

    def key(value: Any) -> str:  # 1 and true are different values, as in the script
        return json.dumps(value, sort_keys=True)

    return {name: value for name, value in flats[0].items()
            if all(name in flat and key(flat[name]) == key(value) for flat in flats[1:])}


def log_hparams(space: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The flattened names of the ``type: log`` hyperparameters (their plots use a log axis)."""
    names: list[str] = []
    for key, value in space.items():
        if not isinstance(value, Mapping):
            continue
        if value.get("type") == "log":
            names.append(f"{prefix}{key}")
        elif "type" not in value:  # a nested group of hyperparameters
            names += log_hparams(value, f"{prefix}{key}.")
    return names


def flat_hparams(hparams: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested groups flattened: ``{"opt": {"lr": 0.1}}`` is ``{"opt.lr": 0.1}``."""
    flat: dict[str, Any] = {}
    for key, value in hparams.items():
        if isinstance(value, Mapping) and value:
            flat.update(flat_hparams(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def value_text(value: Any) -> str:
    """A hyperparameter value as the script shows it (numbers as in :func:`number_text`)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return number_text(value)
    return value if isinstance(value, str) else json.dumps(value)
