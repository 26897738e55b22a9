"""``--help`` on every command (click's advice for lazily loaded commands), aliases, and
what ``det --help`` imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hang_guard import HANG_GUARD_S

from hpcdet import __version__
from hpcdet.cli.main import cli

REPO = Path(__file__).resolve().parents[3]

EXPECTED_COMMANDS = {
    (),
    ("experiment",), ("experiment", "create"), ("experiment", "list"),
    ("experiment", "describe"), ("experiment", "config"), ("experiment", "wait"),
    ("experiment", "kill"), ("experiment", "logs"),
    ("experiment", "list-trials"), ("experiment", "list-checkpoints"),
    ("experiment", "pause"), ("experiment", "activate"), ("experiment", "cancel"),
    ("experiment", "archive"), ("experiment", "unarchive"),
    ("checkpoint",), ("checkpoint", "describe"), ("checkpoint", "download"),
    ("trial",), ("trial", "list"), ("trial", "describe"), ("trial", "logs"),
    ("master",), ("master", "info"),
    ("preview-search",),
    ("template",), ("template", "list"), ("template", "describe"), ("template", "create"),
    ("template", "set"), ("template", "remove"),
    ("resource-pool",), ("resource-pool", "list"),
    ("job",), ("job", "list"), ("job", "update"), ("job", "update-batch"),
    ("sbatch",), ("qsub",),
    ("task",), ("task", "list"), ("task", "describe"), ("task", "logs"), ("task", "kill"),
    ("workspace",), ("workspace", "create"), ("workspace", "list"), ("workspace", "describe"),
    ("workspace", "add-member"), ("workspace", "remove-member"),
    ("project",), ("project", "create"), ("project", "list"), ("project", "describe"),
    ("user",), ("user", "login"), ("user", "logout"), ("user", "whoami"), ("user", "list"),
    ("user", "web-login"), ("user", "token"), ("user", "token", "create"),
    ("user", "token", "list"), ("user", "token", "revoke"), ("user", "token", "describe"),
    ("token",), ("token", "create"), ("token", "list"), ("token", "revoke"),
    ("token", "describe"),
    # Determined's daily commands (docs/cli.md)
    ("version",), ("master", "config"), ("master", "logs"), ("trial", "kill"),
    ("checkpoint", "list"), ("checkpoint", "delete"),
    ("experiment", "set"), *(("experiment", "set", name) for name in (
        "description", "name", "labels", "max-slots", "weight", "priority", "gc-policy")),
    ("experiment", "label"), ("experiment", "label", "add"), ("experiment", "label", "remove"),
    ("experiment", "move"), ("experiment", "delete"), ("experiment", "continue"),
    ("experiment", "fork"), ("experiment", "download-model-def"),
    ("model",), ("model", "create"), ("model", "list"), ("model", "describe"),
    ("model", "register-version"), ("model", "list-versions"), ("model", "delete"),
    ("model", "move"), ("model", "archive"), ("model", "unarchive"), ("model", "download"),
    ("cmd",), ("cmd", "run"), ("cmd", "list"), ("cmd", "describe"), ("cmd", "logs"),
    ("cmd", "kill"),
    ("shell",), ("shell", "start"), ("shell", "open"), ("shell", "list"), ("shell", "logs"),
    ("shell", "kill"),
    ("tensorboard",), ("tensorboard", "start"), ("tensorboard", "open"),
    ("tensorboard", "list"), ("tensorboard", "describe"), ("tensorboard", "logs"),
    ("tensorboard", "kill"),
    ("notebook",), ("notebook", "start"), ("notebook", "open"), ("notebook", "list"),
    ("notebook", "describe"), ("notebook", "logs"), ("notebook", "kill"),
    # Workspace, project and user administration, roles, groups (issue 29 item 5)
    *(("workspace", name) for name in ("edit", "archive", "unarchive", "delete")),
    *(("project", name) for name in ("edit", "archive", "unarchive", "delete")),
    *(("user", name) for name in ("create", "activate", "deactivate", "edit",
                                  "change-password", "rename", "link-with-agent-user")),
    ("rbac",), *(("rbac", name) for name in (
        "list-roles", "describe-role", "list-users-roles", "list-groups-roles",
        "assign-role", "unassign-role", "my-permissions")),
    ("user-group",), *(("user-group", name) for name in (
        "create", "delete", "list", "describe", "add-user", "remove-user", "change-name")),
}


def _command_paths(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{' '.join(path + (name,))} does not load"
            paths += _command_paths(sub, path + (name,))
    return paths


ALL_COMMANDS = _command_paths(cli)


def test_the_tree_is_the_documented_one() -> None:
    assert set(ALL_COMMANDS) == EXPECTED_COMMANDS


@pytest.mark.parametrize("path", ALL_COMMANDS, ids=lambda p: " ".join(p) or "det")
def test_help_on_every_command(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="det")
    assert result.exit_code == 0, result.output
    assert f"Usage: det {' '.join(path)}".rstrip() in result.output


@pytest.mark.parametrize("args, usage", [
    (["e", "--help"], "Usage: det experiment "),
    (["e", "ls", "--help"], "Usage: det experiment list "),
    (["e", "lt", "--help"], "Usage: det experiment list-trials "),
    (["t", "ls", "--help"], "Usage: det trial list "),
    (["u", "whoami", "--help"], "Usage: det user whoami "),
    (["tkn", "ls", "--help"], "Usage: det token list "),
    (["e", "unpause", "--help"], "Usage: det experiment activate "),
])
def test_aliases_resolve_to_canonical_names(args: list[str], usage: str) -> None:
    result = CliRunner().invoke(cli, args, prog_name="det")
    assert result.exit_code == 0, result.output
    assert usage in result.output


def test_aliases_are_shown_next_to_commands() -> None:
    result = CliRunner().invoke(cli, ["experiment", "--help"], prog_name="det")
    assert "list (ls)" in result.output
    assert "list-trials (lt)" in result.output


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"], prog_name="det")
    assert result.exit_code == 0
    assert result.output.strip() == f"det {__version__}"


def test_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["experiments"], prog_name="det")
    assert result.exit_code == 2
    assert "No such command 'experiments'" in result.stderr


HEAVY = ("torch", "sqlalchemy", "flask", "httpx", "yaml", "pathspec", "boto3", "botocore",
         "google.cloud.storage", "google.api_core", "azure.storage.blob", "azure.core")
_PROBE = """
import sys
from hpcdet.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert exc.code == 0, exc.code
print("IMPORTED:", *(m for m in {heavy!r} if m in sys.modules))
"""


@pytest.mark.parametrize("args", [["--help"], ["experiment", "--help"],
                                  ["trial", "logs", "--help"], ["master", "--help"],
                                  ["sbatch", "--help"], ["qsub", "--help"],
                                  ["checkpoint", "download", "--help"]])
def test_help_imports_nothing_heavy(args: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    probe = _PROBE.format(heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True,
                          text=True, env=env, check=True, timeout=HANG_GUARD_S)
    assert "Usage: det" in done.stdout
    assert done.stdout.rsplit("IMPORTED:", 1)[1].split() == []
