"""``GET /api/v1/openapi.json`` describes every API route, with the common error shape."""

from __future__ import annotations

import re
from typing import Any

import jsonschema
from flask import Flask
from flask.testing import FlaskClient

from hpcdet.master.api.openapi import (
    api_routes,
    declared_rule,
    stale_declarations,
    undescribed_routes,
)
from hpcdet.master.api.openapi_schemas import COMPONENTS

# POST routes that take no body: a task's kill and an experiment's lifecycle actions.
_NO_BODY = ("/kill", "unarchive):action>")


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
    assert sorted(response.headers["Allow"].split(", ")) == ["GET", "HEAD", "OPTIONS"]
    assert client.post("/api/v1/experiments/1/trials").status_code == 405
    assert client.post("/api/v1/experiments/1/explode").status_code == 404


def test_ids_beyond_a_database_integer_are_not_found(client: FlaskClient) -> None:
    for path in ("/experiments/9223372036854775808", "/trials/99999999999999999999/logs",
                 "/tasks/18446744073709551616"):
        response = client.get("/api/v1" + path)
        assert response.status_code == 404, path
        assert response.get_json()["error"]["code"] == "not_found"


def _resolved(schema: Any) -> Any:
    """``schema`` with its component references inlined (the Error shape has no nullable)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _resolved(COMPONENTS[schema["$ref"].rsplit("/", 1)[1]])
        return {key: _resolved(value) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_resolved(item) for item in schema]
    return schema
