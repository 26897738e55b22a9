"""Experiment routes: create (and dry-run), list, describe, trials."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from flask import current_app, request
from sqlalchemy import ColumnElement, func, select

from hpcdet.master.api import experiment_edits
from hpcdet.master.api.access import experiment_for
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, get_or_404, int_arg, json_body, settings, with_reason_words
from hpcdet.master.api.rows import history, jobs_by_trial
from hpcdet.master.api.templates import template_for_experiment
from hpcdet.master.api.unmanaged import create_unmanaged
from hpcdet.master.errors import Invalid
from hpcdet.master.experiments import experiment_list, trial_pages
from hpcdet.master.models import Experiment, TrialLog
from hpcdet.master.reports import serialize
from hpcdet.master.reports.failure import experiment_failures
from hpcdet.master.reports.searcher_metric import SearcherMetric
from hpcdet.master.scheduling.submission import accept
from hpcdet.master.security.authz import visible
from hpcdet.master.security.shown_config import owner_view, shown_config
from hpcdet.master.security.workspaces import placement_for, project_in, workspace_for
from hpcdet.states import State

# How many of its last log lines an ERROR trial shows in the experiment's description.
LOG_TAIL_LINES = 10


@bp.post("/experiments")
def create_experiment() -> Any:
    """Validate and store an experiment, or with ``dry_run`` render its job only.

    With ``"template": NAME`` the template's config is merged under the submitted one;
    ``"workspace"`` (and ``"project"``) names where it belongs (editor role needed);
    ``"activate": false`` creates it PAUSED (Determined's ``activate``; default true).
    ``"unmanaged": true``: an experiment a script reports into (:mod:`.unmanaged`).
    """
    owner = current_user()
    body = json_body()
    if body.get("unmanaged") is True:
        return create_unmanaged(owner, body)
    where = placement_for(db(), settings(), owner, body.get("workspace"), body.get("project"))
    config_text, context = body.get("config"), body.get("context")
    if not isinstance(config_text, str) or not isinstance(context, str):
        raise Invalid("bad_request", "body needs 'config' (YAML text) and 'context' "
                      "(base64 tar.gz)")
    activate = body.get("activate", True)
    if not isinstance(activate, bool):
        raise Invalid("bad_request", "body field activate: must be true or false")
    template = template_for_experiment(body.get("template"), owner)
    result = accept(db(), settings(), current_app.config["HPCDET_BACKEND"],
                    config_text=config_text, context_b64=context, owner=owner,
                    dry_run=bool(body.get("dry_run")), template=template, activate=activate)
    template_name = template.name if template is not None else None
    if result.experiment is None:
        jobs = [{"trial": i + 1, "script": s.script, "argv": list(s.argv)}
                for i, s in enumerate(result.dry_run_jobs)]
        allocation = result.dry_run_allocation
        extra = {} if allocation is None else {
            "allocation": {"script": allocation.script, "argv": list(allocation.argv)}}
        return {"dry_run": True, "jobs": jobs, "warnings": result.warnings,
                "template": template_name, **extra}
    result.experiment.workspace_id, result.experiment.project_id = where
    db().commit()
    return {"experiment": serialize.experiment(result.experiment, 0),
            "warnings": result.warnings, "template": template_name}, 201


@bp.get("/experiments")
def list_experiments() -> Any:
    """Experiments, newest first (``sort``/``order``: by another column), filtered by state,
    owner, label and a part of the name (``name``); archived on request.

    Each has ``best_metric``: the searcher metric's best value over its trials, or null.
    Only the experiments the caller may see are listed (and counted); ``workspace`` (and
    ``project``) narrow the list to one workspace (project).
    """
    actor = current_user()
    seen = visible(settings(), actor, Experiment.owner, Experiment.workspace_id)
    seen += _in_workspace(actor, request.args.get("workspace"), request.args.get("project"))
    try:
        filters = experiment_list.filters_from(request.args)
        order = experiment_list.order_from(request.args)
    except experiment_list.BadParameter as exc:
        raise Invalid("bad_request", f"query parameter {exc}") from None
    listing = experiment_list.list_experiments(
        db(), filters, offset=int_arg("offset", 0), limit=int_arg("limit", 100, hi=1000),
        visible=seen, order=order)
    return {"experiments": listing.experiments, "total": listing.total}


def _in_workspace(actor: str, workspace: str | None,
                  project: str | None) -> list[ColumnElement[bool]]:
    """The conditions for ``?workspace=W&project=P``; 404 for one the caller cannot see."""
    if not workspace:
        if project:
            raise Invalid("bad_request", "query parameter project: needs workspace")
        return []
    found = workspace_for(db(), settings(), actor, workspace)
    if not project:
        return [Experiment.workspace_id == found.id]
    return [Experiment.project_id == project_in(db(), found, project).id]


@bp.route("/experiments/<int:exp_id>", methods=["GET", "PATCH", "DELETE"])
def describe_experiment(exp_id: int) -> Any:
    """One experiment with its effective config, history and trial counts (see
    experiment_detail; the trials themselves: ``GET .../trials``);
    PATCH and DELETE: :mod:`hpcdet.master.api.experiment_edits`."""
    if request.method == "PATCH":
        return experiment_edits.patch_experiment(exp_id)
    if request.method == "DELETE":
        return experiment_edits.delete_experiment(exp_id)
    experiment_for(exp_id)
    return experiment_detail(exp_id, current_user())


def experiment_detail(exp_id: int, reader: str) -> dict[str, Any]:
    """``{"experiment"}`` with its config (as ``reader`` may see it:
    security/shown_config.py), history, trial counts and best trial; 404 for an unknown id.
    The trials themselves are paged: ``GET .../trials``."""
    exp = get_or_404(Experiment, exp_id, "experiment")
    counts = trial_pages.state_counts(db(), exp_id)
    body = serialize.experiment(exp, sum(counts.values()))
    body["trial_counts"] = counts
    body["config"] = shown_config(exp.config, to_owner=owner_view(settings(), reader, exp.owner))
    body["history"] = history("experiment", exp_id)
    body["best_trial_id"] = trial_pages.best_trial_id(db(), exp_id, SearcherMetric.of(exp.config))
    # Why its latest errored trials failed (reports/failure.py; [] when none did).
    body["failures"] = experiment_failures(db(), exp_id) if counts.get("ERROR") else []
    return {"experiment": body}


def trials_answer(exp: Experiment, order: trial_pages.TrialOrder, *, offset: int,
                  limit: int) -> dict[str, Any]:
    """``{"trials", "pagination"}``: one page of the experiment's trials, each with its
    jobs; those in ERROR also with ``last_log_lines``, their last lines (any rank)."""

    page = trial_pages.trial_page(db(), exp.id, SearcherMetric.of(exp.config), order,
                                  offset=offset, limit=limit)
    jobs = jobs_by_trial([t.id for t in page.trials])
    trials = [with_reason_words(serialize.trial(t, jobs.get(t.id, [])), "pending_reason",
                                "pending_words") for t in page.trials]
    _add_log_tails(trials)
    return {"trials": trials, "pagination": page.pagination()}


def _add_log_tails(trials: list[dict[str, Any]]) -> None:
    """Set ``last_log_lines`` on the ERROR trials, with one query for all of them."""
    failed = {t["id"]: t for t in trials if t["state"] == State.ERROR.value}
    tails = last_log_lines(list(failed))
    for trial_id, trial in failed.items():
        trial["last_log_lines"] = [serialize.log_line(r) for r in tails.get(trial_id, [])]


def last_log_lines(trial_ids: list[int], count: int = LOG_TAIL_LINES) -> dict[int, list[TrialLog]]:
    """The last ``count`` log lines of each trial, oldest first, in one query."""
    if not trial_ids:
        return {}
    position = func.row_number().over(partition_by=TrialLog.trial_id,
                                      order_by=TrialLog.id.desc()).label("position")
    ranked = (select(TrialLog.id, position).where(TrialLog.trial_id.in_(trial_ids))
              .subquery())
    rows = db().scalars(select(TrialLog).join(ranked, ranked.c.id == TrialLog.id)
                        .where(ranked.c.position <= count).order_by(TrialLog.id))
    out: dict[int, list[TrialLog]] = defaultdict(list)
    for row in rows:
        out[row.trial_id].append(row)
    return out


@bp.get("/experiments/<int:exp_id>/trials")
def list_trials(exp_id: int) -> Any:
    """One page of the experiment's trials: ``offset`` (0), ``limit`` (100, at most 1000),
    ``sortBy`` (id, state, best_validation_metric, steps) and ``orderBy`` (asc, desc)."""
    exp = experiment_for(exp_id)
    try:
        order = trial_pages.order_from(request.args.get("sortBy"), request.args.get("orderBy"))
    except trial_pages.BadParameter as exc:
        raise Invalid("bad_request", f"query parameter {exc}") from None
    return trials_answer(exp, order, offset=int_arg("offset", 0),
                         limit=int_arg("limit", trial_pages.DEFAULT_LIMIT, lo=1,
                                       hi=trial_pages.MAX_LIMIT))
