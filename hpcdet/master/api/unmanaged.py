"""Unmanaged experiment routes (Determined's ``core_v2``; see ``experiments/unmanaged.py``).

* ``POST /experiments`` with ``"unmanaged": true``: ``{config, workspace?, project?,
  external_id?}`` (no context: the master runs nothing); 201 new, 200 found by
  ``external_id`` (the caller's own, reopened if it ended).
* ``POST /experiments/<id>/trials`` ``{hparams?, external_id?, job?}``: a trial RUNNING
  now (or the one named ``external_id``, resumed in a new run); 201 with its trial.json and
  its token, shown once. ``job``: the scheduler job the script runs in.
* ``PATCH /trials/<id>`` ``{state?}`` with the trial's token: a heartbeat, or the end the
  script reports (``COMPLETED``/``ERROR``).
"""

from __future__ import annotations

from typing import Any

from flask import current_app

from hpcdet.dispatcher import Backend
from hpcdet.errors import ValidationError
from hpcdet.master.api.access import experiment_for
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, json_body, settings
from hpcdet.master.api.trials import metric_writer, require_trial_token
from hpcdet.master.errors import Invalid
from hpcdet.master.experiments import unmanaged
from hpcdet.master.models import Trial
from hpcdet.master.reports import serialize
from hpcdet.master.scheduling.submission import parse_config
from hpcdet.master.security.authz import require_runs_as_self
from hpcdet.master.security.workspaces import placement_for


def create_unmanaged(owner: str, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """``POST /experiments`` with ``unmanaged: true`` (called by the create route)."""
    config_text = body.get("config")
    if not isinstance(config_text, str):
        raise Invalid("bad_request", "body needs 'config' (YAML text)")
    external_id = _optional_str(body, "external_id")
    workspace, project = _placement_names(body, parse_config(config_text))
    where = placement_for(db(), settings(), owner, workspace, project)
    exp, created = unmanaged.open_experiment(db(), settings(), owner=owner, text=config_text,
                                             external_id=external_id)
    if created:
        exp.workspace_id, exp.project_id = where
    db().commit()
    return {"experiment": serialize.experiment(exp, 0), "created": created}, (
        201 if created else 200)


@bp.post("/experiments/<int:exp_id>/trials")
def start_unmanaged_trial(exp_id: int) -> Any:
    """Start a run of a trial of the caller's unmanaged experiment (owner only)."""
    actor = current_user()
    exp = experiment_for(exp_id, actor=actor)
    require_runs_as_self(settings(), actor, exp.owner, f"add trials to experiment {exp_id}",
                         "run the script as yourself, in an experiment of your own")
    body = json_body()
    hparams = body.get("hparams") or {}
    if not isinstance(hparams, dict):
        raise Invalid("bad_request", "body field hparams: must be an object")
    started = unmanaged.start_run(db(), settings(), exp, actor=actor, hparams=hparams,
                                  external_id=_optional_str(body, "external_id"),
                                  job=_job_id(body))
    db().commit()
    return {"trial": serialize.trial(started.trial), "trial_info": started.info,
            "token": started.token}, 201


@bp.patch("/trials/<int:trial_id>")
def patch_unmanaged_trial(trial_id: int) -> Any:
    """A heartbeat or the reported end of an unmanaged trial's run (the trial's token)."""
    require_trial_token(metric_writer(), trial_id)
    trial = db().get_one(Trial, trial_id)
    unmanaged.report_state(db(), trial, _optional_str(json_body(), "state"))
    db().commit()
    return {"trial": serialize.trial(trial)}


def _job_id(body: dict[str, Any]) -> str | None:
    """The body's ``job``: one of this scheduler's job ids (it will be polled)."""
    job = _optional_str(body, "job")
    if job is None:
        return None
    backend: Backend = current_app.config["HPCDET_BACKEND"]
    try:
        return backend.check_job_id(job)
    except ValidationError as exc:
        raise Invalid("bad_request", f"body field job: {exc}") from None


def _optional_str(body: dict[str, Any], field: str) -> str | None:
    value = body.get(field)
    if value is not None and not isinstance(value, str):
        raise Invalid("bad_request", f"body field {field}: must be a string")
    return value


def _placement_names(body: dict[str, Any], config: dict[str, Any]) -> tuple[Any, Any]:
    """The workspace and project named in the body, else in the config (core_v2's)."""
    return (body.get("workspace") or config.get("workspace"),
            body.get("project") or config.get("project"))
