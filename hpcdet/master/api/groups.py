"""User groups (Determined's ``det user-group``) and their workspace roles; rules in
:mod:`hpcdet.master.security.groups`.

* ``POST /groups`` ``{name, users?}``; ``GET /groups`` (``?user=U``: U's groups);
  ``GET /groups/<name>``; ``PATCH /groups/<name>`` ``{name}``; ``DELETE /groups/<name>``
* ``POST /groups/<name>/users`` ``{add?: [user], remove?: [user]}``
* ``PUT /workspaces/<name>/groups/<group>`` ``{role}``; ``DELETE`` the same to take it away
"""

from __future__ import annotations

from typing import Any

from flask import request

from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, json_body, settings
from hpcdet.master.errors import Invalid
from hpcdet.master.security import groups, workspaces


def _detail(name: str, actor: str) -> dict[str, Any]:
    group = groups.group_named(db(), name)
    return {"group": groups.group_json(db(), settings(), actor, group, detail=True)}


@bp.post("/groups")
def create_group() -> Any:
    """Create a user group, with users (cluster admins); 409 if the name is taken."""
    actor = current_user()
    body = json_body()
    group = groups.create_group(db(), settings(), actor, body.get("name"), body.get("users"))
    db().commit()
    return _detail(group.name, actor), 201


@bp.get("/groups")
def list_groups() -> Any:
    """Every user group, by name (``?user=U``: those U belongs to)."""
    actor = current_user()
    found = groups.list_groups(db(), request.args.get("user") or None)
    return {"groups": [groups.group_json(db(), settings(), actor, g) for g in found]}


@bp.get("/groups/<name>")
def describe_group(name: str) -> Any:
    """One group: its users and its roles in the workspaces the caller sees."""
    return _detail(name, current_user())


@bp.patch("/groups/<name>")
def rename_group(name: str) -> Any:
    """Rename the group (cluster admins)."""
    actor = current_user()
    body = json_body()
    if set(body) != {"name"}:
        raise Invalid("bad_request", 'the body is {"name": NEW_NAME}')
    group = groups.rename_group(db(), settings(), actor, name, body["name"])
    db().commit()
    return _detail(group.name, actor)


@bp.post("/groups/<name>/users")
def change_group_users(name: str) -> Any:
    """Add and remove the group's users (cluster admins)."""
    actor = current_user()
    body = json_body()
    if not set(body) <= {"add", "remove"} or not body:
        raise Invalid("bad_request", 'the body is {"add": [user], "remove": [user]}')
    groups.change_users(db(), settings(), actor, name, body.get("add"), body.get("remove"))
    db().commit()
    return _detail(name, actor)


@bp.delete("/groups/<name>")
def delete_group(name: str) -> Any:
    """Delete the group with its roles (cluster admins)."""
    answer = groups.delete_group(db(), settings(), current_user(), name)
    db().commit()
    return answer


@bp.put("/workspaces/<name>/groups/<group>")
def set_group_role(name: str, group: str) -> Any:
    """Give a group a role in the workspace, or change it (workspace admins)."""
    actor = current_user()
    workspace = groups.set_group_role(db(), settings(), actor, name, group,
                                      json_body().get("role"))
    db().commit()
    return {"workspace": workspaces.workspace_json(db(), workspace, actor, detail=True)}


@bp.delete("/workspaces/<name>/groups/<group>")
def remove_group_role(name: str, group: str) -> Any:
    """Take a group's role in the workspace away (workspace admins)."""
    actor = current_user()
    workspace = groups.remove_group_role(db(), settings(), actor, name, group)
    db().commit()
    return {"workspace": workspaces.workspace_json(db(), workspace, actor, detail=True)}
