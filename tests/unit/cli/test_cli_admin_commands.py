"""``det workspace|project edit/archive/unarchive/delete``, ``det user`` administration,
``det rbac`` and ``det user-group`` end to end against a real in-process master (WSGI) that
identifies its users: what a user types, what they see, and the one-line refusals."""

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
def master(migrated_db_url: str, tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[httpx.WSGITransport]:
    from hpcdet.dispatcher.slurm.backend import SlurmBackend
    from hpcdet.master.app import create_app
    from hpcdet.master.security import users
    from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings

    monkeypatch.setattr(users, "unix_user_exists", {"alice", "bob", "root"}.__contains__)
    rm = replace(ResourceManagerSettings(), job_storage_root=str(tmp_path / "jobs"),
                 master_host="master.example", cluster_name="unit")
    settings = MasterSettings(db_url=migrated_db_url, resource_manager=rm,
                              state_dir=str(tmp_path), require_user=True, admins=("root",))
    app = create_app(settings, backend=SlurmBackend())
    yield httpx.WSGITransport(app=app)
    app.config["HPCDET_ENGINE"].dispose()


def run(transport: httpx.BaseTransport, user: str, *args: str, stdin: str = "") -> Result:
    state = CliState(transport=transport, poll_interval=0)
    return CliRunner().invoke(cli, ["-u", user, *args], obj=state, prog_name="det",
                              input=stdin)


def ok(transport: httpx.BaseTransport, user: str, *args: str) -> str:
    result = run(transport, user, *args)
    assert result.exit_code == 0, result.output
    assert "None" not in result.stdout
    return result.stdout


def refused(transport: httpx.BaseTransport, user: str, *args: str) -> str:
    result = run(transport, user, *args)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return result.stderr


def an_experiment(transport: httpx.BaseTransport, tmp_path: Path, *where: str) -> None:
    (tmp_path / "exp.yaml").write_text(CONFIG)
    (tmp_path / "ctx").mkdir(exist_ok=True)
    (tmp_path / "ctx" / "train.py").write_text("print('hi')\n")
    ok(transport, "alice", "experiment", "create", *where, str(tmp_path / "exp.yaml"),
       str(tmp_path / "ctx"))


def test_workspace_edit_archive_and_delete(master: httpx.WSGITransport,
                                           tmp_path: Path) -> None:
    ok(master, "alice", "workspace", "create", "team")
    ok(master, "alice", "workspace", "add-member", "team", "bob", "--role", "editor")
    assert "needs the admin role" in refused(master, "bob", "w", "edit", "team", "--name", "x")
    assert ok(master, "alice", "w", "edit", "team", "--name", "crew") == (
        "Renamed workspace team to crew\n")
    assert ok(master, "alice", "workspace", "archive", "crew") == "Archived workspace crew\n"
    assert "crew" not in ok(master, "bob", "workspace", "list")
    header, _, row = ok(master, "bob", "workspace", "list", "--all").splitlines()
    assert "Archived" in header and row.split()[1:5] == ["crew", "editor", "0", "yes"]
    (tmp_path / "exp.yaml").write_text(CONFIG)
    message = refused(master, "alice", "experiment", "create", "-w", "crew",
                      str(tmp_path / "exp.yaml"), str(tmp_path))
    assert "workspace 'crew' is archived" in message
    ok(master, "alice", "workspace", "unarchive", "crew")
    an_experiment(master, tmp_path, "-w", "crew")
    message = refused(master, "alice", "workspace", "delete", "crew", "--yes")
    assert "still holds 1 experiment" in message and "det experiment move" in message
    declined = run(master, "alice", "workspace", "delete", "crew", stdin="n\n")
    assert declined.exit_code == 1 and "aborted; nothing was deleted" in declined.stderr


def test_an_empty_workspace_is_deleted(master: httpx.WSGITransport) -> None:
    ok(master, "alice", "workspace", "create", "team")
    ok(master, "alice", "project", "create", "-w", "team", "vision")
    assert ok(master, "alice", "workspace", "delete", "team", "--yes") == (
        "Deleted workspace team (1 project(s))\n")
    assert "workspace 'team' not found" in refused(master, "alice", "w", "describe", "team")


def test_project_edit_archive_and_delete(master: httpx.WSGITransport) -> None:
    ok(master, "alice", "workspace", "create", "team")
    ok(master, "alice", "workspace", "add-member", "team", "bob")
    ok(master, "alice", "project", "create", "-w", "team", "vision")
    assert "needs the editor role" in refused(master, "bob", "p", "edit", "team", "vision",
                                              "--description", "x")
    ok(master, "alice", "project", "edit", "team", "vision", "--new_name", "sight",
       "-d", "cnn work")
    described = ok(master, "bob", "project", "describe", "-w", "team", "sight")
    assert "cnn work" in described and "Archived:    no" in described
    ok(master, "alice", "project", "archive", "-w", "team", "sight")
    assert "sight" not in ok(master, "bob", "project", "list", "-w", "team")
    listed = json.loads(ok(master, "bob", "project", "list", "-w", "team", "--all", "--json"))
    assert [(p["name"], p["archived"]) for p in listed["projects"]] == [("sight", True)]
    ok(master, "alice", "project", "unarchive", "team", "sight")
    usage = run(master, "alice", "project", "delete", "sight", "--yes")
    assert usage.exit_code == 2 and "WORKSPACE PROJECT" in usage.output
    assert ok(master, "alice", "project", "delete", "team", "sight", "--yes") == (
        "Deleted project sight of workspace team\n")


def test_user_administration(master: httpx.WSGITransport) -> None:
    assert "only a cluster admin" in refused(master, "alice", "user", "create", "bob")
    assert ok(master, "root", "user", "create", "bob") == "Registered user bob\n"
    assert "getent passwd ghost" in refused(master, "root", "user", "create", "ghost")
    assert "auth.admins" in refused(master, "root", "user", "create", "alice", "--admin")
    ok(master, "bob", "user", "edit", "bob", "--display-name", "Bob B.")
    header, _, row = ok(master, "alice", "user", "list").splitlines()
    assert header.split()[:4] == ["Username", "Display", "name", "Admin"]
    assert row.split()[:5] == ["bob", "Bob", "B.", "no", "yes"]
    assert ok(master, "root", "user", "deactivate", "bob") == "Deactivated user bob\n"
    assert "user 'bob' is deactivated" in refused(master, "bob", "workspace", "list")
    assert "bob" not in ok(master, "root", "user", "list")
    assert "bob" in ok(master, "root", "user", "list", "--all")
    assert "cannot deactivate yourself" in refused(master, "root", "user", "deactivate", "root")
    ok(master, "root", "user", "activate", "bob")
    ok(master, "bob", "workspace", "list")
    ok(master, "root", "user", "edit", "bob", "--active", "false")
    assert "deactivated" in refused(master, "bob", "workspace", "list")


@pytest.mark.parametrize("args, words", [
    (["user", "change-password"], "no passwords"),
    (["user", "change-password", "bob"], "no passwords"),
    (["user", "rename", "bob", "robert"], "cannot rename users"),
    (["user", "edit", "bob", "--admin", "true"], "auth.admins"),
    (["user", "edit", "bob", "--username", "robert"], "cannot rename users"),
    (["user", "create", "bob", "--password", "pw"], "no passwords"),
    (["user", "link-with-agent-user", "bob", "--agent-uid", "5"], "no agent users"),
])
def test_what_the_cluster_owns_is_refused_in_one_line(master: httpx.WSGITransport,
                                                      args: list[str], words: str) -> None:
    message = refused(master, "root", *args)
    assert words in message and len(message.strip().splitlines()) == 1


def test_rbac_on_workspace_roles(master: httpx.WSGITransport) -> None:
    roles = ok(master, "bob", "rbac", "list-roles")
    assert all(name in roles for name in ("viewer", "editor", "admin", "cluster-admin",
                                          "WorkspaceAdmin"))
    assert "cluster-admin" not in ok(master, "bob", "rbac", "list-roles",
                                     "--exclude-global-roles")
    described = ok(master, "bob", "rbac", "describe-role", "WorkspaceAdmin")
    assert described.splitlines()[0].split() == ["Name:", "admin"]
    assert "rename, archive" in described
    assert "no role 'Owner'" in refused(master, "bob", "rbac", "describe-role", "Owner")
    ok(master, "alice", "workspace", "create", "team")
    assert ok(master, "alice", "rbac", "assign-role", "Editor", "-w", "team", "-u", "bob") == (
        "bob is now editor of workspace team\n")
    assert "needs the admin role" in refused(master, "bob", "rbac", "assign-role", "viewer",
                                             "--workspace-name", "team",
                                             "--username-to-assign", "alice")
    table = ok(master, "bob", "rbac", "list-users-roles", "bob").splitlines()
    assert table[0].split() == ["Role", "Workspace", "Through", "group"]
    assert table[2].split() == ["editor", "team", "-"]
    mine = json.loads(ok(master, "root", "rbac", "my-permissions", "--json"))
    assert mine["cluster_admin"] is True
    assert "auth.admins" in refused(master, "alice", "rbac", "assign-role", "ClusterAdmin",
                                    "-u", "bob")
    assert "per workspace" in refused(master, "alice", "rbac", "assign-role", "viewer",
                                      "-u", "bob")
    assert "bob is editor in workspace team, not viewer" in refused(
        master, "alice", "rbac", "unassign-role", "viewer", "-w", "team", "-u", "bob")
    ok(master, "alice", "rbac", "unassign-role", "editor", "-w", "team", "-u", "bob")
    assert "workspace 'team' not found" in refused(master, "bob", "w", "describe", "team")


def test_user_groups_and_their_roles(master: httpx.WSGITransport) -> None:
    assert "only a cluster admin" in refused(master, "alice", "user-group", "create", "ml")
    assert ok(master, "root", "user-group", "create", "ml", "--add-user", "bob") == (
        "Created user group ml with 1 user(s)\n")
    ok(master, "root", "user-group", "add-user", "ml", "carol, dan")
    ok(master, "root", "user-group", "remove-user", "ml", "dan")
    header, _, row = ok(master, "eve", "user-group", "ls").splitlines()
    assert header.split()[:3] == ["ID", "Name", "Users"] and row.split()[1:3] == ["ml", "2"]
    assert ok(master, "eve", "user-group", "list", "--groups-user-belongs-to", "eve").count(
        "\n") == 2
    ok(master, "alice", "workspace", "create", "team")
    assert ok(master, "alice", "rbac", "assign-role", "Editor", "-w", "team", "-g", "ml") == (
        "User group ml is now editor of workspace team\n")
    described = ok(master, "carol", "user-group", "describe", "ml")
    assert "bob" in described and "carol" in described and "editor  team" in described
    assert "User groups:" in ok(master, "carol", "workspace", "describe", "team")
    roles = ok(master, "carol", "rbac", "list-users-roles", "carol").splitlines()
    assert roles[2].split() == ["editor", "team", "ml"]
    assert ok(master, "carol", "rbac", "list-groups-roles", "ml").splitlines()[2].split() == [
        "editor", "team"]
    ok(master, "carol", "project", "create", "-w", "team", "vision")
    assert "has no role in workspace team" in refused(
        master, "alice", "rbac", "unassign-role", "viewer", "-w", "team", "-g", "other")
    ok(master, "alice", "rbac", "unassign-role", "editor", "-w", "team", "-g", "ml")
    assert "workspace 'team' not found" in refused(master, "carol", "w", "describe", "team")
    ok(master, "root", "user-group", "change-name", "ml", "ai")
    assert ok(master, "root", "user-group", "delete", "ai", "--yes") == (
        "Deleted user group ai (0 workspace role(s))\n")


def test_one_step_commands_say_exactly_what_they_did(master: httpx.WSGITransport) -> None:
    """The commands that do one thing to one name (archive/unarchive, activate/deactivate,
    add-user/remove-user, assign-role/unassign-role to a user and a group at once) print
    the words they always did, one line each."""
    ok(master, "alice", "workspace", "create", "team")
    ok(master, "alice", "project", "create", "-w", "team", "sight")
    assert ok(master, "alice", "project", "archive", "team", "sight") == (
        "Archived project sight of workspace team\n")
    assert ok(master, "alice", "project", "unarchive", "-w", "team", "sight") == (
        "Unarchived project sight of workspace team\n")
    assert ok(master, "alice", "workspace", "archive", "team") == "Archived workspace team\n"
    assert ok(master, "alice", "workspace", "unarchive", "team") == "Unarchived workspace team\n"
    assert ok(master, "alice", "model", "create", "digits", "--json").count('"digits"') == 1
    assert ok(master, "alice", "model", "archive", "digits") == "Archived model digits\n"
    assert ok(master, "alice", "model", "unarchive", "digits") == "Unarchived model digits\n"
    ok(master, "bob", "user", "whoami")
    assert ok(master, "root", "user", "deactivate", "bob") == "Deactivated user bob\n"
    assert ok(master, "root", "user", "activate", "bob") == "Activated user bob\n"
    ok(master, "root", "user-group", "create", "ml")
    assert ok(master, "root", "user-group", "add-user", "ml", "bob, alice") == (
        "Added bob, alice to user group ml\n")
    assert ok(master, "root", "user-group", "remove-user", "ml", "alice") == (
        "Removed alice from user group ml\n")
    both = ("-w", "team", "-u", "bob", "-g", "ml")
    assert ok(master, "alice", "rbac", "assign-role", "viewer", *both) == (
        "bob is now viewer of workspace team\nUser group ml is now viewer of workspace team\n")
    assert ok(master, "alice", "rbac", "unassign-role", "viewer", *both) == (
        "bob is no longer viewer (nor a member) of workspace team\n"
        "User group ml is no longer viewer of workspace team\n")
    usage = run(master, "alice", "rbac", "assign-role", "viewer", "-w", "team")
    assert usage.exit_code == 2 and "give -u/--username-to-assign USER" in usage.output
