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
from hpcdet.cli.actions import show_command, verb_command
from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import format_time, print_answer, render_fields, render_table

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
    print_answer(answer, as_json, lambda a: f"Created workspace {a['workspace']['name']}")


ALL_OPTION = click.option("--all", "-a", "show_all", is_flag=True,
                          help="Include archived ones.")


@workspace.command("list")
@ALL_OPTION
@JSON_OPTION
@pass_state
def list_workspaces(state: CliState, show_all: bool, as_json: bool) -> None:
    """List the workspaces you are a member of (archived ones with --all)."""
    answer = state.client().get("/workspaces", params={"archived": "1"} if show_all else None)
    print_answer(answer, as_json, lambda a: workspaces_table(a.get("workspaces") or []))


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


def workspace_text(w: Mapping[str, Any]) -> str:
    """What ``det workspace describe`` prints: facts, members, user groups, projects."""
    parts = [f"Workspace {w.get('name')}",
             render_fields([("ID", w.get("id")), ("Created by", w.get("created_by")),
                            ("Created", format_time(w.get("created_at"))),
                            ("Your role", w.get("role") or ""),
                            ("Archived", _yes_no(w.get("archived"))),
                            ("Experiments", w.get("num_experiments"))]),
             "\nMembers:",
             render_table(["User", "Role"], [[m.get("user"), m.get("role")]
                                             for m in w.get("members") or []])]
    if w.get("groups"):
        parts += ["\nUser groups:", render_table(["Group", "Role"], [
            [g.get("group"), g.get("role")] for g in w["groups"]])]
    parts += ["\nProjects:", projects_table(w.get("projects") or [])]
    return "\n".join(parts)


workspace.add_command(show_command(
    "describe", "Show workspace NAME: its members with their roles, and its projects.",
    lambda name: _path("workspaces", name), lambda a: workspace_text(a["workspace"]),
    click.argument("name")))


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
    print_answer(answer, as_json, lambda a: f"Created project {name} in workspace {workspace}")


@project.command("list")
@WORKSPACE_OPTION
@ALL_OPTION
@JSON_OPTION
@pass_state
def list_projects(state: CliState, workspace: str, show_all: bool, as_json: bool) -> None:
    """List a workspace's projects (archived ones with --all)."""
    answer = state.client().get(_path("workspaces", workspace, "projects"),
                                params={"archived": "1"} if show_all else None)
    print_answer(answer, as_json, lambda a: projects_table(a.get("projects") or []))


def projects_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The table of projects ``det project list`` and ``det workspace describe`` show."""
    return render_table(["ID", "Name", "Experiments", "Archived", "Description", "Created by"],
                        [[p.get("id"), p.get("name"), p.get("num_experiments"),
                          _yes_no(p.get("archived")), p.get("description"),
                          p.get("created_by")] for p in rows])


def project_text(p: Mapping[str, Any]) -> str:
    """What ``det project describe`` prints."""
    return f"Project {p.get('name')}\n" + render_fields([
        ("ID", p.get("id")), ("Workspace", p.get("workspace")),
        ("Description", p.get("description")), ("Archived", _yes_no(p.get("archived"))),
        ("Experiments", p.get("num_experiments")), ("Created by", p.get("created_by")),
        ("Created", format_time(p.get("created_at")))])


project.add_command(show_command(
    "describe", "Show project NAME of a workspace.",
    lambda workspace, name: _path("workspaces", workspace, "projects", name),
    lambda a: project_text(a["project"]), WORKSPACE_OPTION, click.argument("name")))


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
    print_answer(answer, as_json, lambda a: f"Renamed workspace {name} to {a['workspace']['name']}")


def _workspace_path(name: str, *rest: str) -> str:
    return _path("workspaces", name, *rest)


workspace.add_command(verb_command("archive", "Archive workspace NAME: nothing new goes in, "
                                   "lists leave it out; its admins only.", "name",
                                   _workspace_path, "Archived workspace {}"))
workspace.add_command(verb_command("unarchive", "Unarchive workspace NAME; its admins only.",
                                   "name", _workspace_path, "Unarchived workspace {}"))


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
    print_answer(answer, as_json,
                 lambda a: f"Updated project {a['project']['name']} in workspace {where}")


def _project_verb(verb: str, help_text: str, done: str) -> click.Command:
    """``det project VERB [WORKSPACE] PROJECT``: POST to the project's VERB route, then print
    ``done`` (``Archived``...) with the project and its workspace."""

    @project.command(verb, help=help_text)
    @OPTIONAL_WORKSPACE
    @PROJECT_NAMES
    @pass_state
    def command(state: CliState, workspace: str | None, names: tuple[str, ...]) -> None:
        where, name = _workspace_and_project(workspace, names)
        state.client().post(_path("workspaces", where, "projects", name, verb))
        click.echo(f"{done} project {name} of workspace {where}")

    return command


_project_verb("archive", "Archive a project: no new experiments, lists leave it out (editor "
              "role needed).", "Archived")
_project_verb("unarchive", "Unarchive a project (editor role needed).", "Unarchived")


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
