"""Fork an experiment, fork a trial, or continue a trial, from the pages (as Determined's
WebUI offers): a page with the config in an editable textarea, submitted by
``static/records.js`` to the existing API as the signed-in user with the page's CSRF token.

- ``/experiments/<id>/fork``: the experiment's config (storage secrets masked, the null
  fields of the effective config left out: they mean "the default"); submitting creates a
  new experiment with the same model definition (``POST /api/v1/experiments/<id>/fork``).
- ``/trials/<id>/fork``: the same with the trial's hyperparameters as constants and the
  ``single`` searcher (``det experiment fork --trial``); it trains from scratch.
- ``/trials/<id>/continue``: for the trial of an ended single-trial experiment, YAML
  overrides (e.g. a longer ``searcher.max_length``); the trial resumes from its latest
  checkpoint (``POST /api/v1/experiments/<id>/continue``, ``det experiment continue``).

The master validates the YAML; its errors are shown beside the textarea and nothing is
created. The master keeps model definitions only per experiment, so there is no "New
experiment" page: forking is how an experiment is created from the pages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from flask import render_template, url_for

from hpcdet.expconf import single_trial_config, without_nulls
from hpcdet.master.api.common import db, settings
from hpcdet.master.models import Experiment, Trial
from hpcdet.master.security import authz
from hpcdet.master.security.shown_config import owner_view, shown_config
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.identity import page_sees, page_user
from hpcdet.states import State


def trial_actions(trial: Trial, exp: Experiment) -> dict[str, str | None]:
    """The trial page's links: fork this trial (anyone who sees it), and continue it (its
    experiment's owner, when the master would accept the continue)."""
    return {"fork": url_for("web.fork_trial_page", trial_id=trial.id),
            "continue": (url_for("web.continue_trial_page", trial_id=trial.id)
                         if continuable(exp) and may_continue(exp)
                         else None)}


def may_continue(exp: Experiment) -> bool:
    """Whether the page's user may continue ``exp``: its owner alone, since its trial runs as
    the owner (:func:`authz.require_runs_as_self`, which the API applies)."""
    return authz.runs_as_self(settings(), page_user(), exp.owner)


def continuable(exp: Experiment) -> bool:
    """Whether ``POST .../continue`` would take it: an ended, unarchived single-trial
    experiment (the master checks again, and says why not)."""
    return (State(exp.state).is_terminal and not exp.archived
            and exp.searcher_name == "single")


def config_text(config: Mapping[str, Any], owner: str) -> str:
    """``config`` (of ``owner``'s experiment) as YAML for the textarea: secrets masked as
    for the page's user (security/shown_config.py), null fields left out."""
    shown = shown_config(config, to_owner=owner_view(settings(), page_user(), owner))
    return yaml.safe_dump(without_nulls(shown), sort_keys=False,
                          allow_unicode=True)





def _seen_trial(trial_id: int) -> tuple[Trial, Experiment] | None:
    found = db().get(Trial, trial_id)
    exp = None if found is None else db().get(Experiment, found.experiment_id)
    if found is None or exp is None or not page_sees(exp.owner, exp.workspace_id):
        return None
    return found, exp


def _page(status: int = 200, **values: Any) -> tuple[str, int]:
    return render_template("config_form.html", page="experiments", **values), status


@bp.get("/experiments/<int:exp_id>/fork")
def fork_experiment_page(exp_id: int) -> tuple[str, int]:
    """The fork form of an experiment."""
    exp = db().get(Experiment, exp_id)
    if exp is None or not page_sees(exp.owner, exp.workspace_id):
        return _page(404, error=f"experiment {exp_id} not found", title=f"Fork experiment "
                     f"{exp_id}")
    return _form(exp, "fork", config_text(exp.config, exp.owner),
                 title=f"Fork experiment {exp.id}: {exp.name}")


@bp.get("/trials/<int:trial_id>/fork")
def fork_trial_page(trial_id: int) -> tuple[str, int]:
    """The fork form of a trial: its hyperparameters as constants, searcher single."""
    seen = _seen_trial(trial_id)
    if seen is None:
        return _page(404, error=f"trial {trial_id} not found", title=f"Fork trial {trial_id}")
    trial, exp = seen
    config = single_trial_config(exp.config, trial.hparams or {})
    return _form(exp, "fork-trial", config_text(config, exp.owner), trial=trial,
                 title=f"Fork trial {trial.id} of experiment {exp.id}: {exp.name}")


@bp.get("/trials/<int:trial_id>/continue")
def continue_trial_page(trial_id: int) -> tuple[str, int]:
    """The continue form: YAML overrides for the ended single-trial experiment's trial."""
    seen = _seen_trial(trial_id)
    if seen is None:
        return _page(404, error=f"trial {trial_id} not found",
                     title=f"Continue trial {trial_id}")
    trial, exp = seen
    title = f"Continue trial {trial.id} of experiment {exp.id}: {exp.name}"
    if not continuable(exp) or not may_continue(exp):
        return _page(409, error=continue_refusal(exp), title=title, exp=exp, trial=trial,
                     back=url_for("web.trial", trial_id=trial.id))
    return _form(exp, "continue", continue_overrides(exp.config), trial=trial, title=title)


def _form(exp: Experiment, mode: str, config: str, *, title: str,
          trial: Trial | None = None) -> tuple[str, int]:
    """The form of ``mode`` (fork, fork-trial, continue) holding ``config``; it goes back
    to the trial's page when there is one, else to the experiment's."""
    submit = "api.continue_experiment" if mode == "continue" else "api.fork_experiment"
    back = (url_for("web.experiment", exp_id=exp.id) if trial is None
            else url_for("web.trial", trial_id=trial.id))
    values: dict[str, Any] = {} if trial is None else {"trial": trial}
    return _page(title=title, exp=exp, mode=mode, config=config, **values,
                 submit_url=url_for(submit, exp_id=exp.id), back=back)


def continue_refusal(exp: Experiment) -> str:
    """Why this trial cannot be continued from the page, and what to do instead."""
    if exp.searcher_name != "single":
        return (f"experiment {exp.id} uses the {exp.searcher_name} searcher: only the trial "
                "of a single-trial experiment can be continued; fork the trial instead")
    if not State(exp.state).is_terminal:
        return f"experiment {exp.id} is {exp.state}: only an ended experiment can be continued"
    if exp.archived:
        return f"experiment {exp.id} is archived: unarchive it first"
    return (f"only its owner {exp.owner} may continue experiment {exp.id}: its trial runs as "
            f"{exp.owner}; fork the trial to run it as yourself")


def continue_overrides(config: Mapping[str, Any]) -> str:
    """The textarea's start: the searcher's length, to be raised (other keys may be added)."""
    length = (config.get("searcher") or {}).get("max_length")
    doc = {"searcher": {"max_length": length}} if length is not None else {}
    head = ("# Overrides merged into the experiment's config; the trial resumes from its\n"
            "# latest checkpoint. Raise max_length to train longer.\n")
    return head + (yaml.safe_dump(doc, sort_keys=False) if doc else "")
