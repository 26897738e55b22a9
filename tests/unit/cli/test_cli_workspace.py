"""``det workspace`` and ``det project`` end to end against a real in-process master (WSGI)
that identifies its users: tables, --json, roles and the one-line refusals."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result

from hpcdet.cli.main import CliState, cli

CONFIG = ("name: shared\nentrypoint: python3 train.py\n"
          "searcher: {name: single, metric: loss, max_length: 10}\n")


@pytest.fixture
def named_master(migrated_db_url: str, tmp_path: Path) -> Iterator[httpx.WSGITransport]:
    from hpcdet.dispatcher.slurm.backend import SlurmBackend
    from hpcdet.master.app import create_app
    from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings

    rm = replace(ResourceManagerSettings(), job_storage_root=str(tmp_path / "jobs"),
                 master_host="master.example", cluster_name="unit")
    settings = MasterSettings(db_url=migrated_db_url, resource_manager=rm, state_dir=str(tmp_path),
                              require_user=True)
    app = create_app(settings, backend=SlurmBackend())
    yield httpx.WSGITransport(app=app)
    app.config["HPCDET_ENGINE"].dispose()


def run(transport: httpx.BaseTransport, user: str, *args: str) -> Result:
    state = CliState(transport=transport, poll_interval=0)
    return CliRunner().invoke(cli, ["-u", user, *args], obj=state, prog_name="det")


def ok(transport: httpx.BaseTransport, user: str, *args: str) -> str:
    result = run(transport, user, *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_workspaces_projects_and_members(named_master: httpx.WSGITransport,
                                          tmp_path: Path) -> None:
    assert ok(named_master, "alice", "workspace", "create", "team") == "Created workspace team\n"
    assert "bob is now viewer" in ok(named_master, "alice", "w", "add-member", "team", "bob")
    ok(named_master, "alice", "project", "create", "-w", "team", "vision", "-d", "cnn work")
    header, _, *rows = ok(named_master, "bob", "workspace", "list").splitlines()
    assert header.split()[:3] == ["ID", "Name", "Your"] and rows[0].split()[1:3] == [
        "team", "viewer"]
    described = ok(named_master, "bob", "workspace", "describe", "team")
    assert "alice  admin" in described and "bob    viewer" in described
    assert "vision" in described and "None" not in described
    listed = json.loads(ok(named_master, "bob", "project", "list", "-w", "team", "--json"))
    assert [p["name"] for p in listed["projects"]] == ["vision"]
    assert "cnn work" in ok(named_master, "bob", "p", "describe", "-w", "team", "vision")

    (tmp_path / "exp.yaml").write_text(CONFIG)
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "train.py").write_text("print('hi')\n")
    refused = run(named_master, "bob", "experiment", "create", "-w", "team",
                  str(tmp_path / "exp.yaml"), str(tmp_path / "ctx"))
    assert refused.exit_code == 1 and "needs the editor role" in refused.stderr
    assert "Traceback" not in refused.output
    ok(named_master, "alice", "experiment", "create", "-w", "team", "--project", "vision",
       str(tmp_path / "exp.yaml"), str(tmp_path / "ctx"))
    assert "shared" in ok(named_master, "bob", "experiment", "list", "--all")
    assert "shared" in ok(named_master, "bob", "experiment", "list", "-w", "team")
    other = run(named_master, "carol", "experiment", "list", "-w", "team")
    assert other.exit_code == 1 and "workspace 'team' not found" in other.stderr
    assert "shared" not in ok(named_master, "carol", "experiment", "list", "--all")

    unseen = run(named_master, "carol", "workspace", "describe", "team")
    assert unseen.exit_code == 1 and "workspace 'team' not found" in unseen.stderr
    ok(named_master, "alice", "workspace", "remove-member", "team", "bob")
    assert "shared" not in ok(named_master, "bob", "experiment", "list", "--all")


def test_project_needs_a_workspace(named_master: httpx.WSGITransport, tmp_path: Path) -> None:
    result = run(named_master, "alice", "experiment", "create", "--project", "vision", "c.yaml",
                 ".")
    assert result.exit_code == 2 and "--project needs --workspace" in result.output
