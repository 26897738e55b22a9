"""User administration and roles (Determined's ``det user`` admin commands, ``det rbac``).

* ``POST /users`` ``{username}``: register a Unix user (cluster admins)
* ``PATCH /users/<name>`` ``{display_name?, active?}``
* ``POST /users/<name>/activate``, ``.../deactivate`` (cluster admins)
* ``GET /users/<name>/roles``: cluster admin or not, and workspace roles
* ``GET /rbac/roles``: the roles and what each allows

Rules in :mod:`hpcdet.master.security.users` and :mod:`hpcdet.master.security.roles`.
"""

from __future__ import annotations

from typing import Any

from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, json_body, settings
from hpcdet.master.security import roles, users


@bp.post("/users")
def create_user() -> Any:
    """Register a Unix user the master's host knows, before their first sign-in."""
    user = users.create_user(db(), settings(), current_user(), json_body())
    db().commit()
    return {"user": users.user_json(settings(), user)}, 201


@bp.patch("/users/<name>")
def edit_user(name: str) -> Any:
    """Set a user's display name (themselves or a cluster admin) or ``active``."""
    user = users.edit_user(db(), settings(), current_user(), name, json_body())
    db().commit()
    return {"user": users.user_json(settings(), user)}


@bp.post("/users/<name>/<any(activate, deactivate):action>")
def activate_user(name: str, action: str) -> Any:
    """Let a user use the master again, or refuse all their requests (cluster admins)."""
    user = users.set_active(db(), settings(), current_user(), name, action == "activate")
    db().commit()
    return {"user": users.user_json(settings(), user)}


@bp.get("/users/<name>/roles")
def user_roles(name: str) -> Any:
    """A user's roles: cluster admin or not, and the workspace roles the caller sees."""
    return roles.roles_of(db(), settings(), current_user(), users.valid_user(name))


@bp.get("/rbac/roles")
def list_roles() -> Any:
    """Every role and what it allows."""
    current_user()
    return {"roles": list(roles.ROLE_CATALOG)}
