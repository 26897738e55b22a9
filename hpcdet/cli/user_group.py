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
from hpcdet.cli.actions import show_command
from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import format_time, print_answer, render_fields, render_table


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
    print_answer(answer, as_json, lambda a: f"Created user group {group_name} with "
                 f"{a['group']['num_members']} user(s)")


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
    print_answer(answer, as_json, lambda a: groups_table(a.get("groups") or []))


def group_text(g: Mapping[str, Any]) -> str:
    """What ``det user-group describe`` prints: facts, users, workspace roles."""
    return "\n".join([
        f"User group {g.get('name')}",
        render_fields([("ID", g.get("id")), ("Created by", g.get("created_by")),
                       ("Created", format_time(g.get("created_at")))]),
        "\nUsers:", render_table(["User"], [[u] for u in g.get("users") or []]),
        "\nRoles:", group_roles_table(g.get("workspaces") or [])])


def group_roles_table(workspaces: Sequence[Mapping[str, Any]]) -> str:
    """A group's roles, one row a workspace (``det user-group describe``, ``det rbac
    list-groups-roles``)."""
    return render_table(["Role", "Workspace"], [[w.get("role"), w.get("workspace")]
                                                for w in workspaces])


# group_path takes its parts by position; show_command passes GROUP_NAME by name.
user_group.add_command(show_command(
    "describe", "Show GROUP_NAME: its users and its roles in the workspaces you see.",
    lambda group_name: group_path(group_name), lambda a: group_text(a["group"]),
    click.argument("group_name")))


def _membership_command(name: str, change: str, help_text: str, done: str) -> click.Command:
    """``NAME GROUP_NAME USERNAMES``: ask the master to ``change`` (``add`` or ``remove``)
    the users in the group, then print ``done`` with the users and the group."""

    @user_group.command(name, help=help_text)
    @click.argument("group_name")
    @click.argument("usernames")
    @pass_state
    def command(state: CliState, group_name: str, usernames: str) -> None:
        names = _names(usernames)
        state.client().post(group_path(group_name, "users"), {change: names})
        click.echo(done.format(users=", ".join(names), group=group_name))

    return command


_membership_command("add-user", "add", "Add USERNAMES (comma-separated) to GROUP_NAME "
                    "(cluster admins).", "Added {users} to user group {group}")
_membership_command("remove-user", "remove", "Remove USERNAMES (comma-separated) from "
                    "GROUP_NAME (cluster admins).", "Removed {users} from user group {group}")


@user_group.command("change-name")
@click.argument("old_group_name")
@click.argument("new_group_name")
@pass_state
def change_name(state: CliState, old_group_name: str, new_group_name: str) -> None:
    """Rename user group OLD_GROUP_NAME (cluster admins)."""
    state.client().patch(group_path(old_group_name), {"name": new_group_name})
    click.echo(f"Renamed user group {old_group_name} to {new_group_name}")


__all__ = ["user_group"]
