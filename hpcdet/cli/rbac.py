"""``det rbac``: Determined's role commands on hpcdet's roles.

hpcdet's roles are fixed: ``viewer``, ``editor`` and ``admin`` of a workspace (a member's
role), and ``cluster-admin`` (named in ``auth.admins`` of master.yaml, not assigned at run
time). Determined's role names (Viewer, Editor, WorkspaceAdmin, ClusterAdmin) are accepted.
``assign-role ROLE -w WORKSPACE -u USER`` makes USER that member of the workspace (as
``det workspace add-member``); ``-g GROUP`` gives a user group (``det user-group``) that role
there. ``unassign-role`` takes it away.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import print_json, render_fields, render_table

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
    if as_json:
        print_json({"roles": roles})
    else:
        click.echo(roles_table(roles))


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


def _print_user_roles(answer: Mapping[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(answer)
        return
    rows = [["cluster-admin", "(cluster)", ""]] if answer.get("cluster_admin") else []
    rows += [[w.get("role"), w.get("workspace"), w.get("group") or ""]
             for w in answer.get("workspaces") or []]
    click.echo(render_table(["Role", "Workspace", "Through group"], rows))


@rbac.command("list-users-roles")
@click.argument("username")
@JSON_OPTION
@pass_state
def list_users_roles(state: CliState, username: str, as_json: bool) -> None:
    """List USERNAME's roles: cluster admin or not, and the workspace roles you can see."""
    _print_user_roles(state.client().get(_path("users", username, "roles")), as_json)


@rbac.command("my-permissions")
@JSON_OPTION
@pass_state
def my_permissions(state: CliState, as_json: bool) -> None:
    """List your own roles (det rbac describe-role ROLE says what each allows)."""
    me = state.client().get("/auth/whoami").get("username") or ""
    _print_user_roles(state.client().get(_path("users", me, "roles")), as_json)


@rbac.command("list-groups-roles")
@click.argument("group_name")
@JSON_OPTION
@pass_state
def list_groups_roles(state: CliState, group_name: str, as_json: bool) -> None:
    """List GROUP_NAME's roles in the workspaces you see."""
    group = state.client().get(_path("groups", group_name)).get("group") or {}
    roles = group.get("workspaces") or []
    if as_json:
        print_json({"group": group_name, "workspaces": roles})
    else:
        click.echo(render_table(["Role", "Workspace"], [[w.get("role"), w.get("workspace")]
                                                        for w in roles]))


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


def _target(state: CliState, role_name: str, workspace: str | None, user: str | None,
            group: str | None) -> tuple[str, str]:
    """``(role, workspace)`` of an assignment to ``user`` and/or ``group``, or the one-line
    refusal."""
    if user is None and group is None:
        raise click.UsageError("give -u/--username-to-assign USER or "
                               "-g/--group-name-to-assign GROUP")
    role = _role_named(state, role_name)
    if not role.get("assignable") or workspace is None:
        raise CliError(GLOBAL_ROLES)
    return str(role["name"]), workspace


@rbac.command("assign-role")
@click.argument("role_name")
@_assignee_options
@pass_state
def assign_role(state: CliState, role_name: str, workspace_name: str | None,
                username_to_assign: str | None, group_name_to_assign: str | None) -> None:
    """Give a user or group ROLE_NAME in a workspace (its admins only); replaces the role
    they had there."""
    role, workspace = _target(state, role_name, workspace_name, username_to_assign,
                              group_name_to_assign)
    if username_to_assign is not None:
        state.client().put(_path("workspaces", workspace, "members", username_to_assign),
                           {"role": role})
        click.echo(f"{username_to_assign} is now {role} of workspace {workspace}")
    if group_name_to_assign is not None:
        state.client().put(_path("workspaces", workspace, "groups", group_name_to_assign),
                           {"role": role})
        click.echo(f"User group {group_name_to_assign} is now {role} of workspace "
                   f"{workspace}")


@rbac.command("unassign-role")
@click.argument("role_name")
@_assignee_options
@pass_state
def unassign_role(state: CliState, role_name: str, workspace_name: str | None,
                  username_to_assign: str | None, group_name_to_assign: str | None) -> None:
    """Take a user's or group's ROLE_NAME in a workspace away (its admins); a user stops
    being a member."""
    role, workspace = _target(state, role_name, workspace_name, username_to_assign,
                              group_name_to_assign)
    described = state.client().get(_path("workspaces", workspace)).get("workspace") or {}
    if username_to_assign is not None:
        held = {m.get("user"): m.get("role") for m in described.get("members") or []}
        _check_held(held, username_to_assign, role, workspace)
        state.client().delete(_path("workspaces", workspace, "members", username_to_assign))
        click.echo(f"{username_to_assign} is no longer {role} (nor a member) of workspace "
                   f"{workspace}")
    if group_name_to_assign is not None:
        held = {g.get("group"): g.get("role") for g in described.get("groups") or []}
        _check_held(held, group_name_to_assign, role, workspace)
        state.client().delete(_path("workspaces", workspace, "groups", group_name_to_assign))
        click.echo(f"User group {group_name_to_assign} is no longer {role} of workspace "
                   f"{workspace}")


def _check_held(held: Mapping[Any, Any], who: str, role: str, workspace: str) -> None:
    """An error unless ``who`` holds ``role`` in the workspace."""
    if held.get(who) != role:
        now = f"is {held[who]}" if who in held else "has no role"
        raise CliError(f"{who} {now} in workspace {workspace}, not {role}: nothing to "
                       "unassign")


__all__ = ["rbac"]
