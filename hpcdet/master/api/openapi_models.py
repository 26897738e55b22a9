"""The model registry's part of the OpenAPI description (routes in
:mod:`hpcdet.master.api.models`); merged into :mod:`hpcdet.master.api.openapi_schemas`."""

from __future__ import annotations

from typing import Any

from hpcdet.master.api.openapi_schemas import (
    _PAGE,
    ANY_OBJ,
    BOOL,
    INT,
    OPT_INT,
    OPT_STR,
    STR,
    TIME,
    Schema,
    array,
    nullable,
    obj,
    query,
    ref,
)

_LABELS = array(STR)
MODEL_COMPONENTS: dict[str, Schema] = {
    "Model": obj({"id": INT, "name": STR, "description": STR, "metadata": ANY_OBJ,
                  "labels": _LABELS, "notes": STR, "owner": STR, "workspace_id": OPT_INT,
                  "workspace": OPT_STR, "archived": BOOL, "created_at": TIME,
                  "updated_at": TIME, "num_versions": INT}),
    "ModelVersion": obj({"id": INT, "model_id": INT, "model_name": STR, "version": INT,
                         "checkpoint_uuid": STR, "name": STR, "comment": STR, "notes": STR,
                         "metadata": ANY_OBJ, "labels": _LABELS, "owner": STR,
                         "created_at": TIME, "updated_at": TIME,
                         "checkpoint": nullable(ref("Checkpoint"))}),
}

_MODEL = obj({"model": ref("Model")})
_VERSION = obj({"model_version": ref("ModelVersion")})
_MODEL_404 = "No such model (by name or id), or the caller may not see it"
_VERSION_404 = _MODEL_404 + "; or the model has no such version"
_VIEWER = "The caller may read the model but not change it (a viewer of its workspace)"
_META = {"metadata": nullable(ANY_OBJ), "labels": nullable(_LABELS), "notes": nullable(STR)}
_ORDER = query("order_by", {"type": "string", "enum": ["asc", "desc"]})
_M = "/api/v1/models/<identifier>"
_V = _M + "/versions/<int:number>"
_PATCH_BAD = "An unknown field, or a field of the wrong type (metadata must be an object)"

MODEL_OPERATIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("GET", "/api/v1/models"): {
        "summary": "The registered models the caller may see, filtered and sorted",
        "query": [query("name", STR), query("description", STR), query("label", STR),
                  query("owner", STR), query("workspace", STR, "Comma-separated names"),
                  query("archived", BOOL),
                  query("sort_by", {"type": "string", "enum": [
                      "id", "name", "description", "creation_time", "last_updated_time",
                      "num_versions", "workspace"]}), _ORDER, *_PAGE],
        "answers": {200: obj({"models": array(ref("Model")), "pagination": ANY_OBJ}),
                    400: "A bad query parameter"}},
    ("POST", "/api/v1/models"): {
        "summary": "Create a model (names are unique on the cluster)",
        "body": obj({"name": STR}, {"description": nullable(STR), "workspace": OPT_STR,
                                    **_META}),
        "answers": {201: _MODEL, 400: "A bad name or field",
                    403: "The caller is a viewer of the workspace",
                    404: "No such workspace, or the caller is not a member",
                    409: "A model of that name exists"}},
    ("GET", _M): {"summary": "One model, by name or id",
                  "answers": {200: _MODEL, 404: _MODEL_404}},
    ("PATCH", _M): {
        "summary": "Change a model's name, description, notes, labels, metadata (merged; "
                   "null removes a key) or workspace",
        "body": obj({}, {"name": STR, "description": STR, "workspace": OPT_STR, **_META}),
        "answers": {200: _MODEL, 400: _PATCH_BAD, 403: _VIEWER, 404: _MODEL_404,
                    409: "A model of the new name exists"}},
    ("POST", _M + "/move"): {
        "summary": "Move a model to a workspace (null: its owner's alone)",
        "body": obj({"workspace": OPT_STR}),
        "answers": {200: _MODEL, 400: "A bad body", 403: _VIEWER + "; or of the workspace",
                    404: _MODEL_404 + "; or no such workspace the caller belongs to"}},
    ("DELETE", _M): {"summary": "Delete a model and its versions (the checkpoints stay)",
                     "answers": {200: ANY_OBJ, 403: _VIEWER, 404: _MODEL_404}},
    ("POST", _M + "/archive"): {"summary": "Archive a model (no new versions)",
                                "answers": {200: _MODEL, 403: _VIEWER, 404: _MODEL_404}},
    ("POST", _M + "/unarchive"): {"summary": "Unarchive a model",
                                  "answers": {200: _MODEL, 403: _VIEWER, 404: _MODEL_404}},
    ("GET", _M + "/versions"): {
        "summary": "The model and its versions, by number",
        "query": [_ORDER],
        "answers": {200: obj({"model": ref("Model"),
                              "model_versions": array(ref("ModelVersion"))}),
                    404: _MODEL_404}},
    ("POST", _M + "/versions"): {
        "summary": "Register a checkpoint as the model's next version (pinned against GC)",
        "body": obj({"checkpoint_uuid": STR}, {"name": nullable(STR),
                                               "comment": nullable(STR), **_META}),
        "answers": {201: _VERSION, 400: "A bad field", 403: _VIEWER,
                    404: _MODEL_404 + "; or no such checkpoint the caller may see",
                    409: "The model is archived, or the checkpoint was deleted"}},
    ("GET", _V): {"summary": "One version of a model",
                  "answers": {200: _VERSION, 404: _VERSION_404}},
    ("PATCH", _V): {
        "summary": "Change a version's name, comment, notes, labels or metadata (merged)",
        "body": obj({}, {"name": STR, "comment": STR, **_META}),
        "answers": {200: _VERSION, 400: _PATCH_BAD, 403: _VIEWER, 404: _VERSION_404}},
    ("DELETE", _V): {"summary": "Delete a version (its checkpoint is no longer pinned by it)",
                     "answers": {200: ANY_OBJ, 403: _VIEWER, 404: _VERSION_404}},
}
