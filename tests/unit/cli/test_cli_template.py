"""``det template`` against a fake master (what is sent, what is shown), and the template
workflow end to end against a real in-process master spoken to over HTTP (WSGI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from click.testing import CliRunner, Result
from hang_guard import HANG_GUARD_S

from hpcdet.cli.main import CliState, cli

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)
REPO = Path(__file__).resolve().parents[3]
TEXT = "# shared GPU settings\nresources:\n  slots_per_trial: 2\nmax_restarts: 1\n"


def _template(name: str = "gpu", **extra: Any) -> dict[str, Any]:
    return {"name": name, "owner": "alice", "created_at": "2024-05-01T12:00:00+00:00",
            "updated_at": "2024-05-02T12:00:00+00:00",
            "config": {"resources": {"slots_per_trial": 2}, "max_restarts": 1}, **extra}


@pytest.fixture
def template_file(tmp_path: Path) -> str:
    (tmp_path / "t.yaml").write_text(TEXT)
    return str(tmp_path / "t.yaml")


def test_list_table(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/templates", {"templates": [_template("a"), _template("gpu")]})
    result = det("template", "list")
    assert result.exit_code == 0, result.output
    header, rule, *rows = result.stdout.splitlines()
    assert header.split() == ["Name", "Owner", "Created", "Updated"]
    assert [row.split()[:2] for row in rows] == [["a", "alice"], ["gpu", "alice"]]
    assert "slots_per_trial" not in result.stdout


def test_list_details_shows_each_config(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/templates", {"templates": [_template("gpu")]})
    result = det("tpl", "ls", "-d")
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("\nTemplate gpu:\n  resources:\n    slots_per_trial: 2\n"
                                  "  max_restarts: 1\n")


def test_list_and_describe_json_are_the_raw_answers(det: Det, fake_master: FakeMaster) -> None:
    listed = {"templates": [_template()]}
    fake_master.add("GET", "/templates", listed)
    fake_master.add("GET", "/templates/gpu", {"template": _template()})
    assert json.loads(det("template", "list", "--json").stdout) == listed
    assert json.loads(det("template", "describe", "gpu", "--json").stdout) == {
        "template": _template()}


def test_describe_prints_only_the_config_as_yaml(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/templates/gpu", {"template": _template()})
    result = det("template", "describe", "gpu")
    assert result.exit_code == 0, result.output
    assert result.stdout == "resources:\n  slots_per_trial: 2\nmax_restarts: 1\n"


def test_create_sends_the_name_and_the_original_text(det: Det, fake_master: FakeMaster,
                                                     template_file: str) -> None:
    fake_master.add("POST", "/templates", {"template": _template()}, status=201)
    result = det("template", "create", "gpu", template_file)
    assert result.exit_code == 0, result.output
    assert result.stdout == "Created template gpu\n"
    body = json.loads(fake_master.sent("POST", "/templates")[0].content)
    assert body == {"name": "gpu", "config": TEXT}


def test_set_puts_the_text(det: Det, fake_master: FakeMaster, template_file: str) -> None:
    fake_master.add("PUT", "/templates/gpu", {"template": _template()})
    result = det("tpl", "set", "gpu", template_file)
    assert result.exit_code == 0, result.output
    assert result.stdout == "Set template gpu\n"
    assert json.loads(fake_master.sent("PUT", "/templates/gpu")[0].content) == {"config": TEXT}


def test_remove(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("DELETE", "/templates/gpu", {})
    result = det("tpl", "rm", "gpu")
    assert result.exit_code == 0, result.output
    assert result.stdout == "Removed template gpu\n"
    assert len(fake_master.sent("DELETE", "/templates/gpu")) == 1


def test_master_errors_are_one_error_line(det: Det, fake_master: FakeMaster,
                                          template_file: str) -> None:
    fake_master.add_error("POST", "/templates", 409, "conflict", "template 'gpu' already exists")
    fake_master.add_error("DELETE", "/templates/nope", 404, "not_found",
                          "template 'nope' not found")
    result = det("template", "create", "gpu", template_file)
    assert result.exit_code == 1
    assert result.stderr == "Error: template 'gpu' already exists\n"
    result = det("template", "remove", "nope")
    assert result.exit_code == 1
    assert result.stderr == "Error: template 'nope' not found\n"


def test_malformed_file_is_refused_before_sending(det: Det, fake_master: FakeMaster,
                                                  tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("resources: [1\n")
    result = det("template", "set", "gpu", str(tmp_path / "bad.yaml"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: malformed YAML: {tmp_path / 'bad.yaml'}:2:1: ")
    result = det("template", "create", "gpu", str(tmp_path / "missing.yaml"))
    assert result.exit_code == 1 and "does not exist" in result.stderr
    assert fake_master.requests == []


@pytest.mark.parametrize("name", ["has space", "a/b", "x" * 129])
def test_names_the_master_would_refuse_are_usage_errors(det: Det, fake_master: FakeMaster,
                                                        template_file: str, name: str) -> None:
    result = det("template", "set", name, template_file)
    assert result.exit_code == 2
    assert "Invalid value for 'NAME'" in result.stderr
    assert fake_master.requests == []


def test_template_help_imports_nothing_heavy() -> None:
    probe = ("import sys\nfrom hpcdet.cli import main\ntry:\n    main(sys.argv[1:])\n"
             "except SystemExit:\n    pass\n"
             "print('HEAVY:', *(m for m in ('flask', 'sqlalchemy', 'httpx', 'yaml', 'torch')"
             " if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", probe, "tpl", "set", "--help"],
                          capture_output=True, text=True, env=env, check=True, timeout=HANG_GUARD_S)
    assert "Usage: det template set" in done.stdout
    assert done.stdout.rsplit("HEAVY:", 1)[1].split() == []


# --- against a real master -------------------------------------------------------------

@pytest.fixture
def real_master(migrated_db_url: str, tmp_path: Path) -> Iterator[httpx.WSGITransport]:
    """The real master app (SQLite or PostgreSQL), reached over HTTP through WSGI."""
    from hpcdet.dispatcher.slurm.backend import SlurmBackend
    from hpcdet.master.app import create_app
    from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings

    rm = replace(ResourceManagerSettings(), job_storage_root=str(tmp_path / "jobs"),
                 master_host="master.example", cluster_name="unit")
    settings = MasterSettings(db_url=migrated_db_url, resource_manager=rm, state_dir=str(tmp_path))
    app = create_app(settings, backend=SlurmBackend())
    yield httpx.WSGITransport(app=app)
    app.config["HPCDET_ENGINE"].dispose()


def _run(transport: httpx.BaseTransport, *args: str) -> Result:
    state = CliState(transport=transport, user="alice", poll_interval=0)
    return CliRunner().invoke(cli, list(args), obj=state, prog_name="det")


def _ok(transport: httpx.BaseTransport, *args: str) -> str:
    result = _run(transport, *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_templates_end_to_end(real_master: httpx.WSGITransport, tmp_path: Path) -> None:
    (tmp_path / "tpl.yaml").write_text(
        "description: from the template\nmax_restarts: 2\n"
        "searcher: {name: single, metric: loss, max_length: 10}\n"
        "environment: {environment_variables: [A=template]}\n"
        "bind_mounts: [{host_path: /t/data, container_path: /data},"
        " {host_path: /t/x, container_path: /x}]\n")
    (tmp_path / "exp.yaml").write_text(
        "name: e2e\nentrypoint: python3 train.py\nmax_restarts: 0\n"
        "environment: {environment_variables: [A=config]}\n"
        "bind_mounts: [{host_path: /mine, container_path: /data}]\n")
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "train.py").write_text("print('hi')\n")
    assert _ok(real_master, "tpl", "set", "base", str(tmp_path / "tpl.yaml")) == (
        "Set template base\n")
    assert _ok(real_master, "template", "list").splitlines()[2].split()[:2] == ["base", "alice"]
    assert yaml.safe_load(_ok(real_master, "template", "describe", "base"))[
        "max_restarts"] == 2

    created = json.loads(_ok(real_master, "e", "create", "--template", "base", "--json",
                             "--config", "resources.slots_per_trial=2",
                             "--config", "slurm.slots_per_node=2",
                             str(tmp_path / "exp.yaml"), str(tmp_path / "code")))
    assert created["template"] == "base"
    exp_id = created["experiment"]["id"]
    config = json.loads(_ok(real_master, "e", "describe", "--json", str(exp_id)))[
        "experiment"]["config"]
    assert config["max_restarts"] == 0 and config["description"] == "from the template"
    assert config["searcher"]["metric"] == "loss"
    assert config["resources"]["slots_per_trial"] == 2
    assert config["slurm"]["slots_per_node"] == 2
    # stored as Determined stores it: a per-device map (Determined's shim)
    assert config["environment"]["environment_variables"]["cuda"] == ["A=template", "A=config"]
    assert [b["host_path"] for b in config["bind_mounts"]] == ["/mine", "/t/x"]

    (tmp_path / "tpl.yaml").write_text("description: edited\n")
    _ok(real_master, "tpl", "set", "base", str(tmp_path / "tpl.yaml"))
    _ok(real_master, "tpl", "rm", "base")
    again = json.loads(_ok(real_master, "e", "describe", "--json", str(exp_id)))
    assert again["experiment"]["config"] == config
    result = _run(real_master, "tpl", "describe", "base")
    assert result.exit_code == 1 and result.stderr == "Error: template 'base' not found\n"
    result = _run(real_master, "e", "create", "--template", "base",
                  str(tmp_path / "exp.yaml"), str(tmp_path / "code"))
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == "Error: template: no template named 'base'"


def test_real_master_refuses_invalid_template_content(real_master: httpx.WSGITransport,
                                                      tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("resources: {slots_per_trial: two}\n")
    result = _run(real_master, "template", "create", "bad", str(tmp_path / "bad.yaml"))
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "Error: the template config is invalid",
        "  <config>.resources.slots_per_trial: must be an integer, got 'two'"]
    assert _ok(real_master, "template", "list", "--json") == '{\n  "templates": []\n}\n'
