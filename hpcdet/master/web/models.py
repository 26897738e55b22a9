"""``/models`` and ``/models/<name>``: the model registry's pages.

``/models`` lists the models the browser's user sees and has a form to create one;
``/models?checkpoint=UUID`` (linked from a trial page's checkpoints) adds a form that
registers that checkpoint as the next version of a model. ``/models/<name>`` shows one model
with its versions (download link, Python that loads it) and, for whoever may change the
model, forms to edit its description, labels and metadata and to register another version
(:mod:`hpcdet.master.web.model_versions`: the checkpoint picker). The forms post to the JSON
API through ``static/models.js`` with the page's CSRF token (``hpcdet.js``), as the other
page actions do.
"""

from __future__ import annotations

import json
from typing import Any

from flask import render_template, request

from hpcdet.master.api.common import db, settings
from hpcdet.master.errors import DomainError
from hpcdet.master.registry import service
from hpcdet.master.registry.service import Caller, ModelQuery
from hpcdet.master.security.authz import Access
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.formatting import number_text, time_text
from hpcdet.master.web.identity import page_user
from hpcdet.master.web.model_versions import checkpoint_choices, load_snippet


def _caller() -> Caller:
    return Caller(db(), settings(), page_user())


@bp.get("/models")
def models() -> tuple[str, int]:
    """Every model the user sees, newest change first; a register form for ``?checkpoint=``."""
    caller = _caller()
    rows = service.list_models(caller, ModelQuery(sort_by="last_updated_time",
                                                  descending=True))
    uuid = (request.args.get("checkpoint") or "").strip()
    checkpoint, error, status = None, None, 200
    if uuid:
        try:
            found = service.visible_checkpoint(caller, uuid)
        except DomainError as exc:
            error, status = exc.message, 404
        else:
            checkpoint = {"uuid": found.uuid, "steps_completed": found.steps_completed,
                          "trial_id": found.trial_id, "state": found.state,
                          "validation_metrics": found.validation_metrics or {}}
    return render_template("models.html", page="models", models=rows, checkpoint=checkpoint,
                           error=error, choices=[m["name"] for m in rows if not m["archived"]],
                           **_helpers()), status


@bp.get("/models/<identifier>")
def model(identifier: str) -> tuple[str, int]:
    """One model with its versions (each with a download link and Python that loads it);
    for whoever may change it, forms to edit it and to register a version, picked from
    ``?experiment=N``'s or ``?trial=N``'s checkpoints. An unknown or unseen model is a 404
    page; a bad picker query a 400 (404: an unseen experiment or trial) above the forms."""
    caller = _caller()
    try:
        found = service.find_model(caller, identifier)
    except DomainError as exc:
        return render_template("model.html", page="models", model=None, name=identifier,
                               error=exc.message, **_helpers()), 404
    versions = service.versions_json(db(), found, service.list_versions(caller, found,
                                                                        descending=True))
    picker = checkpoint_choices(request.args)
    return render_template("model.html", page="models", model=service.model_json(db(), found),
                           versions=versions, error=None, name=identifier, picker=picker,
                           can_change=_may_change(caller, identifier),
                           **_helpers()), picker.status


def _may_change(caller: Caller, identifier: str) -> bool:
    """Whether the API would let the page's user change the model (owner, editor, admin)."""
    try:
        service.find_model(caller, identifier, Access.CHANGE)
    except DomainError:
        return False
    return True


def _helpers() -> dict[str, Any]:
    return {"time_text": time_text, "metrics_text": _metrics_text, "load_snippet": load_snippet,
            "metadata_lines": metadata_lines, "value_text": value_text}


def _metrics_text(metrics: dict[str, Any] | None) -> str:
    return ", ".join(f"{k} {number_text(v)}" for k, v in sorted((metrics or {}).items()))


def value_text(value: Any) -> str:
    """A metadata value as the page shows it: text as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def metadata_lines(metadata: dict[str, Any] | None) -> str:
    """The edit form's metadata: ``key = value`` per line, as static/models.js reads it back
    (a value that reads as JSON is JSON): a text that would read as something else
    (``"0.97"``, one with a line break or edge spaces) is written as a JSON string."""
    return "\n".join(f"{key} = {_line_value(value)}"
                     for key, value in sorted((metadata or {}).items()))


def _line_value(value: Any) -> str:
    if isinstance(value, str) and value == value.strip() and "\n" not in value:
        try:
            json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, sort_keys=True)
