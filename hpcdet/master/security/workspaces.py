"""Workspaces, their members and projects (Determined's model; rules in :mod:`authz`).

Any user may create a workspace and becomes its ``admin``. A workspace's admins (and the
cluster admins) manage its members; its editors (and admins) create projects and put
experiments, tasks and templates in it. A workspace is seen only by its members and the
cluster admins; to anyone else it does not exist (NotFound).
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from hpcdet.master.errors import Conflict, Forbidden, Invalid
from hpcdet.master.model_base import iso_time
from hpcdet.master.models import (
    Experiment,
    Project,
    UserGroup,
    Workspace,
    WorkspaceGroupRole,
    WorkspaceMember,
)
from hpcdet.master.security import authz
from hpcdet.master.security.authz import ROLES, Access
from hpcdet.master.settings.core import MasterSettings

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@+-]{0,127}")


def valid_name(value: Any, what: str) -> str:
    """A workspace or project name, or Invalid naming what is allowed."""
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise Invalid("bad_request", f"{what}: 1 to 128 letters, digits, '.', '_' or "
                      "'-', starting with a letter or digit")
    return value


def _valid_user(value: Any) -> str:
    if not isinstance(value, str) or not USER.fullmatch(value):
        raise Invalid("bad_request", "user: a user (login) name")
    return value


def _valid_role(value: Any) -> str:
    if value not in ROLES:
        raise Invalid("bad_request", f"role: must be one of {', '.join(ROLES)}")
    return str(value)


# ---- finding one -----------------------------------------------------------------------


def workspace_for(session: Session, settings: MasterSettings, actor: str, name: str,
                  needed: str | None = None) -> Workspace:
    """The workspace called ``name`` if ``actor`` sees it (NotFound otherwise, as if
    unknown); with ``needed`` (``editor`` or ``admin``), Forbidden unless ``actor`` has that
    role."""
    workspace = session.scalar(select(Workspace).where(Workspace.name == name))
    if workspace is None:
        raise authz.not_found(f"workspace {name!r}")
    if authz.is_admin(settings, actor):
        return workspace
    role = authz.role_in(session, workspace.id, actor)
    if role is None:
        raise authz.not_found(f"workspace {name!r}")
    if needed is not None and ROLES.index(role) < ROLES.index(needed):
        raise Forbidden("forbidden", f"user {actor!r} is a {role} of workspace {name!r}; "
                        f"this needs the {needed} role (det workspace add-member)")
    return workspace


def project_in(session: Session, workspace: Workspace, name: str) -> Project:
    """The workspace's project called ``name``, or NotFound."""
    project = session.scalar(select(Project).where(Project.workspace_id == workspace.id,
                                                   Project.name == name))
    if project is None:
        raise authz.not_found(f"project {name!r} of workspace {workspace.name!r}")
    return project


def placement_for(session: Session, settings: MasterSettings, actor: str, workspace: Any,
                  project: Any) -> tuple[int | None, int | None]:
    """``(workspace id, project id)`` for a new object ``actor`` puts there (editor role
    needed); ``(None, None)`` when no workspace is named."""
    if workspace is None:
        if project is not None:
            raise Invalid("bad_request", "project: name its workspace too")
        return None, None
    found = workspace_for(session, settings, actor, valid_name(workspace, "workspace"),
                          needed="editor")
    refuse_archived(found)
    if project is None:
        return found.id, None
    chosen = project_in(session, found, valid_name(project, "project"))
    refuse_archived_project(found, chosen)
    return found.id, chosen.id


def refuse_archived(workspace: Workspace) -> None:
    """Conflict when ``workspace`` is archived: nothing new goes into it."""
    if workspace.archived:
        raise Conflict("archived", f"workspace {workspace.name!r} is archived: nothing "
                       f"new goes into it (det workspace unarchive {workspace.name})")


def refuse_archived_project(workspace: Workspace, project: Project) -> None:
    """Conflict when ``project`` is archived: no new experiments go into it."""
    if project.archived:
        raise Conflict("archived", f"project {project.name!r} of workspace "
                       f"{workspace.name!r} is archived: no new experiments go into it "
                       f"(det project unarchive {workspace.name} {project.name})")


# ---- workspaces --------------------------------------------------------------------------


def create_workspace(session: Session, actor: str, name: Any) -> Workspace:
    """A new workspace, with ``actor`` its admin; Conflict if the name is taken."""
    workspace = Workspace(name=valid_name(name, "name"), created_by=actor)
    session.add(workspace)
    flush_or_conflict(session, f"workspace {workspace.name!r} already exists")
    session.add(WorkspaceMember(workspace_id=workspace.id, user=actor, role="admin"))
    return workspace


def list_workspaces(session: Session, settings: MasterSettings, actor: str,
                    archived: bool = False) -> list[Workspace]:
    """The workspaces ``actor`` sees, by name (archived ones only with ``archived``)."""
    query = select(Workspace).order_by(Workspace.name)
    if not archived:
        query = query.where(Workspace.archived.is_(False))
    if not authz.is_admin(settings, actor):
        query = query.where(authz.in_member_workspace(Workspace.id, actor))
    return list(session.scalars(query))


def workspace_json(session: Session, workspace: Workspace, actor: str,
                   detail: bool = False) -> dict[str, Any]:
    """The ``Workspace`` shape of docs/api.md (members and projects with ``detail``)."""
    body: dict[str, Any] = {
        "id": workspace.id, "name": workspace.name, "created_by": workspace.created_by,
        "created_at": iso_time(workspace.created_at),
        "role": authz.role_in(session, workspace.id, actor), "archived": workspace.archived,
        "num_experiments": session.scalar(select(func.count(Experiment.id)).where(
            Experiment.workspace_id == workspace.id)) or 0}
    if detail:
        members = session.scalars(select(WorkspaceMember).where(
            WorkspaceMember.workspace_id == workspace.id).order_by(WorkspaceMember.user))
        body["members"] = [{"user": m.user, "role": m.role} for m in members]
        body["groups"] = workspace_groups(session, workspace)
        body["projects"] = [project_json(session, p, workspace)
                            for p in list_projects(session, workspace, archived=True)]
    return body


def workspace_groups(session: Session, workspace: Workspace) -> list[dict[str, str]]:
    """The user groups with a role in ``workspace``, by name."""
    rows = session.execute(select(UserGroup.name, WorkspaceGroupRole.role)
                           .join(UserGroup, UserGroup.id == WorkspaceGroupRole.group_id)
                           .where(WorkspaceGroupRole.workspace_id == workspace.id)
                           .order_by(UserGroup.name))
    return [{"group": g, "role": r} for g, r in rows]


def set_member(session: Session, settings: MasterSettings, actor: str, name: str,
               user: Any, role: Any) -> Workspace:
    """Add ``user`` to the workspace with ``role`` (or change their role); admins only."""
    workspace = workspace_for(session, settings, actor, name, needed="admin")
    member = session.get(WorkspaceMember, (workspace.id, _valid_user(user)))
    if member is None:
        session.add(WorkspaceMember(workspace_id=workspace.id, user=user,
                                    role=_valid_role(role)))
    else:
        new_role = _valid_role(role)
        if new_role != "admin":
            _keep_an_admin(session, workspace, member, f"make {user!r} a {new_role}")
        member.role = new_role
    session.flush()
    return workspace


def _keep_an_admin(session: Session, workspace: Workspace, member: WorkspaceMember,
                   change: str) -> None:
    """Conflict when ``member`` is the workspace's last admin: it would be left unmanaged."""
    admins = session.scalar(select(func.count()).where(
        WorkspaceMember.workspace_id == workspace.id, WorkspaceMember.role == "admin"))
    if member.role == "admin" and admins == 1:
        raise Conflict("conflict", f"cannot {change}: {member.user!r} is the last admin "
                       f"of workspace {workspace.name!r}; make another member admin first")


def remove_member(session: Session, settings: MasterSettings, actor: str, name: str,
                  user: str) -> Workspace:
    """Take ``user`` out of the workspace; admins only; its last admin stays."""
    workspace = workspace_for(session, settings, actor, name, needed="admin")
    member = session.get(WorkspaceMember, (workspace.id, user))
    if member is None:
        raise authz.not_found(f"member {user!r} of workspace {name!r}")
    _keep_an_admin(session, workspace, member, f"remove {user!r}")
    session.delete(member)
    session.flush()
    return workspace


# ---- projects ----------------------------------------------------------------------------


def create_project(session: Session, settings: MasterSettings, actor: str, workspace_name: str,
                   name: Any, description: Any) -> Project:
    """A new project in the workspace (editor role needed); Conflict if the name is
    taken there."""
    workspace = workspace_for(session, settings, actor, workspace_name, needed="editor")
    refuse_archived(workspace)
    if description is not None and not isinstance(description, str):
        raise Invalid("bad_request", "description: must be text")
    project = Project(workspace_id=workspace.id, name=valid_name(name, "name"),
                      description=description or "", created_by=actor)
    session.add(project)
    flush_or_conflict(session, f"workspace {workspace_name!r} already has a project "
                       f"{project.name!r}")
    return project


def list_projects(session: Session, workspace: Workspace,
                  archived: bool = False) -> list[Project]:
    """The workspace's projects, by name (archived ones only with ``archived``)."""
    query = select(Project).where(Project.workspace_id == workspace.id).order_by(Project.name)
    if not archived:
        query = query.where(Project.archived.is_(False))
    return list(session.scalars(query))


def project_json(session: Session, project: Project, workspace: Workspace) -> dict[str, Any]:
    """The ``Project`` shape of docs/api.md."""
    return {"id": project.id, "name": project.name, "workspace": workspace.name,
            "workspace_id": workspace.id, "description": project.description,
            "created_by": project.created_by, "created_at": iso_time(project.created_at),
            "archived": project.archived,
            "num_experiments": session.scalar(select(func.count(Experiment.id)).where(
                Experiment.project_id == project.id)) or 0}


def flush_or_conflict(session: Session, message: str) -> None:
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raise Conflict("conflict", message) from None


__all__ = ["Access", "create_project", "create_workspace", "flush_or_conflict", "list_projects",
           "list_workspaces", "placement_for", "project_in", "project_json",
           "refuse_archived", "remove_member", "set_member", "valid_name", "workspace_for",
           "workspace_json"]
