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
from hpcdet.cli.main import CliError, CliState, pass_state
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


ALL_OPTION = click.option("--all", "-a", "show_all", is_flag=True,
                          help="Include archived ones.")


@workspace.command("list")
@ALL_OPTION
@JSON_OPTION
@pass_state
def list_workspaces(state: CliState, show_all: bool, as_json: bool) -> None:
    """List the workspaces you are a member of (archived ones with --all)."""
    answer = state.client().get("/workspaces", params={"archived": "1"} if show_all else None)
    if as_json:
        print_json(answer)
    else:
        click.echo(workspaces_table(answer.get("workspaces") or []))


def workspaces_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det workspace list`` shows."""
    return render_table(["ID", "Name", "Your role", "Experiments", "Archived", "Created by",
                         "Created"],
                        [[w.get("id"), w.get("name"), w.get("role") or "",
                          w.get("num_experiments"), _yes_no(w.get("archived")),
                          w.get("created_by"), format_time(w.get("created_at"))]
                         for w in rows])


def _yes_no(value: Any) -> str:
    return "yes" if value else "no"


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
                              ("Your role", w.get("role") or ""),
                              ("Archived", _yes_no(w.get("archived"))),
                              ("Experiments", w.get("num_experiments"))]))
    click.echo("\nMembers:")
    click.echo(render_table(["User", "Role"], [[m.get("user"), m.get("role")]
                                               for m in w.get("members") or []]))
    if w.get("groups"):
        click.echo("\nUser groups:")
        click.echo(render_table(["Group", "Role"], [[g.get("group"), g.get("role")]
                                                    for g in w["groups"]]))
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
@ALL_OPTION
@JSON_OPTION
@pass_state
def list_projects(state: CliState, workspace: str, show_all: bool, as_json: bool) -> None:
    """List a workspace's projects (archived ones with --all)."""
    answer = state.client().get(_path("workspaces", workspace, "projects"),
                                params={"archived": "1"} if show_all else None)
    if as_json:
        print_json(answer)
    else:
        click.echo(projects_table(answer.get("projects") or []))


def projects_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The table of projects ``det project list`` and ``det workspace describe`` show."""
    return render_table(["ID", "Name", "Experiments", "Archived", "Description", "Created by"],
                        [[p.get("id"), p.get("name"), p.get("num_experiments"),
                          _yes_no(p.get("archived")), p.get("description"),
                          p.get("created_by")] for p in rows])


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
                              ("Archived", _yes_no(p.get("archived"))),
                              ("Experiments", p.get("num_experiments")),
                              ("Created by", p.get("created_by")),
                              ("Created", format_time(p.get("created_at")))]))


# ---- edit, archive, delete ---------------------------------------------------------------


@workspace.command("edit")
@click.argument("name")
@click.option("--name", "new_name", required=True, metavar="NEW",
              help="The workspace's new name.")
@JSON_OPTION
@pass_state
def edit_workspace(state: CliState, name: str, new_name: str, as_json: bool) -> None:
    """Rename workspace NAME; its admins only."""
    answer = state.client().patch(_path("workspaces", name), {"name": new_name})
    if as_json:
        print_json(answer)
    else:
        click.echo(f"Renamed workspace {name} to {answer['workspace']['name']}")


@workspace.command("archive")
@click.argument("name")
@pass_state
def archive_workspace(state: CliState, name: str) -> None:
    """Archive workspace NAME: nothing new goes in, lists leave it out; its admins only."""
    state.client().post(_path("workspaces", name, "archive"))
    click.echo(f"Archived workspace {name}")


@workspace.command("unarchive")
@click.argument("name")
@pass_state
def unarchive_workspace(state: CliState, name: str) -> None:
    """Unarchive workspace NAME; its admins only."""
    state.client().post(_path("workspaces", name, "unarchive"))
    click.echo(f"Unarchived workspace {name}")


@workspace.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_state
def delete_workspace(state: CliState, name: str, yes: bool) -> None:
    """Delete workspace NAME with its projects; its admins only.

    A workspace that still holds experiments, tasks, templates or models is not deleted:
    the master says how many and how to move or delete them first.
    """
    if not yes and not click.confirm(f"Delete workspace {name} and its projects? This cannot "
                                     "be undone", err=True):
        raise CliError("aborted; nothing was deleted")
    answer = state.client().delete(_path("workspaces", name))
    click.echo(f"Deleted workspace {name} ({answer.get('projects_deleted', 0)} project(s))")


def _workspace_and_project(workspace: str | None, names: tuple[str, ...]) -> tuple[str, str]:
    """``(workspace, project)`` from ``WORKSPACE PROJECT`` (Determined's spelling) or
    ``-w WORKSPACE PROJECT`` (hpcdet's, as ``det project create``)."""
    if len(names) == 2 and workspace is None:
        return names[0], names[1]
    if len(names) == 1 and workspace is not None:
        return workspace, names[0]
    raise click.UsageError("name the project as WORKSPACE PROJECT or -w WORKSPACE PROJECT")


OPTIONAL_WORKSPACE = click.option("-w", "--workspace", metavar="NAME",
                                  help="The workspace the project is in (or give it first).")
PROJECT_NAMES = click.argument("names", nargs=-1, required=True,
                               metavar="[WORKSPACE] PROJECT")


@project.command("edit")
@OPTIONAL_WORKSPACE
@PROJECT_NAMES
@click.option("--name", "--new-name", "--new_name", "new_name", metavar="NEW",
              help="The project's new name (--new_name: Determined's spelling).")
@click.option("-d", "--description", help="What the project is for.")
@JSON_OPTION
@pass_state
def edit_project(state: CliState, workspace: str | None, names: tuple[str, ...],
                 new_name: str | None, description: str | None, as_json: bool) -> None:
    """Rename a project or set its description (needs the editor role there)."""
    where, name = _workspace_and_project(workspace, names)
    changes = {k: v for k, v in (("name", new_name), ("description", description))
               if v is not None}
    if not changes:
        raise click.UsageError("give --name and/or --description")
    answer = state.client().patch(_path("workspaces", where, "projects", name), changes)
    if as_json:
        print_json(answer)
    else:
        click.echo(f"Updated project {answer['project']['name']} in workspace {where}")


@project.command("archive")
@OPTIONAL_WORKSPACE
@PROJECT_NAMES
@pass_state
def archive_project(state: CliState, workspace: str | None, names: tuple[str, ...]) -> None:
    """Archive a project: no new experiments, lists leave it out (editor role needed)."""
    where, name = _workspace_and_project(workspace, names)
    state.client().post(_path("workspaces", where, "projects", name, "archive"))
    click.echo(f"Archived project {name} of workspace {where}")


@project.command("unarchive")
@OPTIONAL_WORKSPACE
@PROJECT_NAMES
@pass_state
def unarchive_project(state: CliState, workspace: str | None, names: tuple[str, ...]) -> None:
    """Unarchive a project (editor role needed)."""
    where, name = _workspace_and_project(workspace, names)
    state.client().post(_path("workspaces", where, "projects", name, "unarchive"))
    click.echo(f"Unarchived project {name} of workspace {where}")


@project.command("delete")
@OPTIONAL_WORKSPACE
@PROJECT_NAMES
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_state
def delete_project(state: CliState, workspace: str | None, names: tuple[str, ...],
                   yes: bool) -> None:
    """Delete a project without experiments (editor role needed)."""
    where, name = _workspace_and_project(workspace, names)
    if not yes and not click.confirm(f"Delete project {name} of workspace {where}?",
                                     err=True):
        raise CliError("aborted; nothing was deleted")
    state.client().delete(_path("workspaces", where, "projects", name))
    click.echo(f"Deleted project {name} of workspace {where}")
