"""Issue 14 hostile-testing findings, at the API: each answers 4xx and stores nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import CONFIG, assert_error, create
from sqlalchemy import func, select

from hpcdet import safe_yaml
from hpcdet.master.models import Experiment

USER = {"X-Hpcdet-User": "alice"}


def experiment_count(app: Flask) -> int:
    with app.app_context():
        from hpcdet.master.api.common import db

        return int(db().scalar(select(func.count()).select_from(Experiment)) or 0)


def _alias_bomb(levels: int = 9) -> str:
    lines = ["data:", '  l0: &l0 ["aaaaaaaaaaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaaaaaa"]']
    for level in range(1, levels):
        refs = ", ".join([f"*l{level - 1}"] * 9)
        lines.append(f"  l{level}: &l{level} [{refs}]")
    return CONFIG + "\n".join(lines) + "\n"


# Finding 1: --uid/--gid/--comment reached #SBATCH in the dry-run and the submitted script.
@pytest.mark.parametrize("arg", ["--uid=0", "--gid 0", "--comment=hpcdet:x:trial-1", "-ox"])
@pytest.mark.parametrize("dry_run", [True, False])
def test_identity_and_bookkeeping_sbatch_args_are_refused_at_create(
        app: Flask, client: FlaskClient, arg: str, dry_run: bool) -> None:
    config = CONFIG.replace("slurm: {slots_per_node: 1}",
                            f"slurm: {{slots_per_node: 1, sbatch_args: [{json.dumps(arg)}]}}")
    message = assert_error(create(client, config, dry_run=dry_run), 400, "invalid_config")
    assert "sbatch_args" in message
    assert experiment_count(app) == 0


# Finding 6: YAML alias bombs, recursive aliases and deep nesting.
@pytest.mark.parametrize("dry_run", [True, False])
@pytest.mark.parametrize("config", [
    _alias_bomb(), CONFIG + "data: &a {x: *a}\n", CONFIG + "data: " + "[" * 5000 + "]" * 5000,
    CONFIG + "data:\n" + "".join("  " * depth + f"k{depth}:\n" for depth in range(1, 400)),
    # Issue 28, finding 8: ~300 bytes of aliases five levels deep became a 430 KB config
    # (stored, and copied into every trial's files); accepted (201) before the growth limit.
    _alias_bomb(levels=5),
], ids=["alias-bomb", "recursive-alias", "deep-flow", "deep-block", "alias-growth"])
def test_hostile_yaml_is_refused_with_a_4xx(app: Flask, client: FlaskClient, config: str,
                                            dry_run: bool) -> None:
    assert_error(create(client, config, dry_run=dry_run), 400, "invalid_config")
    assert experiment_count(app) == 0


@pytest.mark.parametrize("config", [_alias_bomb(), "data: &a {x: *a}\n",
                                    "a: " + "[" * 5000 + "]" * 5000])
def test_hostile_yaml_templates_are_refused(client: FlaskClient, config: str) -> None:
    response = client.post("/api/v1/templates", json={"name": "t", "config": config},
                           headers=USER)
    assert 400 <= response.status_code < 500
    assert set(response.get_json()["error"]) == {"code", "message", "details"}


def test_deep_json_bodies_are_refused(client: FlaskClient) -> None:
    for depth in (200, 100_000):
        body = '{"config": ' + "[" * depth + "]" * depth + "}"
        response = client.post("/api/v1/experiments", data=body, headers=USER,
                               content_type="application/json")
        message = assert_error(response, 400, "bad_request")
        assert "levels deep" in message


# Finding 8: a 64 MB metrics body was parsed and accepted.
def test_bodies_over_the_route_limit_are_refused_before_parsing(
        client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    def never_parsed(*args: object, **kwargs: object) -> None:
        raise AssertionError("the body was parsed")

    monkeypatch.setattr("flask.wrappers.Request.get_json", never_parsed)
    big = b"{" + b" " * (17 * 1024 * 1024) + b"}"
    response = client.post("/api/v1/trials/1/metrics", data=big, content_type="application/json",
                           headers={"Authorization": "Bearer x"})
    assert_error(response, 413, "payload_too_large")
    small_route = client.put("/api/v1/templates/t", data=b" " * (2 * 1024 * 1024),
                             content_type="application/json", headers=USER)
    assert_error(small_route, 413, "payload_too_large")


# Finding 5: a pattern RE2 cannot run is refused when the experiment is created.
@pytest.mark.parametrize("pattern", [r"(a)\\1", "(?=lookahead)", "(unclosed"])
def test_log_policy_patterns_re2_cannot_compile_are_refused(
        app: Flask, client: FlaskClient, pattern: str) -> None:
    config = CONFIG + f'log_policies:\n  - {{name: mine, pattern: "{pattern}", action: ' \
                      "cancel_retries}\n"
    message = assert_error(create(client, config, dry_run=True), 400, "invalid_config")
    assert message == "invalid log_policies"
    response = create(client, config)
    assert response.status_code == 400
    assert 'log_policies[0] "mine"' in response.get_json()["error"]["details"][0]
    assert experiment_count(app) == 0


# Finding 7: each --dry-run left its unpacked context under <job_storage_root>/dry-run/.
def test_dry_run_scratch_is_removed_and_leftovers_expire(app: Flask, client: FlaskClient) -> None:
    import os

    scratch = Path(app.config["HPCDET_SETTINGS"].resource_manager.job_storage_root, "dry-run")
    stale = scratch / "left-by-a-crash"
    stale.mkdir(parents=True)
    (stale / "big").write_bytes(b"x")
    os.utime(stale, (0, 0))
    for _ in range(3):
        assert create(client, dry_run=True).status_code == 200
    assert list(scratch.iterdir()) == []


def test_refused_sbatch_args_name_the_template_they_came_from(app: Flask,
                                                              client: FlaskClient) -> None:
    stored = client.post("/api/v1/templates", headers=USER, json={
        "name": "evil", "config": "slurm: {sbatch_args: ['--uid=0']}\n"})
    assert_error(stored, 400, "invalid_config")
    assert stored.get_json()["error"]["details"][0].startswith(
        "<template>.slurm.sbatch_args[0]: option --uid is controlled by hpcdet")
    assert client.get("/api/v1/templates/evil", headers=USER).status_code == 404


@pytest.mark.parametrize("url", [
    "/api/v1/templates/a%00b", "/api/v1/workspaces/a%00b", "/api/v1/experiments?workspace=a%00b",
    "/api/v1/experiments?la%00bel=x", "/api/v1/workspaces/w/projects/a%00b"])
def test_a_nul_in_the_path_or_query_is_a_400(client: FlaskClient, url: str) -> None:
    """PostgreSQL cannot store NUL: its driver's error used to be a 500 on these routes."""
    message = assert_error(client.get(url, headers={"X-Hpcdet-User": "alice"}), 400,
                           "bad_request")
    assert "NUL" in message


def test_a_nul_in_a_body_or_a_config_is_a_400(app: Flask, client: FlaskClient) -> None:
    user = {"X-Hpcdet-User": "alice"}
    made = client.post("/api/v1/workspaces", json={"name": "w"}, headers=user)
    assert made.status_code == 201
    message = assert_error(client.post("/api/v1/workspaces/w/projects", headers=user, json={
        "name": "p", "description": "a\x00b"}), 400, "bad_request")
    assert "description" in message and "NUL" in message
    quoted = CONFIG.replace("entrypoint:", 'description: "a\\0b"\nentrypoint:', 1)
    answer = create(client, config=quoted)
    assert answer.status_code == 400 and "NUL" in answer.get_data(as_text=True)
    assert experiment_count(app) == 0


def test_nan_or_infinity_in_a_body_or_a_config_is_a_400(app: Flask, client: FlaskClient) -> None:
    """Python's JSON and YAML readers accept NaN and Infinity; PostgreSQL's JSONB refuses
    them, which used to surface as the driver's 500."""
    user = {"X-Hpcdet-User": "alice", "Content-Type": "application/json"}
    answer = client.post("/api/v1/templates", headers=user,
                         data='{"name": "t", "config": {"data": {"x": [1, NaN]}}}')
    message = assert_error(answer, 400, "bad_request")
    assert "config.data.x[1]" in message and "NaN" in message
    with_inf = CONFIG.replace("entrypoint:", "data: {x: .inf}\nentrypoint:", 1)
    answer = create(client, config=with_inf)
    assert answer.status_code == 400 and "data.x" in answer.get_data(as_text=True)
    assert experiment_count(app) == 0


# Issue 28, finding 9: a lone surrogate ("\ud800") in a description was a 500 (the driver
# could not encode it); before the fix each of these answered 500.
def test_a_lone_surrogate_in_a_body_or_a_config_is_a_400(app: Flask, client: FlaskClient) -> None:
    made = create(client)
    assert made.status_code == 201, made.get_json()
    exp_id = made.get_json()["experiment"]["id"]
    raw = {"X-Hpcdet-User": "alice", "Content-Type": "application/json"}
    answer = client.patch(f"/api/v1/experiments/{exp_id}", headers=raw,
                          data='{"description": "a\\ud800b"}')
    message = assert_error(answer, 400, "bad_request")
    assert "description" in message and "surrogate" in message
    answer = client.post("/api/v1/workspaces", headers=raw, data='{"name": "w\\udfff"}')
    assert "surrogate" in assert_error(answer, 400, "bad_request")
    quoted = CONFIG.replace("entrypoint:", 'description: "a\\ud800b"\nentrypoint:', 1)
    answer = create(client, config=quoted)
    assert answer.status_code == 400 and "surrogate" in answer.get_data(as_text=True)
    assert experiment_count(app) == 1
    paired = client.patch(f"/api/v1/experiments/{exp_id}", headers=raw,
                          data='{"description": "\\ud83d\\ude00"}')  # a whole pair: text
    assert paired.status_code == 200, paired.get_json()


def test_yaml_reads_each_surrogate_escape_alone() -> None:
    # As docs/configuration.md says: a pair of \u escapes is refused in YAML; \U is not.
    with pytest.raises(safe_yaml.YamlLimitError, match="surrogate"):
        safe_yaml.load('a: "\\ud83d\\ude00"')
    assert safe_yaml.load('a: "\\U0001F600"') == {"a": "\U0001F600"}


def test_aliases_may_share_a_block_and_a_large_plain_config_is_fine(
        app: Flask, client: FlaskClient) -> None:
    shared = CONFIG + "data:\n  a: &block {lr: 0.1, layers: [64, 64]}\n  b: *block\n"
    assert create(client, shared).status_code == 201
    plain = CONFIG + "data:\n" + "".join(f"  k{i}: {'x' * 100}\n" for i in range(5000))
    assert create(client, plain).status_code == 201  # 0.5 MB written out, no alias
    assert experiment_count(app) == 2

