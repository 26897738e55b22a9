"""The master's users: the cluster's Unix users, proven by MUNGE (no passwords here).

What Determined's user administration maps to in hpcdet:

* ``create``: a cluster admin registers a Unix user the master's host knows (``getent
  passwd``) before their first sign-in, so they can be listed, named and deactivated;
* ``activate``/``deactivate``: a cluster admin blocks a user from the master (every
  request of theirs, sign-in included, is refused with Forbidden) and lets them back; nobody
  deactivates themselves, and a cluster admin of ``auth.admins`` is not deactivated;
* ``edit --display-name``: the user themselves or a cluster admin;
* cluster admin is a setting (``auth.admins`` in master.yaml), not a row: it is not granted
  or taken at run time; passwords, user names and their renaming belong to the cluster.
"""

from __future__ import annotations

import pwd
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from hpcdet.master.errors import Conflict, Forbidden, Invalid, NotFound
from hpcdet.master.model_base import iso_time
from hpcdet.master.models import User, utcnow
from hpcdet.master.security import authz
from hpcdet.master.security.workspaces import USER
from hpcdet.master.settings.core import MasterSettings

ADMINS_SETTING = "auth.admins in master.yaml"
FROM_THE_CLUSTER = ("users are the cluster's Unix users, proven with MUNGE: their names and "
                    "passwords are the cluster's (passwd, your site's identity service), "
                    "not the master's")
MAX_DISPLAY_NAME = 256


def unix_user_exists(name: str) -> bool:
    """Whether the master's host knows Unix user ``name`` (``getent passwd NAME``)."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def valid_user(value: Any) -> str:
    """A user (login) name, or Invalid."""
    if not isinstance(value, str) or not USER.fullmatch(value):
        raise Invalid("bad_request", "username: a user (login) name")
    return value


def require_cluster_admin(settings: MasterSettings, actor: str, doing: str) -> None:
    """Forbidden unless ``actor`` is a cluster admin (``auth.admins``)."""
    if not authz.is_admin(settings, actor):
        raise Forbidden("forbidden", f"only a cluster admin ({ADMINS_SETTING}) may "
                        f"{doing}; user {actor!r} is not one")


def require_identified(settings: MasterSettings, doing: str) -> None:
    """Conflict on a master that cannot tell users apart (open, without ``require_user``)."""
    if not settings.identifies_users:
        raise Conflict("users_not_identified", f"cannot {doing}: this master does not "
                       "tell users apart (auth.mode: open without auth.require_user)")


def is_deactivated(session: Session, name: str) -> bool:
    """Whether a cluster admin deactivated user ``name``."""
    return session.scalar(select(User.active).where(User.name == name)) is False


def deactivated_error(name: str) -> Forbidden:
    """The answer to every request of a deactivated user."""
    return Forbidden("user_deactivated", f"user {name!r} is deactivated on this master; "
                     "ask a cluster admin (det user activate)")


def user_json(settings: MasterSettings, user: User) -> dict[str, Any]:
    """The ``User`` shape of docs/api.md."""
    return {"username": user.name, "display_name": user.display_name, "active": user.active,
            "admin": user.name in settings.admins, "first_seen": iso_time(user.first_seen),
            "last_seen": iso_time(user.last_seen)}


def list_users(session: Session, include_inactive: bool) -> list[User]:
    """The users the master knows, by name (deactivated ones only when asked)."""
    query = select(User).order_by(User.name)
    if not include_inactive:
        query = query.where(User.active.is_(True))
    return list(session.scalars(query))


def find_user(session: Session, name: str) -> User:
    """User ``name``, or NotFound saying how users become known."""
    user = session.get(User, name)
    if user is None:
        raise NotFound("not_found", f"user {name!r} not found: users are known once "
                       "they sign in (det user login) or a cluster admin registers them "
                       "(det user create)")
    return user


def create_user(session: Session, settings: MasterSettings, actor: str, body: dict[str, Any],
                exists: Any = None) -> User:
    """Register Unix user ``body["username"]`` before their first sign-in (cluster admins).

    ``admin`` or ``password`` in the body are refused: neither is the master's to set.
    ``exists`` checks the name on the master's host (:func:`unix_user_exists`).
    """
    require_identified(settings, "register users")
    require_cluster_admin(settings, actor, "register users")
    if body.get("admin"):
        raise Invalid("bad_request", f"cluster admins are named in {ADMINS_SETTING} "
                      "(the master reads it at start); register the user without admin")
    if body.get("password") is not None:
        raise Invalid("bad_request", f"no passwords here: {FROM_THE_CLUSTER}")
    name = valid_user(body.get("username"))
    if not (exists or unix_user_exists)(name):
        raise Invalid("no_such_unix_user", f"the master's host has no Unix user "
                      f"{name!r} (getent passwd {name}): {FROM_THE_CLUSTER}")
    if session.get(User, name) is not None:
        raise Conflict("conflict", f"user {name!r} is already known to the master")
    now = utcnow()
    user = User(name=name, first_seen=now, last_seen=now, active=True, display_name="")
    session.add(user)
    session.flush()
    return user


def set_active(session: Session, settings: MasterSettings, actor: str, name: str,
               active: bool) -> User:
    """Activate or deactivate user ``name`` (cluster admins; never themselves, nor an admin).

    A user the master has not seen yet is registered as they are set (so a user can be
    blocked before their first sign-in).
    """
    doing = "activate users" if active else "deactivate users"
    require_identified(settings, doing)
    require_cluster_admin(settings, actor, doing)
    valid_user(name)
    if not active and name == actor:
        raise Conflict("conflict", "you cannot deactivate yourself")
    if not active and name in settings.admins:
        raise Conflict("conflict", f"{name!r} is a cluster admin: take them out of "
                       f"{ADMINS_SETTING} (and restart the master) first")
    user = session.get(User, name)
    if user is None:
        now = utcnow()
        user = User(name=name, first_seen=now, last_seen=now, display_name="")
        session.add(user)
    user.active = active
    session.flush()
    return user


def edit_user(session: Session, settings: MasterSettings, actor: str, name: str,
              body: dict[str, Any]) -> User:
    """Set ``display_name`` (the user or a cluster admin) or ``active`` (cluster admins)."""
    unknown = sorted(set(body) - {"display_name", "active"})
    if unknown or not body:
        raise Invalid("bad_request", "the body sets display_name and/or active"
                      + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
    if "active" in body:
        if not isinstance(body["active"], bool):
            raise Invalid("bad_request", "active: true or false")
        set_active(session, settings, actor, name, body["active"])
    user = find_user(session, valid_user(name))
    if "display_name" in body:
        if actor != name:
            require_cluster_admin(settings, actor, "change another user's display name")
        value = body["display_name"]
        if not isinstance(value, str) or len(value) > MAX_DISPLAY_NAME \
                or not value.isprintable():
            raise Invalid("bad_request", f"display_name: at most {MAX_DISPLAY_NAME} "
                          "printable characters")
        user.display_name = value
    session.flush()
    return user


__all__ = ["FROM_THE_CLUSTER", "create_user", "deactivated_error", "edit_user", "find_user",
           "is_deactivated", "list_users", "set_active", "unix_user_exists", "user_json"]
