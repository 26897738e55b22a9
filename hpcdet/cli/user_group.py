"""``det user-group``: Determined's user groups.

Cluster admins (``auth.admins``) create groups and add or remove their users; a workspace's
admins give a group a role there with ``det rbac assign-role ROLE -w WORKSPACE -g GROUP``,
and each of its users then has at least that role in the workspace.
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


def group_path(*parts: str) -> str:
    """``/groups/...`` with every part quoted."""
    return "/" + "/".join(quote(part, safe="") for part in ("groups", *parts))


def _names(usernames: str) -> list[str]:
    """Determined's comma-separated list of user names."""
    names = [n.strip() for n in usernames.split(",") if n.strip()]
    if not names:
        raise click.UsageError("name at least one user (a comma-separated list)")
    return names


@click.group("user-group", cls=AliasedGroup, aliases={"ls": "list"})
def user_group() -> None:
    """Manage user groups; give them workspace roles with det rbac assign-role -g."""


@user_group.command("create")
@click.argument("group_name")
@click.option("--add-user", "add_users", multiple=True, metavar="USER",
              help="A user to put in the group (repeat it for more).")
@JSON_OPTION
@pass_state
def create(state: CliState, group_name: str, add_users: tuple[str, ...],
           as_json: bool) -> None:
    """Create user group GROUP_NAME (cluster admins)."""
    answer = state.client().post("/groups", {"name": group_name, "users": list(add_users)})
    if as_json:
        print_json(answer)
    else:
        click.echo(f"Created user group {group_name} with "
                   f"{answer['group']['num_members']} user(s)")


@user_group.command("delete")
@click.argument("group_name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_state
def delete(state: CliState, group_name: str, yes: bool) -> None:
    """Delete user group GROUP_NAME and its workspace roles (cluster admins)."""
    if not yes and not click.confirm(f"Delete user group {group_name} and its roles?",
                                     err=True):
        raise CliError("aborted; nothing was deleted")
    answer = state.client().delete(group_path(group_name))
    click.echo(f"Deleted user group {group_name} ({answer.get('roles_removed', 0)} "
               "workspace role(s))")


def groups_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det user-group list`` shows."""
    return render_table(["ID", "Name", "Users", "Created by", "Created"], [
        [g.get("id"), g.get("name"), g.get("num_members"), g.get("created_by"),
         format_time(g.get("created_at"))] for g in rows])


@user_group.command("list")
@click.option("--groups-user-belongs-to", metavar="USER",
              help="Only the groups USER is in.")
@JSON_OPTION
@pass_state
def list_groups(state: CliState, groups_user_belongs_to: str | None, as_json: bool) -> None:
    """List the user groups."""
    params = {"user": groups_user_belongs_to} if groups_user_belongs_to else None
    answer = state.client().get("/groups", params=params)
    if as_json:
        print_json(answer)
    else:
        click.echo(groups_table(answer.get("groups") or []))


@user_group.command("describe")
@click.argument("group_name")
@JSON_OPTION
@pass_state
def describe(state: CliState, group_name: str, as_json: bool) -> None:
    """Show GROUP_NAME: its users and its roles in the workspaces you see."""
    answer = state.client().get(group_path(group_name))
    if as_json:
        print_json(answer)
        return
    g = answer["group"]
    click.echo(f"User group {g.get('name')}")
    click.echo(render_fields([("ID", g.get("id")), ("Created by", g.get("created_by")),
                              ("Created", format_time(g.get("created_at")))]))
    click.echo("\nUsers:")
    click.echo(render_table(["User"], [[u] for u in g.get("users") or []]))
    click.echo("\nRoles:")
    click.echo(render_table(["Role", "Workspace"], [[w.get("role"), w.get("workspace")]
                                                    for w in g.get("workspaces") or []]))


@user_group.command("add-user")
@click.argument("group_name")
@click.argument("usernames")
@pass_state
def add_user(state: CliState, group_name: str, usernames: str) -> None:
    """Add USERNAMES (comma-separated) to GROUP_NAME (cluster admins)."""
    names = _names(usernames)
    state.client().post(group_path(group_name, "users"), {"add": names})
    click.echo(f"Added {', '.join(names)} to user group {group_name}")


@user_group.command("remove-user")
@click.argument("group_name")
@click.argument("usernames")
@pass_state
def remove_user(state: CliState, group_name: str, usernames: str) -> None:
    """Remove USERNAMES (comma-separated) from GROUP_NAME (cluster admins)."""
    names = _names(usernames)
    state.client().post(group_path(group_name, "users"), {"remove": names})
    click.echo(f"Removed {', '.join(names)} from user group {group_name}")


@user_group.command("change-name")
@click.argument("old_group_name")
@click.argument("new_group_name")
@pass_state
def change_name(state: CliState, old_group_name: str, new_group_name: str) -> None:
    """Rename user group OLD_GROUP_NAME (cluster admins)."""
    state.client().patch(group_path(old_group_name), {"name": new_group_name})
    click.echo(f"Renamed user group {old_group_name} to {new_group_name}")


__all__ = ["user_group"]
