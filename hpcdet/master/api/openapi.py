"""``GET /api/v1/openapi.json``: an OpenAPI 3 description of every ``/api/v1`` route.

Built from the app's URL map and the declarations in :mod:`hpcdet.master.api.openapi_schemas`
(request bodies, answers, query parameters); every operation also answers the common error
shape (``default``), and a route that needs a caller 401 in it.
:func:`undescribed_routes` lists the routes without a declaration.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from flask import Flask, current_app

from hpcdet import __version__
from hpcdet.master.api import (
    openapi_admin,
    openapi_cli_tree,
    openapi_models,
    openapi_schemas,
    openapi_unmanaged,
)
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.openapi_schemas import Schema, ref

# The whole description: the core's declarations, then each area's own module (they use
# openapi_schemas' helpers, so they are gathered here, not there).
COMPONENTS: dict[str, Schema] = {
    **openapi_schemas.COMPONENTS, **openapi_models.MODEL_COMPONENTS,
    **openapi_admin.ADMIN_COMPONENTS,
}
OPERATIONS: dict[tuple[str, str], dict[str, Any]] = {
    **openapi_schemas.OPERATIONS, **openapi_cli_tree.CLI_TREE_OPERATIONS,
    **openapi_models.MODEL_OPERATIONS,
    **openapi_admin.ADMIN_OPERATIONS, **openapi_unmanaged.UNMANAGED_OPERATIONS,
}

API_PREFIX = "/api/v1"
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# <name>, <int:name>, <any(a, b):name>
_CONVERTER = re.compile(r"<(?:(?P<conv>[a-z]+)(?:\((?P<args>[^)]*)\))?:)?(?P<name>\w+)>")
_CONVERTER_SCHEMAS: dict[str, Schema] = {
    "int": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
    "string": {"type": "string", "minLength": 1, "pattern": "^[^/]+$"},
    "path": {"type": "string", "minLength": 1},
}
# gunicorn refuses a request line over 4094 bytes itself, before the API sees it.
_TOO_LONG = {"description": "The request line is too long (over 4094 bytes); answered by the "
                            "HTTP server, not the API, as a short HTML page",
             "content": {"text/html": {"schema": {"type": "string"}}}}
# A user route takes any one of the user schemes; which counts depends on auth.mode, and
# an open master without auth.require_user also takes a caller who names nobody ({}).
_SECURITY = {"user": [{"userToken": []}, {"webSession": []}, {"userHeader": []}, {}],
             "trial": [{"trialToken": []}], "allocation": [{"allocationToken": []}],
             "none": [{}]}
_UNAUTHORIZED = {
    "user": "No proven caller: auth.mode munge without a valid session or API token (or web "
            "session cookie): login_required, token_expired, token_revoked, unauthorized; "
            "auth.mode open with auth.require_user and no X-Hpcdet-User",
    "trial": "No valid token of this trial",
    "allocation": "No valid token of this allocation"}
_SECURITY_SCHEMES = {
    "userToken": {
        "type": "http", "scheme": "bearer",
        "description": "A user, with auth.mode: munge (the default): `Authorization: Bearer` "
                       "with a session token from POST /auth/login (a MUNGE credential; "
                       "`det user login`, which det does by itself) or an API token from "
                       "POST /auth/tokens. Ignored by an open master."},
    "webSession": {
        "type": "apiKey", "in": "cookie", "name": "hpcdet_session",
        "description": "A user of the web pages, with auth.mode: munge: the session cookie "
                       "set by following a one-time link (POST /auth/web_link). A request "
                       "that changes something must also carry the page's X-CSRF-Token "
                       "header (or csrf_token form field), else 403 csrf."},
    "userHeader": {
        "type": "apiKey", "in": "header", "name": "X-Hpcdet-User",
        "description": "A user, with auth.mode: open: the caller names itself (det -u/--user, "
                       "else the login name); anyone may claim any name. Without it the "
                       "caller is anonymous, or 401 with auth.require_user. Ignored with "
                       "auth.mode: munge."},
    "trialToken": {
        "type": "http", "scheme": "bearer",
        "description": "A trial's harness (the trial-token routes only): `Authorization: "
                       "Bearer` with the trial's own token, the job directory's .token "
                       "(written at each submission; the master keeps only its sha256)."},
    "allocationToken": {
        "type": "http", "scheme": "bearer",
        "description": "An allocation's agent (allocation mode, docs/allocation-mode.md): "
                       "`Authorization: Bearer` with the allocation's own token, its job "
                       "directory's .token (the master keeps only its sha256)."},
}


@bp.get("/openapi.json")
def openapi_description() -> Any:
    """This API's OpenAPI 3 description (generated from the routes and their declarations)."""
    return build_openapi(current_app)


def api_routes(app: Flask) -> Iterator[tuple[str, str]]:
    """Every ``(METHOD, flask rule)`` under ``/api/v1``."""
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith(API_PREFIX + "/"):
            for method in sorted(rule.methods or ()):
                if method in _METHODS:
                    yield method, rule.rule


def declared_rule(rule: str) -> str:
    """``rule`` as :data:`OPERATIONS` names it: converter arguments left out
    (``<any(pause, kill):action>`` is ``<any:action>``)."""
    return _CONVERTER.sub(lambda m: "<" + (f"{m.group('conv')}:" if m.group("conv") else "")
                          + m.group("name") + ">", rule)


def undescribed_routes(app: Flask) -> list[str]:
    """``"METHOD rule"`` of each API route :data:`OPERATIONS` does not declare."""
    return sorted(f"{m} {declared_rule(r)}" for m, r in api_routes(app)
                  if (m, declared_rule(r)) not in OPERATIONS)


def stale_declarations(app: Flask) -> list[str]:
    """``"METHOD rule"`` of each declaration in :data:`OPERATIONS` no route has."""
    routes = {(m, declared_rule(r)) for m, r in api_routes(app)}
    return sorted(f"{m} {r}" for m, r in OPERATIONS if (m, r) not in routes)


def build_openapi(app: Flask) -> dict[str, Any]:
    """The OpenAPI 3.0 document for ``app``'s API routes (undeclared ones are left out)."""
    paths: dict[str, dict[str, Any]] = {}
    for method, rule in sorted(api_routes(app), key=lambda mr: (mr[1], mr[0])):
        declared = OPERATIONS.get((method, declared_rule(rule)))
        if declared is None:
            continue
        path = _CONVERTER.sub(lambda m: "{" + m.group("name") + "}", rule[len(API_PREFIX):])
        paths.setdefault(path, {})[method.lower()] = _operation(method, rule, declared)
    return {
        "openapi": "3.0.3",
        "info": {"title": "hpcdet master API", "version": __version__,
                 "description": "The REST API of the hpcdet master (docs/api.md). Every "
                                "error answers {\"error\": {\"code\", \"message\", "
                                "\"details\"}, \"status\"}."},
        "servers": [{"url": API_PREFIX}],
        "paths": paths,
        "components": {
            "schemas": COMPONENTS,
            "securitySchemes": _SECURITY_SCHEMES,
        },
    }


def _operation(method: str, rule: str, declared: dict[str, Any]) -> dict[str, Any]:
    endpoint = current_endpoint(rule, method)
    auth = declared.get("auth", "user")
    answers = dict(declared["answers"])
    if auth in _UNAUTHORIZED:
        answers.setdefault(401, _UNAUTHORIZED[auth])
    operation: dict[str, Any] = {
        "operationId": endpoint,
        "summary": declared["summary"],
        "parameters": [*_path_parameters(rule, declared.get("path", {})),
                       *declared.get("query", [])],
        "responses": {str(status): _answer(status, schema)
                      for status, schema in sorted(answers.items())},
        "security": _SECURITY[auth],
    }
    operation["responses"]["414"] = _TOO_LONG
    operation["responses"]["default"] = {
        "description": "An error, in the common shape",
        "content": {"application/json": {"schema": ref("Error")}}}
    if "body" in declared:
        operation["requestBody"] = {"required": True, "content": {
            "application/json": {"schema": declared["body"]}}}
    if not operation["parameters"]:
        del operation["parameters"]
    return operation


def current_endpoint(rule: str, method: str) -> str:
    """A stable operationId: the method and the rule's words."""
    words = re.sub(r"[^A-Za-z0-9]+", "_", _CONVERTER.sub(r"\g<name>", rule[len(API_PREFIX):]))
    return f"{method.lower()}{words}".rstrip("_")


def _answer(status: int, schema: Schema | str) -> dict[str, Any]:
    """A success answer from its schema, or an error one (common shape) from its text."""
    if isinstance(schema, str):
        return {"description": schema,
                "content": {"application/json": {"schema": ref("Error")}}}
    description = "Created" if status == 201 else "OK"
    if isinstance(schema.get("content"), str):
        return {"description": description, "content": {schema["content"]: {
            "schema": {"type": "string", "format": "binary"}}}}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _path_parameters(rule: str, overrides: dict[str, Schema]) -> list[dict[str, Any]]:
    params = []
    for match in _CONVERTER.finditer(rule):
        name, conv = match.group("name"), match.group("conv") or "string"
        schema = overrides.get(name) or _CONVERTER_SCHEMAS.get(conv, {"type": "string"})
        if conv == "any":
            words = [w.strip().strip("'\"") for w in (match.group("args") or "").split(",")]
            schema = {"type": "string", "enum": [w for w in words if w]}
        params.append({"name": name, "in": "path", "required": True, "schema": schema})
    return params
