"""Workspace and project routes (Determined's model; rules in :mod:`hpcdet.master.security.authz`).

* ``POST /workspaces`` ``{name}``; ``GET /workspaces``; ``GET /workspaces/<name>``
* ``PUT /workspaces/<name>/members/<user>`` ``{role}``; ``DELETE`` the same to remove
* ``POST /workspaces/<name>/projects`` ``{name, description?}``; ``GET`` them;
  ``GET /workspaces/<name>/projects/<project>``
"""

from __future__ import annotations

from typing import Any

from hpcdet.master.api import bp
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.common import db, json_body, settings
from hpcdet.master.security import workspaces


@bp.post("/workspaces")
def create_workspace() -> Any:
    """Create a workspace; the caller becomes its admin. 409 if the name is taken."""
    actor = current_user()
    workspace = workspaces.create_workspace(db(), actor, json_body().get("name"))
    db().commit()
    return {"workspace": workspaces.workspace_json(db(), workspace, actor)}, 201


@bp.get("/workspaces")
def list_workspaces() -> Any:
    """The workspaces the caller is a member of (every one, for cluster admins)."""
    actor = current_user()
    return {"workspaces": [workspaces.workspace_json(db(), w, actor)
                           for w in workspaces.list_workspaces(db(), settings(), actor)]}


@bp.get("/workspaces/<name>")
def describe_workspace(name: str) -> Any:
    """One workspace with its members and projects; 404 unless the caller is a member."""
    actor = current_user()
    workspace = workspaces.workspace_for(db(), settings(), actor, name)
    return {"workspace": workspaces.workspace_json(db(), workspace, actor, detail=True)}


@bp.put("/workspaces/<name>/members/<user>")
def set_member(name: str, user: str) -> Any:
    """Add a member or change their role (``viewer``, ``editor``, ``admin``); admins only."""
    actor = current_user()
    role = json_body().get("role")
    workspace = workspaces.set_member(db(), settings(), actor, name, user, role)
    db().commit()
    return {"workspace": workspaces.workspace_json(db(), workspace, actor, detail=True)}


@bp.delete("/workspaces/<name>/members/<user>")
def remove_member(name: str, user: str) -> Any:
    """Remove a member; admins only; the last admin cannot be removed (409)."""
    actor = current_user()
    workspace = workspaces.remove_member(db(), settings(), actor, name, user)
    db().commit()
    return {"workspace": workspaces.workspace_json(db(), workspace, actor, detail=True)}


@bp.post("/workspaces/<name>/projects")
def create_project(name: str) -> Any:
    """Create a project in the workspace (editor role needed)."""
    actor = current_user()
    body = json_body()
    project = workspaces.create_project(db(), settings(), actor, name, body.get("name"),
                                        body.get("description"))
    db().commit()
    workspace = workspaces.workspace_for(db(), settings(), actor, name)
    return {"project": workspaces.project_json(db(), project, workspace)}, 201


@bp.get("/workspaces/<name>/projects")
def list_projects(name: str) -> Any:
    """The workspace's projects, by name."""
    workspace = workspaces.workspace_for(db(), settings(), current_user(), name)
    return {"projects": [workspaces.project_json(db(), p, workspace)
                         for p in workspaces.list_projects(db(), workspace)]}


@bp.get("/workspaces/<name>/projects/<project>")
def describe_project(name: str, project: str) -> Any:
    """One project of the workspace."""
    workspace = workspaces.workspace_for(db(), settings(), current_user(), name)
    found = workspaces.project_in(db(), workspace, project)
    return {"project": workspaces.project_json(db(), found, workspace)}
