"""Workspace and project routes (Determined's model; rules in :mod:`hpcdet.master.security.authz`).

* ``POST /workspaces`` ``{name}``; ``GET /workspaces``; ``GET /workspaces/<name>``
* ``PUT /workspaces/<name>/members/<user>`` ``{role}``; ``DELETE`` the same to remove
* ``POST /workspaces/<name>/projects`` ``{name, description?}``; ``GET`` them;
  ``GET /workspaces/<name>/projects/<project>``
* ``PATCH /workspaces/<name>`` ``{name}``; ``POST .../archive``, ``.../unarchive``;
  ``DELETE /workspaces/<name>`` (empty ones only); the same for
  ``/workspaces/<name>/projects/<project>`` (``PATCH`` ``{name?, description?}``)
"""

from __future__ import annotations

from typing import Any

from flask import request

from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, json_body, settings
from hpcdet.master.security import workspace_admin, workspaces


@bp.post("/workspaces")
def create_workspace() -> Any:
    """Create a workspace; the caller becomes its admin. 409 if the name is taken."""
    actor = current_user()
    workspace = workspaces.create_workspace(db(), actor, json_body().get("name"))
    db().commit()
    return {"workspace": workspaces.workspace_json(db(), workspace, actor)}, 201


@bp.get("/workspaces")
def list_workspaces() -> Any:
    """The workspaces the caller is a member of (every one, for cluster admins); archived
    ones only with ``?archived=1``."""
    actor = current_user()
    found = workspaces.list_workspaces(db(), settings(), actor, archived=_archived_arg())
    return {"workspaces": [workspaces.workspace_json(db(), w, actor) for w in found]}


def _archived_arg() -> bool:
    """Whether the request asks for archived ones too (``?archived=1``)."""
    return request.args.get("archived", "").lower() in ("1", "true")


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
    """The workspace's projects, by name; archived ones only with ``?archived=1``."""
    workspace = workspaces.workspace_for(db(), settings(), current_user(), name)
    found = workspaces.list_projects(db(), workspace, archived=_archived_arg())
    return {"projects": [workspaces.project_json(db(), p, workspace) for p in found]}


@bp.get("/workspaces/<name>/projects/<project>")
def describe_project(name: str, project: str) -> Any:
    """One project of the workspace."""
    workspace = workspaces.workspace_for(db(), settings(), current_user(), name)
    found = workspaces.project_in(db(), workspace, project)
    return {"project": workspaces.project_json(db(), found, workspace)}


# ---- edit, archive, delete (hpcdet.master.security.workspace_admin) ---------------------


@bp.patch("/workspaces/<name>")
def edit_workspace(name: str) -> Any:
    """Rename the workspace (``{name}``); its admins only; 409 if the name is taken."""
    actor = current_user()
    workspace = workspace_admin.rename_workspace(db(), settings(), actor, name, json_body())
    db().commit()
    return {"workspace": workspaces.workspace_json(db(), workspace, actor)}


@bp.post("/workspaces/<name>/<any(archive, unarchive):action>")
def archive_workspace(name: str, action: str) -> Any:
    """Archive (nothing new goes in; hidden from lists) or unarchive; its admins only."""
    actor = current_user()
    workspace = workspace_admin.set_workspace_archived(db(), settings(), actor, name,
                                                       action == "archive")
    db().commit()
    return {"workspace": workspaces.workspace_json(db(), workspace, actor)}


@bp.delete("/workspaces/<name>")
def delete_workspace(name: str) -> Any:
    """Delete an empty workspace with its projects; 409 naming what it still holds."""
    answer = workspace_admin.delete_workspace(db(), settings(), current_user(), name)
    db().commit()
    return answer


@bp.patch("/workspaces/<name>/projects/<project>")
def edit_project(name: str, project: str) -> Any:
    """Set the project's name and/or description (editor role needed)."""
    workspace, found = workspace_admin.edit_project(db(), settings(), current_user(), name,
                                                    project, json_body())
    db().commit()
    return {"project": workspaces.project_json(db(), found, workspace)}


@bp.post("/workspaces/<name>/projects/<project>/<any(archive, unarchive):action>")
def archive_project(name: str, project: str, action: str) -> Any:
    """Archive (no new experiments; hidden from lists) or unarchive (editor role needed)."""
    workspace, found = workspace_admin.set_project_archived(
        db(), settings(), current_user(), name, project, action == "archive")
    db().commit()
    return {"project": workspaces.project_json(db(), found, workspace)}


@bp.delete("/workspaces/<name>/projects/<project>")
def delete_project(name: str, project: str) -> Any:
    """Delete a project without experiments (editor role needed); 409 otherwise."""
    answer = workspace_admin.delete_project(db(), settings(), current_user(), name, project)
    db().commit()
    return answer
