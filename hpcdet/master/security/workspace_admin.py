"""Renaming, archiving and deleting workspaces and projects (Determined's ``edit``,
``archive``, ``unarchive`` and ``delete``); the rules of :mod:`authz` and
:mod:`workspaces`.

* a workspace is renamed, archived, unarchived or deleted by its admins and the cluster
  admins; a project by the workspace's editors and admins (who create projects);
* an archived workspace or project takes nothing new (:func:`workspaces.refuse_archived`)
  and is left out of default lists; what it holds stays as it was;
* hpcdet has no default ("Uncategorized") workspace to protect: an object outside any
  workspace belongs to its owner alone;
* deleting a workspace or project that still holds something is refused (Conflict) with how many
  and what to do: Determined deletes the experiments inside asynchronously, hpcdet never
  deletes anybody's experiments, tasks, templates or models as a side effect.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from hpcdet.master.errors import Conflict, Invalid
from hpcdet.master.models import (
    CommandTask,
    Experiment,
    Project,
    RegisteredModel,
    Template,
    Workspace,
    WorkspaceGroupRole,
    WorkspaceMember,
)
from hpcdet.master.security.workspaces import (
    flush_or_conflict,
    project_in,
    valid_name,
    workspace_for,
)
from hpcdet.master.settings.core import MasterSettings

# What may sit in a workspace, with how the refusal names it and how to get it out.
_HELD: tuple[tuple[Any, str, str], ...] = (
    (Experiment, "experiment", "det experiment move ID WORKSPACE PROJECT, or det experiment "
                               "delete ID"),
    (CommandTask, "task", "det task kill ID; ended tasks keep their workspace"),
    (Template, "template", "det template remove NAME"),
    (RegisteredModel, "model", "det model move NAME --workspace OTHER, or det model delete"),
)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


# ---- workspaces --------------------------------------------------------------------------


def rename_workspace(session: Session, settings: MasterSettings, actor: str, name: str,
                     body: dict[str, Any]) -> Workspace:
    """Rename workspace ``name`` to ``body["name"]`` (its admins only); Conflict if taken."""
    workspace = workspace_for(session, settings, actor, name, needed="admin")
    if set(body) != {"name"}:
        raise Invalid("bad_request", 'the body is {"name": NEW_NAME}')
    workspace.name = valid_name(body["name"], "name")
    flush_or_conflict(session, f"workspace {workspace.name!r} already exists")
    return workspace


def set_workspace_archived(session: Session, settings: MasterSettings, actor: str, name: str,
                           archived: bool) -> Workspace:
    """Archive or unarchive workspace ``name`` (its admins only); Conflict if it already is."""
    workspace = workspace_for(session, settings, actor, name, needed="admin")
    if workspace.archived == archived:
        state = "archived" if archived else "not archived"
        raise Conflict("conflict", f"workspace {name!r} is already {state}")
    workspace.archived = archived
    session.flush()
    return workspace


def workspace_holdings(session: Session, workspace: Workspace) -> list[tuple[int, str, str]]:
    """``(count, noun, way out)`` for each kind of object still in ``workspace``."""
    held = []
    for model, noun, way_out in _HELD:
        count = session.scalar(select(func.count()).select_from(model).where(
            model.workspace_id == workspace.id)) or 0
        if count:
            held.append((count, noun, way_out))
    return held


def delete_workspace(session: Session, settings: MasterSettings, actor: str,
                     name: str) -> dict[str, Any]:
    """Delete an empty workspace with its projects and members (its admins only).

    Conflict naming what it still holds, and how to take each out, when it is not empty.
    """
    workspace = workspace_for(session, settings, actor, name, needed="admin")
    held = workspace_holdings(session, workspace)
    if held:
        what = ", ".join(_plural(count, noun) for count, noun, _ in held)
        ways = "; ".join(f"{noun}s: {way_out}" for _, noun, way_out in held)
        raise Conflict("not_empty", f"workspace {name!r} still holds {what}: move or "
                       f"delete them first ({ways}); hpcdet does not delete them with it")
    projects = session.scalar(select(func.count()).select_from(Project).where(
        Project.workspace_id == workspace.id)) or 0
    session.execute(delete(Project).where(Project.workspace_id == workspace.id))
    session.execute(delete(WorkspaceMember).where(WorkspaceMember.workspace_id == workspace.id))
    session.execute(delete(WorkspaceGroupRole).where(
        WorkspaceGroupRole.workspace_id == workspace.id))
    session.delete(workspace)
    session.flush()
    return {"deleted": name, "projects_deleted": projects}


# ---- projects ----------------------------------------------------------------------------


def _project(session: Session, settings: MasterSettings, actor: str, workspace_name: str,
             name: str) -> tuple[Workspace, Project]:
    """The workspace and its project ``name``, for an editor (or admin) of it."""
    workspace = workspace_for(session, settings, actor, workspace_name, needed="editor")
    return workspace, project_in(session, workspace, name)


def edit_project(session: Session, settings: MasterSettings, actor: str, workspace_name: str,
                 name: str, changes: dict[str, Any]) -> tuple[Workspace, Project]:
    """Set a project's ``name`` and/or ``description`` (editors of its workspace)."""
    workspace, project = _project(session, settings, actor, workspace_name, name)
    unknown = sorted(set(changes) - {"name", "description"})
    if unknown or not changes:
        raise Invalid("bad_request", "the body sets name and/or description"
                      + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
    if "description" in changes:
        if not isinstance(changes["description"], str):
            raise Invalid("bad_request", "description: must be text")
        project.description = changes["description"]
    if "name" in changes:
        project.name = valid_name(changes["name"], "name")
    flush_or_conflict(session, f"workspace {workspace.name!r} already has a project "
                      f"{project.name!r}")
    return workspace, project


def set_project_archived(session: Session, settings: MasterSettings, actor: str,
                         workspace_name: str, name: str,
                         archived: bool) -> tuple[Workspace, Project]:
    """Archive or unarchive a project (editors of its workspace); Conflict if it already is."""
    workspace, project = _project(session, settings, actor, workspace_name, name)
    if project.archived == archived:
        state = "archived" if archived else "not archived"
        raise Conflict("conflict", f"project {name!r} of workspace {workspace_name!r} "
                       f"is already {state}")
    project.archived = archived
    session.flush()
    return workspace, project


def delete_project(session: Session, settings: MasterSettings, actor: str,
                   workspace_name: str, name: str) -> dict[str, Any]:
    """Delete a project without experiments (editors of its workspace); Conflict otherwise."""
    _, project = _project(session, settings, actor, workspace_name, name)
    count = session.scalar(select(func.count()).select_from(Experiment).where(
        Experiment.project_id == project.id)) or 0
    if count:
        raise Conflict("not_empty", f"project {name!r} of workspace {workspace_name!r} "
                       f"still holds {_plural(count, 'experiment')}: move them out (det "
                       "experiment move ID WORKSPACE PROJECT) or delete them (det "
                       "experiment delete ID) first; hpcdet does not delete them with it")
    session.delete(project)
    session.flush()
    return {"deleted": name, "workspace": workspace_name}


__all__ = ["delete_project", "delete_workspace", "edit_project", "rename_workspace",
           "set_project_archived", "set_workspace_archived", "workspace_holdings"]
