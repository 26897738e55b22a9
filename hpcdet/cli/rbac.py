"""``det rbac``: Determined's role commands on hpcdet's roles.

hpcdet's roles are fixed: ``viewer``, ``editor`` and ``admin`` of a workspace (a member's
role), and ``cluster-admin`` (named in ``auth.admins`` of master.yaml, not assigned at run
time). Determined's role names (Viewer, Editor, WorkspaceAdmin, ClusterAdmin) are accepted.
``assign-role ROLE -w WORKSPACE -u USER`` makes USER that member of the workspace (as
``det workspace add-member``); ``-g GROUP`` gives a user group (``det user-group``) that role
there. ``unassign-role`` takes it away.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple
from urllib.parse import quote

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.actions import show_command
from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import print_answer, print_json, render_fields, render_table
from hpcdet.cli.user_group import group_path, group_roles_table

GLOBAL_ROLES = ("hpcdet's roles are per workspace: give -w/--workspace-name; cluster admins "
                "are named in auth.admins of the master's master.yaml, not assigned at run "
                "time")


def _path(*parts: str) -> str:
    return "/" + "/".join(quote(part, safe="") for part in parts)


@click.group(cls=AliasedGroup)
def rbac() -> None:
    """See roles and assign workspace roles (viewer, editor, admin) to users."""


def _roles(state: CliState) -> list[dict[str, Any]]:
    roles: list[dict[str, Any]] = state.client().get("/rbac/roles").get("roles") or []
    return roles


def _role_named(state: CliState, name: str) -> dict[str, Any]:
    """The role called ``name`` (hpcdet's or Determined's name, any case), or an error."""
    roles = _roles(state)
    for role in roles:
        if name.lower() in (n.lower() for n in [role["name"], *role["determined_names"]]):
            return role
    raise CliError(f"no role {name!r}: hpcdet's roles are "
                   f"{', '.join(r['name'] for r in roles)} (det rbac list-roles)")


def roles_table(roles: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det rbac list-roles`` shows."""
    return render_table(["Name", "Scope", "Determined's name", "Assignable"], [
        [r.get("name"), r.get("scope"), ", ".join(r.get("determined_names") or []),
         "yes" if r.get("assignable") else f"no: {r.get('note', '')}"] for r in roles])


@rbac.command("list-roles")
@click.option("--exclude-global-roles", is_flag=True,
              help="Leave out cluster-wide roles (cluster-admin).")
@JSON_OPTION
@pass_state
def list_roles(state: CliState, exclude_global_roles: bool, as_json: bool) -> None:
    """List the roles: workspace viewer, editor, admin, and the cluster admin."""
    roles = [r for r in _roles(state)
             if not (exclude_global_roles and r.get("scope") == "cluster")]
    print_answer({"roles": roles}, as_json, lambda a: roles_table(a["roles"]))


@rbac.command("describe-role")
@click.argument("role_name")
@JSON_OPTION
@pass_state
def describe_role(state: CliState, role_name: str, as_json: bool) -> None:
    """Show ROLE_NAME and what it allows."""
    role = _role_named(state, role_name)
    if as_json:
        print_json({"role": role})
        return
    click.echo(render_fields([("Name", role.get("name")), ("Scope", role.get("scope")),
                              ("Determined's name", ", ".join(role["determined_names"])),
                              ("Assignable", "yes" if role.get("assignable") else
                               f"no: {role.get('note', '')}")]))
    click.echo("\nPermissions:")
    for permission in role.get("permissions") or []:
        click.echo(f"  - {permission}")


def _user_roles_table(answer: Mapping[str, Any]) -> str:
    """A user's roles as ``det rbac list-users-roles`` and ``my-permissions`` show them."""
    rows = [["cluster-admin", "(cluster)", ""]] if answer.get("cluster_admin") else []
    rows += [[w.get("role"), w.get("workspace"), w.get("group") or ""]
             for w in answer.get("workspaces") or []]
    return render_table(["Role", "Workspace", "Through group"], rows)


rbac.add_command(show_command(
    "list-users-roles", "List USERNAME's roles: cluster admin or not, and the workspace roles "
    "you can see.", lambda username: _path("users", username, "roles"), _user_roles_table,
    click.argument("username")))


@rbac.command("my-permissions")
@JSON_OPTION
@pass_state
def my_permissions(state: CliState, as_json: bool) -> None:
    """List your own roles (det rbac describe-role ROLE says what each allows)."""
    me = state.client().get("/auth/whoami").get("username") or ""
    print_answer(state.client().get(_path("users", me, "roles")), as_json, _user_roles_table)


@rbac.command("list-groups-roles")
@click.argument("group_name")
@JSON_OPTION
@pass_state
def list_groups_roles(state: CliState, group_name: str, as_json: bool) -> None:
    """List GROUP_NAME's roles in the workspaces you see."""
    group = state.client().get(group_path(group_name)).get("group") or {}
    roles = group.get("workspaces") or []
    print_answer({"group": group_name, "workspaces": roles}, as_json,
                 lambda a: group_roles_table(a["workspaces"]))


ASSIGNEE_OPTIONS = (
    click.option("-w", "--workspace-name", metavar="NAME",
                 help="The workspace the role is in (hpcdet's roles are per workspace)."),
    click.option("-u", "--username-to-assign", metavar="USER", help="The user."),
    click.option("-g", "--group-name-to-assign", metavar="GROUP",
                 help="A user group (det user-group)."),
)


def _assignee_options(command: Any) -> Any:
    for option in reversed(ASSIGNEE_OPTIONS):
        command = option(command)
    return command


class _Assignee(NamedTuple):
    """A user or a user group an assignment names, and how a workspace knows it."""

    who: str
    collection: str  # the workspace's route and description list: "members" or "groups"
    key: str  # what names it in an entry of that list: "user" or "group"
    label: str  # how messages name it
    no_longer: str  # what unassigning also takes away, said after the role


def _assignees(user: str | None, group: str | None) -> list[_Assignee]:
    """The user and/or group of an assignment, the user first, or a usage error."""
    if user is None and group is None:
        raise click.UsageError("give -u/--username-to-assign USER or "
                               "-g/--group-name-to-assign GROUP")
    found: list[_Assignee] = []
    if user is not None:
        found.append(_Assignee(user, "members", "user", user, " (nor a member)"))
    if group is not None:
        found.append(_Assignee(group, "groups", "group", f"User group {group}", ""))
    return found


Apply = Callable[[CliState, str, str, list[_Assignee]], None]


def _role_command(name: str, help_text: str, apply: Apply) -> click.Command:
    """``NAME ROLE_NAME -w WORKSPACE -u USER / -g GROUP``: ``apply(state, role, workspace,
    assignees)`` once the role is known and assignable in a workspace."""

    @rbac.command(name, help=help_text)
    @click.argument("role_name")
    @_assignee_options
    @pass_state
    def command(state: CliState, role_name: str, workspace_name: str | None,
                username_to_assign: str | None, group_name_to_assign: str | None) -> None:
        assignees = _assignees(username_to_assign, group_name_to_assign)
        role = _role_named(state, role_name)
        if not role.get("assignable") or workspace_name is None:
            raise CliError(GLOBAL_ROLES)
        apply(state, str(role["name"]), workspace_name, assignees)

    return command


def _assign(state: CliState, role: str, workspace: str, assignees: list[_Assignee]) -> None:
    for a in assignees:
        state.client().put(_path("workspaces", workspace, a.collection, a.who), {"role": role})
        click.echo(f"{a.label} is now {role} of workspace {workspace}")


def _unassign(state: CliState, role: str, workspace: str, assignees: list[_Assignee]) -> None:
    described = state.client().get(_path("workspaces", workspace)).get("workspace") or {}
    for a in assignees:
        held = {m.get(a.key): m.get("role") for m in described.get(a.collection) or []}
        _check_held(held, a.who, role, workspace)
        state.client().delete(_path("workspaces", workspace, a.collection, a.who))
        click.echo(f"{a.label} is no longer {role}{a.no_longer} of workspace {workspace}")


assign_role = _role_command(
    "assign-role", "Give a user or group ROLE_NAME in a workspace (its admins only); replaces "
    "the role they had there.", _assign)
unassign_role = _role_command(
    "unassign-role", "Take a user's or group's ROLE_NAME in a workspace away (its admins); a "
    "user stops being a member.", _unassign)


def _check_held(held: Mapping[Any, Any], who: str, role: str, workspace: str) -> None:
    """An error unless ``who`` holds ``role`` in the workspace."""
    if held.get(who) != role:
        now = f"is {held[who]}" if who in held else "has no role"
        raise CliError(f"{who} {now} in workspace {workspace}, not {role}: nothing to "
                       "unassign")


__all__ = ["rbac"]
