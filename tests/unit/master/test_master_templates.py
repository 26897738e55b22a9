"""Config templates on SQLite and PostgreSQL: the routes, and experiments created from one."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import CONFIG, create
from test_master_api import assert_error, experiment_count

USER = {"X-Hpcdet-User": "alice"}

TEMPLATE = """\
name: from-template
description: shared settings
max_restarts: 2
slurm:
  slots_per_node: 4
  sbatch_args: ["--mail-type=END"]
environment:
  environment_variables: [A=template, B=1]
bind_mounts:
  - {host_path: /tmpl/data, container_path: /data}
  - {host_path: /tmpl/scratch, container_path: /scratch}
"""

CONFIG_WITH_LISTS = CONFIG + """\
environment:
  environment_variables: [A=config]
bind_mounts:
  - {host_path: /mine/data, container_path: /data, read_only: true}
"""


def post_template(client: FlaskClient, name: str, config: str = TEMPLATE) -> Any:
    return client.post("/api/v1/templates", json={"name": name, "config": config},
                       headers=USER)


def put_template(client: FlaskClient, name: str, config: str = TEMPLATE,
                 user: str = "alice") -> Any:
    return client.put(f"/api/v1/templates/{name}", json={"config": config},
                      headers={"X-Hpcdet-User": user})


def stored_config(client: FlaskClient, exp_id: int) -> dict[str, Any]:
    config: dict[str, Any] = client.get(f"/api/v1/experiments/{exp_id}").get_json()[
        "experiment"]["config"]
    return config


def test_create_describe_list_remove(client: FlaskClient) -> None:
    created = post_template(client, "gpu.v1")
    assert created.status_code == 201, created.get_json()
    body = created.get_json()["template"]
    assert body["name"] == "gpu.v1" and body["owner"] == "alice"
    assert body["config"]["bind_mounts"][0] == {"host_path": "/tmpl/data",
                                               "container_path": "/data"}
    assert body["created_at"] == body["updated_at"] and body["created_at"].endswith("+00:00")
    assert client.get("/api/v1/templates/gpu.v1").get_json() == {"template": body}
    assert post_template(client, "a_cpu").status_code == 201
    names = [t["name"] for t in client.get("/api/v1/templates").get_json()["templates"]]
    assert names == ["a_cpu", "gpu.v1"]
    removed = client.delete("/api/v1/templates/gpu.v1", headers=USER)
    assert removed.status_code == 200 and removed.get_json() == {}
    assert_error(client.get("/api/v1/templates/gpu.v1"), 404, "not_found")
    names = [t["name"] for t in client.get("/api/v1/templates").get_json()["templates"]]
    assert names == ["a_cpu"]


def test_list_is_sorted_by_name_on_every_database(client: FlaskClient) -> None:
    for name in ["b", "B", "a-2", "a.1", "_z"]:
        assert post_template(client, name, "max_restarts: 1\n").status_code == 201
    names = [t["name"] for t in client.get("/api/v1/templates").get_json()["templates"]]
    assert names == sorted(["b", "B", "a-2", "a.1", "_z"])


def test_creating_an_existing_name_is_a_conflict(client: FlaskClient) -> None:
    assert post_template(client, "gpu", "max_restarts: 1\n").status_code == 201
    error = assert_error(post_template(client, "gpu", "max_restarts: 7\n"), 409, "conflict")
    assert "'gpu' already exists" in error["message"]
    assert client.get("/api/v1/templates/gpu").get_json()["template"]["config"] == {
        "max_restarts": 1}


def test_set_creates_then_replaces_and_bumps_updated_at(client: FlaskClient) -> None:
    first = put_template(client, "gpu", "max_restarts: 1\n")
    assert first.status_code == 200, first.get_json()
    before = first.get_json()["template"]
    second = put_template(client, "gpu", "description: new\n", user="bob")
    after = second.get_json()["template"]
    assert second.status_code == 200 and after["config"] == {"description": "new"}
    assert after["owner"] == "alice"  # the creator stays the owner
    assert after["created_at"] == before["created_at"]
    assert (dt.datetime.fromisoformat(after["updated_at"])
            > dt.datetime.fromisoformat(before["updated_at"]))


def test_missing_templates_are_404(client: FlaskClient) -> None:
    assert_error(client.get("/api/v1/templates/nope"), 404, "not_found")
    error = assert_error(client.delete("/api/v1/templates/nope", headers=USER), 404,
                         "not_found")
    assert "'nope'" in error["message"]


def test_invalid_yaml_names_line_and_column(client: FlaskClient) -> None:
    error = assert_error(post_template(client, "bad", "resources:\n  slots: [1\n"), 400,
                         "invalid_config")
    assert error["message"] == "the template config is not a YAML mapping"
    assert error["details"][0].startswith("<config>:3:1: ")
    error = assert_error(put_template(client, "bad", "- a list\n"), 400, "invalid_config")
    assert error["details"] == ["<config>: must be a mapping of fields"]
    assert_error(client.get("/api/v1/templates/bad"), 404, "not_found")


def test_invalid_template_content_lists_every_problem(client: FlaskClient) -> None:
    text = "resources: {slots_per_trial: two}\nbogus: 1\n"
    error = assert_error(post_template(client, "bad", text), 400, "invalid_config")
    assert error["message"] == "the template config is invalid"
    assert any(d.startswith("<config>.resources.slots_per_trial: ") for d in error["details"])
    assert any("'bogus'" in d for d in error["details"])
    assert_error(put_template(client, "bad", text), 400, "invalid_config")
    assert client.get("/api/v1/templates").get_json() == {"templates": []}


@pytest.mark.parametrize("name", ["", "has space", "x" * 129, "semi;colon", 7, None])
def test_bad_names_are_refused(client: FlaskClient, name: Any) -> None:
    error = assert_error(client.post("/api/v1/templates", json={"name": name, "config": "{}"},
                                     headers=USER), 400, "bad_request")
    assert error["message"].startswith("name: ")


def test_bad_bodies(client: FlaskClient) -> None:
    assert_error(client.post("/api/v1/templates", data="x", headers=USER), 400, "bad_request")
    error = assert_error(client.post("/api/v1/templates", json={"name": "a", "config": {}},
                                     headers=USER), 400, "bad_request")
    assert error["message"].startswith("config: ")
    assert_error(client.put("/api/v1/templates/" + "x" * 129, json={"config": "{}"},
                            headers=USER), 400, "bad_request")
    assert_error(client.put("/api/v1/templates/a", json={}, headers=USER), 400, "bad_request")


def test_experiment_stores_the_merged_config(client: FlaskClient) -> None:
    assert post_template(client, "shared").status_code == 201
    response = create(client, CONFIG_WITH_LISTS, template="shared")
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert body["template"] == "shared"
    config = stored_config(client, body["experiment"]["id"])
    assert config["name"] == "unit"  # the config's scalar wins
    assert config["description"] == "shared settings"  # the template fills gaps
    assert config["max_restarts"] == 2
    assert config["slurm"]["slots_per_node"] == 1  # nested: the config's value wins
    assert config["slurm"]["sbatch_args"] == ["--mail-type=END"]  # and the template adds
    # stored as Determined stores it: shimmed (explicit const, per-device variables)
    assert config["hyperparameters"]["lr"] == {"type": "const", "val": 0.1}
    assert config["environment"]["environment_variables"]["cuda"] == [
        "A=template", "B=1", "A=config"]
    mounts = [(b["host_path"], b["container_path"], b.get("read_only"))
              for b in config["bind_mounts"]]
    assert mounts[0] == ("/mine/data", "/data", True)  # the config's entry for /data stays
    assert [m[:2] for m in mounts] == [("/mine/data", "/data"), ("/tmpl/scratch", "/scratch")]


def test_the_first_state_change_names_the_template(client: FlaskClient) -> None:
    post_template(client, "shared")
    exp_id = create(client, template="shared").get_json()["experiment"]["id"]
    history = client.get(f"/api/v1/experiments/{exp_id}").get_json()["experiment"]["history"]
    assert history[0]["cause"] == "experiment created from template shared"
    plain = create(client).get_json()
    assert plain["template"] is None
    history = client.get(f"/api/v1/experiments/{plain['experiment']['id']}").get_json()[
        "experiment"]["history"]
    assert history[0]["cause"] == "experiment created"


def test_editing_or_removing_the_template_leaves_past_experiments_alone(
        client: FlaskClient) -> None:
    post_template(client, "shared")
    exp_id = create(client, CONFIG_WITH_LISTS, template="shared").get_json()["experiment"]["id"]
    before = stored_config(client, exp_id)
    assert put_template(client, "shared", "max_restarts: 9\ndescription: edited\n"
                        ).status_code == 200
    assert stored_config(client, exp_id) == before
    client.delete("/api/v1/templates/shared", headers=USER)
    assert stored_config(client, exp_id) == before
    assert before["max_restarts"] == 2


def test_the_template_can_supply_required_fields(client: FlaskClient) -> None:
    post_template(client, "base", "entrypoint: python3 train.py\n"
                  "searcher: {name: single, metric: loss, max_length: 10}\n")
    response = create(client, "name: short\n", template="base")
    assert response.status_code == 201, response.get_json()
    config = stored_config(client, response.get_json()["experiment"]["id"])
    assert config["entrypoint"] == "python3 train.py" and config["searcher"]["metric"] == "loss"


def test_dry_run_with_a_template_renders_the_merged_config(app: Flask,
                                                          client: FlaskClient) -> None:
    post_template(client, "shared")
    body = create(client, template="shared", dry_run=True).get_json()
    assert body["dry_run"] is True and body["template"] == "shared"
    assert "#SBATCH --mail-type=END" in body["jobs"][0]["script"]
    assert experiment_count(app) == 0


def test_template_warnings_are_reported(client: FlaskClient) -> None:
    post_template(client, "warns", "records_per_epoch: 1000\n")
    warnings = create(client, template="warns").get_json()["warnings"]
    assert warnings == [
        "<config>.records_per_epoch: accepted but not acted on by this version of hpcdet"]


@pytest.mark.parametrize(("template", "message"), [
    ("nope", "template: no template named 'nope'"),
    (["a"], "template: must be a template name (a string)"),
])
def test_an_unknown_template_stores_nothing(app: Flask, client: FlaskClient, template: Any,
                                            message: str) -> None:
    error = assert_error(create(client, template=template), 400, "bad_request")
    assert error["message"] == message
    assert experiment_count(app) == 0


def test_a_merged_config_that_is_invalid_stores_nothing(app: Flask,
                                                        client: FlaskClient) -> None:
    post_template(client, "three", "resources: {slots_per_trial: 3}\n")
    error = assert_error(create(client, "name: x\n", template="three"), 400, "invalid_config")
    assert error["message"] == "the experiment config is incomplete"
    assert any("entrypoint" in d for d in error["details"]), error["details"]
    assert experiment_count(app) == 0
