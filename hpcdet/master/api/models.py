"""Model registry routes (Determined's ``/api/v1/models``): models and their versions.

A model is named in the path by its name or its id (names are never only digits). The
rules and the JSON shapes are in :mod:`hpcdet.master.registry.service` and
docs/model-registry.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import request

from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, int_arg, json_body, settings
from hpcdet.master.errors import Invalid
from hpcdet.master.models import RegisteredModel
from hpcdet.master.registry import service
from hpcdet.master.registry.service import Caller, ModelQuery
from hpcdet.master.security.authz import Access

MAX_LIMIT = 1000
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def _caller() -> Caller:
    return Caller(db(), settings(), current_user())


@bp.get("/models")
def list_models() -> Any:
    """The models the caller sees. Query: ``name``, ``description`` (substrings, any case),
    ``label``, ``owner``, ``workspace`` (comma-separated names), ``archived`` (true/false;
    absent: both), ``sort_by`` (id, name, description, creation_time, last_updated_time,
    num_versions, workspace), ``order_by`` (asc/desc), ``offset``, ``limit``."""
    query = _model_query()
    offset, limit = int_arg("offset", 0), int_arg("limit", MAX_LIMIT, lo=1, hi=MAX_LIMIT)
    models = service.list_models(_caller(), query)
    return {"models": models[offset:offset + limit],
            "pagination": {"offset": offset, "limit": limit, "total": len(models)}}


def _model_query() -> ModelQuery:
    args = request.args
    sort_by = args.get("sort_by") or "id"
    if sort_by not in service.SORT_KEYS:
        raise Invalid("bad_request", f"query parameter sort_by: must be one of "
                      f"{', '.join(service.SORT_KEYS)}, got {sort_by!r}")
    workspaces = tuple(w for w in (args.get("workspace") or "").split(",") if w)
    return ModelQuery(name=args.get("name") or None, description=args.get("description") or None,
                      label=args.get("label") or None, owner=args.get("owner") or None,
                      workspaces=workspaces, archived=_bool_arg("archived"), sort_by=sort_by,
                      descending=_descending())


def _bool_arg(name: str) -> bool | None:
    raw = (request.args.get(name) or "").strip().lower()
    if not raw:
        return None
    if raw in _TRUE or raw in _FALSE:
        return raw in _TRUE
    raise Invalid("bad_request", f"query parameter {name}: must be true or false")


def _descending() -> bool:
    order = (request.args.get("order_by") or "asc").lower()
    if order not in ("asc", "desc"):
        raise Invalid("bad_request", "query parameter order_by: must be asc or desc")
    return order == "desc"


@bp.post("/models")
def create_model() -> Any:
    """A new model: ``name`` (unique on the cluster), ``description``, ``metadata`` (a JSON
    object), ``labels``, ``notes``, ``workspace`` (a name; editor role there)."""
    caller = _caller()
    model = service.create_model(caller, json_body())
    return {"model": service.model_json(db(), model)}, 201


@bp.get("/models/<identifier>")
def get_model(identifier: str) -> Any:
    """One model by name or id."""
    return {"model": service.model_json(db(), service.find_model(_caller(), identifier))}


@bp.patch("/models/<identifier>")
def patch_model(identifier: str) -> Any:
    """Change name, description, notes, labels, metadata (merged) or workspace."""
    body = json_body()
    return _changed(identifier, lambda caller, model: service.patch_model(caller, model, body))


@bp.post("/models/<identifier>/archive")
def archive_model(identifier: str) -> Any:
    """Archive: hidden from ``archived=false`` listings; no new versions."""
    return _set_archived(identifier, True)


@bp.post("/models/<identifier>/unarchive")
def unarchive_model(identifier: str) -> Any:
    return _set_archived(identifier, False)


def _set_archived(identifier: str, archived: bool) -> Any:
    return _changed(identifier,
                    lambda caller, model: service.set_archived(caller, model, archived))


def _changed(identifier: str, change: Callable[[Caller, RegisteredModel], None]) -> Any:
    """``change`` the model, which the caller must be allowed to change; answer it changed."""
    caller = _caller()
    model = service.find_model(caller, identifier, Access.CHANGE)
    change(caller, model)
    return {"model": service.model_json(db(), model)}


@bp.post("/models/<identifier>/move")
def move_model(identifier: str) -> Any:
    """Move the model to ``workspace`` (a name: editor role there; null: the owner's alone),
    as Determined's ``POST /models/{name}/move``."""
    body = json_body()

    def move(caller: Caller, model: RegisteredModel) -> None:
        if set(body) != {"workspace"}:  # checked once the caller may see the model
            raise Invalid("bad_request", "the body is {\"workspace\": NAME or null}")
        service.patch_model(caller, model, body)

    return _changed(identifier, move)


@bp.delete("/models/<identifier>")
def delete_model(identifier: str) -> Any:
    """Delete the model and its versions; the checkpoints stay (no longer pinned)."""
    caller = _caller()
    service.delete_model(caller, service.find_model(caller, identifier, Access.CHANGE))
    return {}


@bp.get("/models/<identifier>/versions")
def list_versions(identifier: str) -> Any:
    """The model and its versions by number (``order_by=desc``: newest first)."""
    caller = _caller()
    model = service.find_model(caller, identifier)
    versions = service.list_versions(caller, model, descending=_descending())
    return {"model": service.model_json(db(), model),
            "model_versions": service.versions_json(db(), model, versions)}


@bp.post("/models/<identifier>/versions")
def register_version(identifier: str) -> Any:
    """Register ``checkpoint_uuid`` as the model's next version (``name``, ``comment``,
    ``notes``, ``metadata``, ``labels`` optional); the checkpoint is pinned against GC."""
    caller = _caller()
    body = json_body()
    model = service.find_model(caller, identifier, Access.CHANGE)
    version = service.register_version(caller, model, body)
    return {"model_version": service.versions_json(db(), model, [version])[0]}, 201


@bp.get("/models/<identifier>/versions/<int:number>")
def get_version(identifier: str, number: int) -> Any:
    caller = _caller()
    model = service.find_model(caller, identifier)
    version = service.find_version(caller, model, number)
    return {"model_version": service.versions_json(db(), model, [version])[0]}


@bp.patch("/models/<identifier>/versions/<int:number>")
def patch_version(identifier: str, number: int) -> Any:
    """Change a version's name, comment, notes, labels or metadata (merged)."""
    caller = _caller()
    body = json_body()
    model = service.find_model(caller, identifier, Access.CHANGE)
    version = service.find_version(caller, model, number)
    service.patch_version(caller, model, version, body)
    return {"model_version": service.versions_json(db(), model, [version])[0]}


@bp.delete("/models/<identifier>/versions/<int:number>")
def delete_version(identifier: str, number: int) -> Any:
    caller = _caller()
    model = service.find_model(caller, identifier, Access.CHANGE)
    service.delete_version(caller, model, service.find_version(caller, model, number))
    return {}
