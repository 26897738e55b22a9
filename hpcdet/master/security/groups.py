"""User groups (Determined's ``det user-group``) and their roles in workspaces.

* cluster admins (``auth.admins``) create, rename and delete groups and add or remove
  their users; anybody may list and describe them;
* a workspace's admins give a group a role there (``det rbac assign-role ROLE -w W -g G``):
  each of its users then has at least that role in the workspace (:func:`authz.role_in`
  takes the highest of a user's own and their groups' roles);
* deleting a group takes its roles away with it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from hpcdet.master.errors import Invalid, NotFound
from hpcdet.master.model_base import iso_time
from hpcdet.master.models import UserGroup, UserGroupMember, Workspace, WorkspaceGroupRole
from hpcdet.master.security import authz
from hpcdet.master.security.authz import ROLES
from hpcdet.master.security.users import require_cluster_admin, valid_user
from hpcdet.master.security.workspaces import flush_or_conflict, valid_name, workspace_for
from hpcdet.master.settings.core import MasterSettings


def group_named(session: Session, name: str) -> UserGroup:
    """Group ``name``, or NotFound."""
    group = session.scalar(select(UserGroup).where(UserGroup.name == name))
    if group is None:
        raise NotFound("not_found", f"user group {name!r} not found (det user-group "
                       "list)")
    return group


def _users(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise Invalid("bad_request", "users: a list of user names")
    return list(dict.fromkeys(valid_user(v) for v in value))


def create_group(session: Session, settings: MasterSettings, actor: str, name: Any,
                 users: Any) -> UserGroup:
    """A new group with ``users`` (cluster admins); Conflict if the name is taken."""
    require_cluster_admin(settings, actor, "create user groups")
    group = UserGroup(name=valid_name(name, "name"), created_by=actor)
    members = _users(users if users is not None else [])
    session.add(group)
    flush_or_conflict(session, f"user group {group.name!r} already exists")
    session.add_all(UserGroupMember(group_id=group.id, user=u) for u in members)
    session.flush()
    return group


def list_groups(session: Session, user: str | None) -> list[UserGroup]:
    """Every group by name, or those ``user`` belongs to."""
    query = select(UserGroup).order_by(UserGroup.name)
    if user is not None:
        query = query.where(UserGroup.id.in_(select(UserGroupMember.group_id)
                                             .where(UserGroupMember.user == user)))
    return list(session.scalars(query))


def group_json(session: Session, settings: MasterSettings, actor: str, group: UserGroup,
               detail: bool = False) -> dict[str, Any]:
    """The ``UserGroup`` shape of docs/api.md (users and workspace roles with ``detail``:
    the roles in workspaces the caller sees)."""
    users = list(session.scalars(select(UserGroupMember.user).where(
        UserGroupMember.group_id == group.id).order_by(UserGroupMember.user)))
    body: dict[str, Any] = {"id": group.id, "name": group.name, "created_by": group.created_by,
                            "created_at": iso_time(group.created_at), "num_members": len(users)}
    if detail:
        body["users"] = users
        body["workspaces"] = group_roles(session, settings, actor, group)
    return body


def group_roles(session: Session, settings: MasterSettings, actor: str,
                group: UserGroup) -> list[dict[str, str]]:
    """The group's roles in the workspaces ``actor`` sees, by workspace name."""
    query = (select(Workspace.name, WorkspaceGroupRole.role)
             .join(Workspace, Workspace.id == WorkspaceGroupRole.workspace_id)
             .where(WorkspaceGroupRole.group_id == group.id).order_by(Workspace.name))
    if not authz.is_admin(settings, actor):
        query = query.where(authz.in_member_workspace(Workspace.id, actor))
    return [{"workspace": w, "role": r} for w, r in session.execute(query)]


def rename_group(session: Session, settings: MasterSettings, actor: str, name: str,
                 new_name: Any) -> UserGroup:
    """Rename group ``name`` (cluster admins); Conflict if the new name is taken."""
    require_cluster_admin(settings, actor, "rename user groups")
    group = group_named(session, name)
    group.name = valid_name(new_name, "name")
    flush_or_conflict(session, f"user group {group.name!r} already exists")
    return group


def change_users(session: Session, settings: MasterSettings, actor: str, name: str,
                 add: Any, remove: Any) -> UserGroup:
    """Add and remove users of group ``name`` (cluster admins); NotFound naming a user to remove
    who is not in it."""
    require_cluster_admin(settings, actor, "change user groups")
    group = group_named(session, name)
    adding, removing = _users(add or []), _users(remove or [])
    present = set(session.scalars(select(UserGroupMember.user).where(
        UserGroupMember.group_id == group.id)))
    missing = [u for u in removing if u not in present]
    if missing:
        raise NotFound("not_found", f"not in user group {name!r}: {', '.join(missing)}")
    session.add_all(UserGroupMember(group_id=group.id, user=u) for u in adding
                    if u not in present)
    if removing:
        session.execute(delete(UserGroupMember).where(UserGroupMember.group_id == group.id,
                                                      UserGroupMember.user.in_(removing)))
    session.flush()
    return group


def delete_group(session: Session, settings: MasterSettings, actor: str,
                 name: str) -> dict[str, Any]:
    """Delete group ``name`` with its users and roles (cluster admins)."""
    require_cluster_admin(settings, actor, "delete user groups")
    group = group_named(session, name)
    roles = session.scalar(select(func.count()).select_from(WorkspaceGroupRole).where(
        WorkspaceGroupRole.group_id == group.id)) or 0
    session.execute(delete(WorkspaceGroupRole).where(WorkspaceGroupRole.group_id == group.id))
    session.execute(delete(UserGroupMember).where(UserGroupMember.group_id == group.id))
    session.delete(group)
    session.flush()
    return {"deleted": name, "roles_removed": roles}


def set_group_role(session: Session, settings: MasterSettings, actor: str,
                   workspace_name: str, group_name: str, role: Any) -> Workspace:
    """Give group ``group_name`` ``role`` in the workspace (its admins), or change it."""
    workspace = workspace_for(session, settings, actor, workspace_name, needed="admin")
    group = group_named(session, group_name)
    if role not in ROLES:
        raise Invalid("bad_request", f"role: must be one of {', '.join(ROLES)}")
    held = session.get(WorkspaceGroupRole, (workspace.id, group.id))
    if held is None:
        session.add(WorkspaceGroupRole(workspace_id=workspace.id, group_id=group.id, role=role))
    else:
        held.role = str(role)
    session.flush()
    return workspace


def remove_group_role(session: Session, settings: MasterSettings, actor: str,
                      workspace_name: str, group_name: str) -> Workspace:
    """Take group ``group_name``'s role in the workspace away (its admins)."""
    workspace = workspace_for(session, settings, actor, workspace_name, needed="admin")
    group = group_named(session, group_name)
    held = session.get(WorkspaceGroupRole, (workspace.id, group.id))
    if held is None:
        raise NotFound("not_found", f"user group {group_name!r} has no role in workspace "
                       f"{workspace_name!r}")
    session.delete(held)
    session.flush()
    return workspace


__all__ = ["change_users", "create_group", "delete_group", "group_json", "group_named",
           "group_roles", "list_groups", "remove_group_role", "rename_group", "set_group_role"]
