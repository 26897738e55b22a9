"""``GET /api/v1/openapi.json`` describes every API route, with the common error shape."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Any

import jsonschema
import pytest
from fake_munge import FakeMunge
from flask import Flask
from flask.testing import FlaskClient

from hpcdet import munge
from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.api.openapi import (
    COMPONENTS,
    api_routes,
    declared_rule,
    stale_declarations,
    undescribed_routes,
)
from hpcdet.master.app import create_app
from hpcdet.master.settings.core import MasterSettings

# POST routes that take no body: a task's kill, an experiment's lifecycle actions, logout
# and a web link (its seconds are a query parameter), a model's archive and unarchive.
_NO_BODY = ("/kill", "unarchive):action>", "/auth/logout", "/auth/web_link", "/archive",
            "/unarchive", "deactivate):action>")
USER = {"X-Hpcdet-User": "alice"}


def test_every_api_route_is_described(app: Flask) -> None:
    # A new route fails here until it is declared in hpcdet/master/api/openapi_schemas.py.
    assert undescribed_routes(app) == []
    assert stale_declarations(app) == []


def test_the_description_has_every_route_with_its_parameters(app: Flask,
                                                             client: FlaskClient) -> None:
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    doc = response.get_json()
    assert doc["openapi"].startswith("3.0") and doc["servers"] == [{"url": "/api/v1"}]
    routes = list(api_routes(app))
    assert len(routes) >= 33
    for method, rule in routes:
        path = re.sub(r"<(?:[^:>]+:)?(\w+)>", r"{\1}", declared_rule(rule))[len("/api/v1"):]
        operation = doc["paths"][path][method.lower()]
        names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
        assert names == set(re.findall(r"\{(\w+)\}", path)), (method, path)
        assert operation["responses"]["default"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Error"}
        assert any(code.startswith("2") for code in operation["responses"])
        if method in ("POST", "PUT") and not rule.endswith(_NO_BODY):
            assert "requestBody" in operation, (method, rule)
    ops = {op["operationId"] for item in doc["paths"].values() for op in item.values()}
    assert len(ops) == len(routes), "operation ids are unique"
    action = doc["paths"]["/experiments/{exp_id}/{action}"]["post"]["parameters"][1]
    assert action["schema"]["enum"] == ["pause", "activate", "cancel", "kill", "archive",
                                        "unarchive"]


def test_errors_match_the_described_error_shape(client: FlaskClient) -> None:
    schema = _resolved(COMPONENTS["Error"])
    for response in (client.get("/api/v1/experiments/12345"),
                     client.get("/api/v1/experiments/99999999999999999999999"),
                     client.put("/api/v1/openapi.json"),
                     client.post("/api/v1/templates", json={"name": "bad name"})):
        assert response.status_code in (400, 404, 405)
        jsonschema.validate(response.get_json(), schema)


def test_a_method_not_allowed_names_the_allowed_ones(client: FlaskClient) -> None:
    response = client.delete("/api/v1/experiments/1/trials")
    assert response.status_code == 405
    assert sorted(response.headers["Allow"].split(", ")) == ["GET", "HEAD", "OPTIONS", "POST"]
    assert client.put("/api/v1/experiments/1/trials").status_code == 405
    assert client.post("/api/v1/experiments/1/explode").status_code == 404


def test_ids_beyond_a_database_integer_are_not_found(client: FlaskClient) -> None:
    for path in ("/experiments/9223372036854775808", "/trials/99999999999999999999/logs",
                 "/tasks/18446744073709551616"):
        response = client.get("/api/v1" + path)
        assert response.status_code == 404, path
        assert response.get_json()["error"]["code"] == "not_found"


def _resolved(schema: Any) -> Any:
    """``schema`` as JSON Schema: component references inlined, OpenAPI's ``nullable`` as
    ``anyOf`` null."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _resolved(COMPONENTS[schema["$ref"].rsplit("/", 1)[1]])
        if schema.get("nullable"):
            rest = {key: value for key, value in schema.items() if key != "nullable"}
            return {"anyOf": [_resolved(rest), {"type": "null"}]}
        return {key: _resolved(value) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_resolved(item) for item in schema]
    return schema


def test_the_security_schemes_say_how_users_and_trials_authenticate(
        client: FlaskClient) -> None:
    doc = client.get("/api/v1/openapi.json").get_json()
    schemes = doc["components"]["securitySchemes"]
    assert schemes["userToken"]["type"] == "http" and schemes["userToken"]["scheme"] == "bearer"
    assert "munge" in schemes["userToken"]["description"]
    assert (schemes["webSession"]["in"], schemes["webSession"]["name"]) == (
        "cookie", "hpcdet_session")
    assert (schemes["userHeader"]["in"], schemes["userHeader"]["name"]) == (
        "header", "X-Hpcdet-User")
    assert "open" in schemes["userHeader"]["description"]
    assert schemes["trialToken"]["scheme"] == "bearer"
    paths = doc["paths"]
    assert paths["/auth/login"]["post"]["security"] == [{}]
    assert paths["/master"]["get"]["security"] == [{}]
    assert paths["/workspaces"]["get"]["security"] == [
        {"userToken": []}, {"webSession": []}, {"userHeader": []}, {}]
    assert paths["/trials/{trial_id}/metrics"]["post"]["security"] == [{"trialToken": []}]
    assert "401" in paths["/workspaces"]["get"]["responses"]
    assert "401" in paths["/trials/{trial_id}/preemption"]["get"]["responses"]
    assert "401" not in paths["/master"]["get"]["responses"]
    login = paths["/auth/login"]["post"]["responses"]
    assert {"200", "400", "401", "503"} <= set(login)
    assert login["503"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}
    assert set(paths["/workspaces/{name}/members/{user}"]["delete"]["responses"]) >= {
        "200", "403", "404", "409"}
    assert "201" in paths["/workspaces"]["post"]["responses"]
    created = paths["/experiments"]["post"]["requestBody"]["content"]["application/json"]
    assert {"workspace", "project"} <= set(created["schema"]["properties"])


def test_the_identity_and_workspace_answers_match_the_description(
        client: FlaskClient) -> None:
    paths = client.get("/api/v1/openapi.json").get_json()["paths"]

    def call(method: str, path: str, status: int, **kwargs: Any) -> Any:
        """``method path`` answers ``status`` with a body its description allows."""
        response = client.open("/api/v1" + path, method=method, headers=USER, **kwargs)
        assert response.status_code == status, (method, path, response.get_json())
        described = next(item for template, item in paths.items()
                         if re.fullmatch(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)),
                                         path.split("?")[0]) and method.lower() in item)
        answer = described[method.lower()]["responses"][str(status)]
        jsonschema.validate(response.get_json(), _resolved(
            answer["content"]["application/json"]["schema"]))
        return response.get_json()

    call("POST", "/workspaces", 201, json={"name": "team"})
    call("POST", "/workspaces", 409, json={"name": "team"})
    call("POST", "/workspaces/team/projects", 201, json={"name": "p1"})
    call("PUT", "/workspaces/team/members/bob", 200, json={"role": "viewer"})
    call("GET", "/workspaces/team", 200)
    call("GET", "/workspaces", 200)
    call("GET", "/workspaces/team/projects", 200)
    call("GET", "/workspaces/team/projects/p1", 200)
    call("DELETE", "/workspaces/team/members/bob", 200)
    call("DELETE", "/workspaces/team/members/alice", 409)
    call("GET", "/workspaces/other", 404)
    template = call("POST", "/templates", 201,
                    json={"name": "t", "config": "labels: [a]\n", "workspace": "team"})
    assert template["template"]["workspace_id"] is not None
    call("GET", "/auth/whoami", 200)
    call("GET", "/users", 200)
    token = call("POST", "/auth/tokens", 201, json={"name": "ci"})
    call("GET", "/auth/tokens?all=1", 200)
    call("DELETE", f"/auth/tokens/{token['id']}", 200)
    call("DELETE", "/auth/tokens/99", 404)
    call("POST", "/auth/web_link?seconds=30", 201)
    # Edit, archive and delete (an open master: everybody is an admin), users and roles.
    call("PATCH", "/workspaces/team/projects/p1", 200, json={"description": "d"})
    call("POST", "/workspaces/team/projects/p1/archive", 200)
    call("POST", "/workspaces/team/projects/p1/unarchive", 200)
    call("DELETE", "/workspaces/team/projects/p1", 200)
    call("DELETE", "/workspaces/team", 409)
    call("POST", "/workspaces/team/archive", 200)
    call("GET", "/workspaces?archived=1", 200)
    call("POST", "/workspaces/team/unarchive", 200)
    call("PATCH", "/workspaces/team", 200, json={"name": "crew"})
    call("POST", "/users/bob/deactivate", 409)
    call("POST", "/users", 409, json={"username": "bob"})
    call("PATCH", "/users/bob", 404, json={"display_name": "B"})
    call("GET", "/users/alice/roles", 200)
    call("GET", "/rbac/roles", 200)
    call("POST", "/auth/logout", 200)
    anonymous = client.get("/api/v1/users")
    assert anonymous.status_code == 401 and "401" in paths["/users"]["get"]["responses"]


def test_a_munge_login_answers_as_described(settings: MasterSettings,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeMunge(os.getuid())
    monkeypatch.setattr(munge, "decode", fake.decode)
    app = create_app(replace(settings, auth_mode="munge", port=8080), backend=SlurmBackend())
    try:
        client = app.test_client()
        paths = client.get("/api/v1/openapi.json").get_json()["paths"]
        answers = paths["/auth/login"]["post"]["responses"]
        credential = fake.encode(munge.login_payload("http://localhost:8080"))
        login = client.post("/api/v1/auth/login", json={"credential": credential})
        assert login.status_code == 200, login.get_json()
        jsonschema.validate(login.get_json(), _resolved(
            answers["200"]["content"]["application/json"]["schema"]))
        replayed = client.post("/api/v1/auth/login", json={"credential": credential})
        assert replayed.status_code == 401 and "401" in answers
        jsonschema.validate(replayed.get_json(), _resolved(COMPONENTS["Error"]))
        bearer = {"Authorization": f"Bearer {login.get_json()['token']}"}
        me = client.get("/api/v1/auth/whoami", headers=bearer).get_json()
        assert me["auth_mode"] == "munge"
        anonymous = client.get("/api/v1/workspaces")
        assert anonymous.status_code == 401
        assert "401" in paths["/workspaces"]["get"]["responses"]
    finally:
        app.config["HPCDET_ENGINE"].dispose()
