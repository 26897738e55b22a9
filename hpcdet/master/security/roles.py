"""Roles as ``det rbac`` shows them: the three workspace roles and the cluster admin.

hpcdet's roles are fixed (Determined's RBAC lets an enterprise define its own): a member of
a workspace is its ``viewer``, ``editor`` or ``admin`` (:mod:`authz`); a cluster admin is
named in ``auth.admins`` of master.yaml. Determined's role names are accepted as aliases.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import literal, select
from sqlalchemy.orm import Session

from hpcdet.master.errors import NotFound
from hpcdet.master.models import (
    User,
    UserGroup,
    UserGroupMember,
    Workspace,
    WorkspaceGroupRole,
    WorkspaceMember,
)
from hpcdet.master.security import authz
from hpcdet.master.settings.core import MasterSettings

CLUSTER_ADMIN = "cluster-admin"

_VIEWER = ("see the workspace, its members and projects",
           "see the experiments, trials, checkpoints, tasks, templates and models in it")
_EDITOR = (*_VIEWER,
           "put new experiments, tasks, templates and models in it",
           "change, pause, kill, archive, move and delete what is in it",
           "create, edit, archive and delete its projects")
_ADMIN = (*_EDITOR,
          "add and remove members and set their roles (det rbac assign-role, det workspace "
          "add-member)",
          "rename, archive, unarchive and delete the workspace")

ROLE_CATALOG: tuple[dict[str, Any], ...] = (
    {"name": "viewer", "scope": "workspace", "assignable": True,
     "determined_names": ["Viewer"], "permissions": list(_VIEWER)},
    {"name": "editor", "scope": "workspace", "assignable": True,
     "determined_names": ["Editor"], "permissions": list(_EDITOR)},
    {"name": "admin", "scope": "workspace", "assignable": True,
     "determined_names": ["WorkspaceAdmin"], "permissions": list(_ADMIN)},
    {"name": CLUSTER_ADMIN, "scope": "cluster", "assignable": False,
     "determined_names": ["ClusterAdmin"],
     "permissions": ["everything a workspace admin may, in every workspace",
                     "see and change every user's experiments, tasks and templates",
                     "register, activate and deactivate users",
                     "read the master's config and log"],
     "note": "named in auth.admins of master.yaml (read at start); not assigned at run time"},
)


def role_named(name: str) -> dict[str, Any] | None:
    """The catalog entry called ``name`` (hpcdet's or Determined's name, any case)."""
    wanted = name.lower()
    for role in ROLE_CATALOG:
        names = [role["name"], *role["determined_names"]]
        if wanted in (n.lower() for n in names):
            return role
    return None


def roles_of(session: Session, settings: MasterSettings, actor: str,
             user: str) -> dict[str, Any]:
    """``user``'s roles: cluster admin or not, and their workspace roles (their own, and
    through a group: ``group`` names it) that ``actor`` sees (every one for a cluster admin
    or the user themselves). NotFound for a name the master knows nothing of."""
    if not _known(session, settings, user):
        raise NotFound("not_found", f"user {user!r} not found: the master knows users "
                       "who signed in, were registered (det user create), or hold a role")
    own = (select(Workspace.name, WorkspaceMember.role, literal(None).label("group"))
           .join(Workspace, Workspace.id == WorkspaceMember.workspace_id)
           .where(WorkspaceMember.user == user))
    via_groups = (select(Workspace.name, WorkspaceGroupRole.role, UserGroup.name)
                  .join(Workspace, Workspace.id == WorkspaceGroupRole.workspace_id)
                  .join(UserGroup, UserGroup.id == WorkspaceGroupRole.group_id)
                  .join(UserGroupMember, UserGroupMember.group_id == UserGroup.id)
                  .where(UserGroupMember.user == user))
    if actor != user and not authz.is_admin(settings, actor):
        own = own.where(authz.in_member_workspace(Workspace.id, actor))
        via_groups = via_groups.where(authz.in_member_workspace(Workspace.id, actor))
    rows = sorted([*session.execute(own), *session.execute(via_groups)],
                  key=lambda row: (row[0], row[2] or ""))
    return {"username": user, "cluster_admin": user in settings.admins,
            "workspaces": [{"workspace": w, "role": r, "group": g} for w, r, g in rows]}


def _known(session: Session, settings: MasterSettings, user: str) -> bool:
    """Whether ``user`` signed in or was registered, holds a role, or is in a group."""
    if user in settings.admins or session.get(User, user) is not None:
        return True
    return any(session.scalar(select(column).where(column == user).limit(1)) is not None
               for column in (WorkspaceMember.user, UserGroupMember.user))


__all__ = ["CLUSTER_ADMIN", "ROLE_CATALOG", "role_named", "roles_of"]
