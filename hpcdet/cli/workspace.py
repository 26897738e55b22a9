"""``det workspace`` (alias ``w``) and ``det project`` (alias ``p``), as in Determined.

A workspace groups users (members with the role viewer, editor or admin) and the
experiments, tasks and templates they share; a project groups experiments inside a
workspace. ``det experiment create --workspace W [--project P]`` puts one there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.main import CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import format_time, print_json, render_fields, render_table

ROLES = ("viewer", "editor", "admin")


def _path(*parts: str) -> str:
    """A URL path with every part quoted (a name never changes the route)."""
    return "/" + "/".join(quote(part, safe="") for part in parts)


@click.group(cls=AliasedGroup, aliases={"ls": "list"})
def workspace() -> None:
    """Manage workspaces: who may see and change the experiments shared in them."""


@workspace.command("create")
@click.argument("name")
@JSON_OPTION
@pass_state
def create_workspace(state: CliState, name: str, as_json: bool) -> None:
    """Create workspace NAME; you become its admin."""
    answer = state.client().post("/workspaces", {"name": name})
    if as_json:
        print_json(answer)
    else:
        click.echo(f"Created workspace {answer['workspace']['name']}")


@workspace.command("list")
@JSON_OPTION
@pass_state
def list_workspaces(state: CliState, as_json: bool) -> None:
    """List the workspaces you are a member of."""
    answer = state.client().get("/workspaces")
    if as_json:
        print_json(answer)
    else:
        click.echo(workspaces_table(answer.get("workspaces") or []))


def workspaces_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det workspace list`` shows."""
    return render_table(["ID", "Name", "Your role", "Experiments", "Created by", "Created"],
                        [[w.get("id"), w.get("name"), w.get("role"), w.get("num_experiments"),
                          w.get("created_by"), format_time(w.get("created_at"))]
                         for w in rows])


@workspace.command("describe")
@click.argument("name")
@JSON_OPTION
@pass_state
def describe_workspace(state: CliState, name: str, as_json: bool) -> None:
    """Show workspace NAME: its members with their roles, and its projects."""
    answer = state.client().get(_path("workspaces", name))
    if as_json:
        print_json(answer)
        return
    w = answer["workspace"]
    click.echo(f"Workspace {w.get('name')}")
    click.echo(render_fields([("ID", w.get("id")), ("Created by", w.get("created_by")),
                              ("Created", format_time(w.get("created_at"))),
                              ("Your role", w.get("role")),
                              ("Experiments", w.get("num_experiments"))]))
    click.echo("\nMembers:")
    click.echo(render_table(["User", "Role"], [[m.get("user"), m.get("role")]
                                               for m in w.get("members") or []]))
    click.echo("\nProjects:")
    click.echo(projects_table(w.get("projects") or []))


@workspace.command("add-member")
@click.argument("name")
@click.argument("user")
@click.option("--role", type=click.Choice(ROLES), default="viewer", show_default=True,
              help="viewer: reads; editor: also creates and changes; admin: also manages "
                   "members.")
@pass_state
def add_member(state: CliState, name: str, user: str, role: str) -> None:
    """Make USER a member of workspace NAME (or change their role); workspace admins only."""
    state.client().put(_path("workspaces", name, "members", user), {"role": role})
    click.echo(f"{user} is now {role} of workspace {name}")


@workspace.command("remove-member")
@click.argument("name")
@click.argument("user")
@pass_state
def remove_member(state: CliState, name: str, user: str) -> None:
    """Take USER out of workspace NAME; workspace admins only."""
    state.client().delete(_path("workspaces", name, "members", user))
    click.echo(f"Removed {user} from workspace {name}")


# ---- projects ----------------------------------------------------------------------------


@click.group(cls=AliasedGroup, aliases={"ls": "list"})
def project() -> None:
    """Manage projects: named groups of experiments inside a workspace."""


WORKSPACE_OPTION = click.option("-w", "--workspace", required=True, metavar="NAME",
                                help="The workspace the project is in.")


@project.command("create")
@WORKSPACE_OPTION
@click.argument("name")
@click.option("-d", "--description", default="", help="What the project is for.")
@JSON_OPTION
@pass_state
def create_project(state: CliState, workspace: str, name: str, description: str,
                   as_json: bool) -> None:
    """Create project NAME in a workspace (needs the editor role there)."""
    answer = state.client().post(_path("workspaces", workspace, "projects"),
                                 {"name": name, "description": description})
    if as_json:
        print_json(answer)
    else:
        click.echo(f"Created project {name} in workspace {workspace}")


@project.command("list")
@WORKSPACE_OPTION
@JSON_OPTION
@pass_state
def list_projects(state: CliState, workspace: str, as_json: bool) -> None:
    """List a workspace's projects."""
    answer = state.client().get(_path("workspaces", workspace, "projects"))
    if as_json:
        print_json(answer)
    else:
        click.echo(projects_table(answer.get("projects") or []))


def projects_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The table of projects ``det project list`` and ``det workspace describe`` show."""
    return render_table(["ID", "Name", "Experiments", "Description", "Created by"],
                        [[p.get("id"), p.get("name"), p.get("num_experiments"),
                          p.get("description"), p.get("created_by")] for p in rows])


@project.command("describe")
@WORKSPACE_OPTION
@click.argument("name")
@JSON_OPTION
@pass_state
def describe_project(state: CliState, workspace: str, name: str, as_json: bool) -> None:
    """Show project NAME of a workspace."""
    answer = state.client().get(_path("workspaces", workspace, "projects", name))
    if as_json:
        print_json(answer)
        return
    p = answer["project"]
    click.echo(f"Project {p.get('name')}")
    click.echo(render_fields([("ID", p.get("id")), ("Workspace", p.get("workspace")),
                              ("Description", p.get("description")),
                              ("Experiments", p.get("num_experiments")),
                              ("Created by", p.get("created_by")),
                              ("Created", format_time(p.get("created_at")))]))
