"""Routes that change or derive from an existing experiment: set, label, move, delete,
continue, fork, the GC-policy preview and the stored model definition.

``PATCH`` and ``DELETE /experiments/<id>`` are served by the one rule of
:func:`hpcdet.master.api.experiments.describe_experiment` (one rule per path keeps an id
too large for the database a 404 for every method, not a 405).

Changing needs the CHANGE access of :mod:`hpcdet.master.security.authz` (404 for an
experiment the caller cannot see, 403 for one they may only read); fork and the model
definition need only READ. Continue is the owner's alone (:func:`authz.require_runs_as_self`:
its trial runs as the owner with the caller's overrides); anyone else forks.
"""

from __future__ import annotations

import base64
from typing import Any

import yaml
from flask import Response, current_app, request
from sqlalchemy import func, select

from hpcdet.master.api.access import CHANGE, experiment_for
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.checkpoints import storage_dir
from hpcdet.master.api.common import db, json_body, settings
from hpcdet.master.errors import Invalid
from hpcdet.master.experiments import continuing, deleting, editing, gc_policy
from hpcdet.master.models import Experiment, Trial
from hpcdet.master.reports import serialize
from hpcdet.master.scheduling.submission import accept, parse_config
from hpcdet.master.security import authz
from hpcdet.master.security.shown_config import masked_variables, owner_view
from hpcdet.master.security.workspaces import placement_for
from hpcdet.storage import masked_fields, unmask_from


def _answer(exp: Experiment, **extra: Any) -> dict[str, Any]:
    trials = db().scalar(select(func.count()).where(Trial.experiment_id == exp.id)) or 0
    return {"experiment": serialize.experiment(exp, trials), **extra}


def patch_experiment(exp_id: int) -> Any:
    """Set name, description, labels, max_slots, weight, priority or gc_policy.

    A new ``gc_policy`` is committed, then checkpoint garbage collection runs with it at once
    (``gc``: the uuids deleted, and those that could not be).
    """
    edit = editing.parse_edit(json_body())
    exp = experiment_for(exp_id, CHANGE)
    notes = editing.apply_edit(exp, edit)
    db().commit()
    gc: dict[str, list[str]] | None = None
    if edit.gc_policy is not None:
        deleted, failed = gc_policy.collect_now(current_app.config["HPCDET_SESSION_FACTORY"],
                                                settings(), exp_id)
        gc = {"deleted": deleted, "failed": failed}
        db().expire_all()
    return _answer(exp, notes=notes, gc=gc)


@bp.get("/experiments/<int:exp_id>/preview-gc")
def preview_gc(exp_id: int) -> Any:
    """The checkpoints a GC policy (query: save_experiment_best, save_trial_best,
    save_trial_latest; a missing one: the experiment's own) would delete now; nothing is
    changed."""
    exp = experiment_for(exp_id)
    current = gc_policy.current_policy(exp)
    try:
        values = {key: int(request.args[key]) if request.args.get(key) else current[key]
                  for key in editing.GC_KEYS}
    except ValueError:
        raise editing.bad("gc_policy", "each save_* query parameter must be an integer") \
            from None
    policy = editing.gc_policy_value(values)
    searcher = exp.config.get("searcher") or {}
    doomed = gc_policy.preview(db(), exp, policy)
    return {"checkpoints": [serialize.checkpoint_detail(c, exp.id, storage_dir(exp.config),
                                                        searcher) for c in doomed],
            "searcher_metric": searcher.get("metric"), "policy": policy}


@bp.post("/experiments/<int:exp_id>/labels/<any(add, remove):action>")
def change_label(exp_id: int, action: str) -> Any:
    """Add or remove one label (``{"label": L}``); adding one it has changes nothing."""
    label = editing.label_value(json_body().get("label"))
    exp = experiment_for(exp_id, CHANGE)
    changed = editing.change_labels(exp, label, add=action == "add")
    db().commit()
    return _answer(exp, changed=changed)


@bp.post("/experiments/<int:exp_id>/move")
def move_experiment(exp_id: int) -> Any:
    """Move into ``workspace`` (and ``project``); both null: out of any workspace."""
    body = json_body()
    actor = current_user()
    exp = experiment_for(exp_id, CHANGE, actor)
    editing.move(db(), settings(), exp, actor, body.get("workspace"), body.get("project"))
    db().commit()
    return _answer(exp)


def delete_experiment(exp_id: int) -> Any:
    """Delete an ended experiment with its checkpoint files (experiments/deleting.py)."""
    exp = experiment_for(exp_id, CHANGE)
    result = deleting.delete_experiment(db(), settings(), exp,
                                        files=current_app.config["HPCDET_BACKEND"].transport)
    db().commit()
    return {"deleted": exp_id, "checkpoints_deleted": len(result.checkpoints),
            "left_behind": result.left_behind}


def _override_doc(body: dict[str, Any]) -> dict[str, Any]:
    """``config``: YAML text (or an object) of overrides; missing or empty: none."""
    raw = body.get("config")
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise Invalid("bad_request", "config: must be YAML text or an object")
    return parse_config(raw)


@bp.post("/experiments/<int:exp_id>/continue")
def continue_experiment(exp_id: int) -> Any:
    """Reopen an ended single-trial experiment; its trial resumes from its latest checkpoint.

    Only its owner may (403 for anyone else who sees it): the trial runs as the owner."""
    override = _override_doc(json_body())
    actor = current_user()
    exp = experiment_for(exp_id, actor=actor)
    authz.require_runs_as_self(settings(), actor, exp.owner, f"continue experiment {exp_id}",
                               "fork it to run it as yourself (det experiment fork "
                               f"{exp_id})")
    trial = continuing.continue_experiment(db(), settings(), exp, override, actor)
    db().commit()
    return _answer(exp, trial_id=trial.id, latest_checkpoint=trial.latest_checkpoint)


@bp.post("/experiments/<int:exp_id>/fork")
def fork_experiment(exp_id: int) -> Any:
    """A new experiment from ``config`` (YAML text, the whole config) and the source's model
    definition, placed like a new one (``workspace``, ``project``)."""
    body = json_body()
    config_text = body.get("config")
    if not isinstance(config_text, str) or not config_text.strip():
        raise Invalid("bad_request", "config: the forked experiment's whole config "
                      "(YAML text) is needed")
    actor = current_user()
    source = experiment_for(exp_id, actor=actor)
    config_text = _with_source_secrets(config_text, source, actor)
    where = placement_for(db(), settings(), actor, body.get("workspace"), body.get("project"))
    context = base64.b64encode(_model_def(exp_id)).decode("ascii")
    result = accept(db(), settings(), current_app.config["HPCDET_BACKEND"],
                    config_text=config_text, context_b64=context, owner=actor, dry_run=False)
    forked = result.experiment
    assert forked is not None  # only a dry run stores nothing, and this is none
    forked.workspace_id, forked.project_id = where
    forked.parent_id = source.id
    db().commit()
    return _answer(forked, warnings=result.warnings), 201


def _with_source_secrets(config_text: str, source: Experiment, actor: str) -> str:
    """The fork's config with the secrets the API masked (``********``: storage secrets;
    for readers other than the owner, environment variable values and the S3 access key)
    taken from the source, for its owner only: anyone else's fork runs as them, and its
    trials would read the owner's secrets; they must give their own."""
    config = parse_config(config_text)
    hidden = [f"checkpoint_storage.{f}" for f in masked_fields(config)] + [
        f"environment.environment_variables {name}" for name in masked_variables(config)]
    if not hidden:
        return config_text
    if not owner_view(settings(), actor, source.owner):
        raise Invalid("bad_request", f"{', '.join(hidden)}: the source's value is "
                      f"masked and only its owner ({source.owner}) may copy it into a fork; "
                      "give your own in --config-file")
    left = [f"checkpoint_storage.{f}" for f in unmask_from(config, source.config)] + [
        f"environment.environment_variables {name}" for name in masked_variables(config)]
    if left:
        raise Invalid("bad_request", f"{', '.join(left)}: masked (********) and not "
                      "the source's to copy back; give the value")
    return yaml.safe_dump(config, sort_keys=False)


def _model_def(exp_id: int) -> bytes:
    data = db().scalar(select(Experiment.context).where(Experiment.id == exp_id))
    return bytes(data or b"")


@bp.get("/experiments/<int:exp_id>/model-def")
def download_model_def(exp_id: int) -> Any:
    """The model definition (context) stored at creation, as the .tar.gz the CLI sent."""
    experiment_for(exp_id)
    response = Response(_model_def(exp_id), mimetype="application/gzip")
    response.headers["Content-Disposition"] = \
        f'attachment; filename="experiment_{exp_id}_model_def.tgz"'
    return response

