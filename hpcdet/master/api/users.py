"""Sign-in and tokens: MUNGE login, logout, whoami, users, API tokens, one-time web links.

``POST /auth/login {"credential": C}`` decodes a MUNGE credential (``unmunge`` on the
master's host, same cluster key): munged refuses replays and expired credentials, the
payload must name this master, and the UID becomes the user name (``pwd``). The answer's
session token is valid for ``auth.session_hours``.
"""

from __future__ import annotations

import datetime as dt
import pwd
import socket
from typing import Any
from urllib.parse import urlsplit

from flask import request

from hpcdet import munge
from hpcdet.master.api.auth import bearer_token, calling_token, current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, int_arg, json_body, settings
from hpcdet.master.errors import Forbidden, Invalid, NotFound, Unauthenticated, Unavailable
from hpcdet.master.model_base import iso_time
from hpcdet.master.models import AuthToken, as_utc, utcnow
from hpcdet.master.scheduling.task_tokens import TASK_TOKEN_PREFIX
from hpcdet.master.security import tokens, users
from hpcdet.master.security.permissions import ANONYMOUS

MAX_API_TOKEN_DAYS = 3650
_LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}


@bp.post("/auth/login")
def login() -> Any:
    """Exchange a MUNGE credential for a session token: ``{token, username, expires_at}``."""
    credential = json_body().get("credential")
    if not isinstance(credential, str) or not credential.startswith("MUNGE:") \
            or len(credential) > 8192:
        raise Invalid("bad_request", "credential: must be a MUNGE credential "
                      "(det user login makes one)")
    try:
        decoded = munge.decode(credential)
    except munge.MungeError as exc:
        if exc.unavailable:
            raise Unavailable("munge_unavailable", f"the master cannot check MUNGE "
                              f"credentials ({exc}); its admins should check `systemctl status "
                              "munge` on the master's host") from None
        raise Unauthenticated("unauthorized", f"{exc}; run det user login again") from None
    if not _payload_for_this_master(decoded.payload):
        raise Unauthenticated("unauthorized", "the MUNGE credential was made for another "
                              "master (or another purpose); run det user login")
    username = _user_name(decoded.uid)
    if users.is_deactivated(db(), username):
        raise users.deactivated_error(username)
    hours = settings().session_hours
    token, row = tokens.issue(db(), username, "session", dt.timedelta(hours=hours), "login")
    tokens.seen(db(), username)
    db().commit()
    return {"token": token, "username": username, "expires_at": iso_time(row.expires_at),
            "token_id": row.id}


def _payload_for_this_master(payload: str) -> bool:
    """``hpcdet-login URL`` where URL's port is this master's and its host one of its names."""
    purpose, _, url = payload.partition(" ")
    if purpose != munge.PURPOSE:
        return False
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    s = settings()
    if port not in {s.port, s.resource_manager.master_port}:
        return False
    names = _LOCAL_NAMES | {s.resource_manager.master_host, socket.gethostname(),
                            socket.getfqdn(), s.host}
    return (parts.hostname or "") in names


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        raise Unauthenticated("unauthorized", f"UID {uid} has no user name on the master's "
                              "host (the master and login nodes must share users)") from None


@bp.post("/auth/logout")
def logout() -> Any:
    """Revoke the calling session token."""
    current_user()
    token = bearer_token()
    if token:
        tokens.revoke_token(db(), token)
    return {"logged_out": True}


@bp.get("/auth/whoami")
def whoami() -> Any:
    """Who the master takes the caller for, and how it knows."""
    user = current_user()
    s = settings()
    return {"username": user, "auth_mode": s.auth_mode, "admin": user in s.admins}


@bp.get("/users")
def list_users() -> Any:
    """Users who signed in or were registered, by name; deactivated ones with ``?all=1``."""
    _identified_user()
    rows = users.list_users(db(), request.args.get("all") in ("1", "true"))
    return {"users": [users.user_json(settings(), u) for u in rows]}


@bp.get("/auth/tokens")
def list_tokens() -> Any:
    """The caller's API tokens and sessions (never the tokens themselves)."""
    user = _identified_user()
    rows = tokens.tokens_of(db(), user, ("api", "session", "web"))
    if request.args.get("all") not in ("1", "true"):
        now = utcnow()
        rows = [r for r in rows if r.revoked_at is None and as_utc(r.expires_at) > now]
    return {"tokens": [_token_json(r) for r in rows]}


@bp.post("/auth/tokens")
def create_token() -> Any:
    """A new API token for scripts: ``{id, token, name, expires_at}`` (shown only now)."""
    user = _identified_user()
    body = json_body()
    name = body.get("name") or "api"
    days = body.get("expires_days", 30)
    if not isinstance(name, str) or len(name) > 128 or not name.isprintable():
        raise Invalid("bad_request", "name: at most 128 printable characters")
    if isinstance(days, bool) or not isinstance(days, int) \
            or not 1 <= days <= MAX_API_TOKEN_DAYS:
        raise Invalid("bad_request",
                      f"expires_days: must be an integer from 1 to {MAX_API_TOKEN_DAYS}")
    lifetime = dt.timedelta(days=days)
    task = task_of_caller()
    if task is not None:  # minted inside a task's job: it dies with the task (task_tokens)
        name, lifetime = task.name, min(lifetime, as_utc(task.expires_at) - utcnow())
    token, row = tokens.issue(db(), user, "api", lifetime, name)
    db().commit()
    return {**_token_json(row), "token": token}, 201


def task_of_caller() -> tokens.TokenFacts | None:
    """The caller's token when it is a task's (``task:<id>``, given to a notebook's kernel or
    a TensorBoard), else None."""
    facts = calling_token()
    return facts if facts is not None and facts.name.startswith(TASK_TOKEN_PREFIX) else None


@bp.delete("/auth/tokens/<int:token_id>")
def revoke_token(token_id: int) -> Any:
    """Revoke one of the caller's tokens (an admin may revoke anybody's)."""
    user = _identified_user()
    if not tokens.revoke(db(), token_id, user, admin=user in settings().admins):
        raise NotFound("not_found", f"token {token_id} not found")
    return {"revoked": token_id}


@bp.post("/auth/web_link")
def web_link() -> Any:
    """A one-time sign-in link for the web pages: ``{path, expires_at}``."""
    user = _identified_user()
    if task_of_caller() is not None:
        raise Forbidden("forbidden", "a task's token cannot sign a browser in (the "
                        "session would outlive the task): run det user web-login on a login "
                        "node")
    seconds = int_arg("seconds", tokens.WEB_LINK_SECONDS, lo=5, hi=600)
    token, row = tokens.issue(db(), user, "web_link", dt.timedelta(seconds=seconds))
    db().commit()
    return {"path": f"/login/{token}", "expires_at": iso_time(row.expires_at)}, 201


def _identified_user() -> str:
    user = current_user()
    if user == ANONYMOUS:
        raise Unauthenticated("unauthorized", "tokens belong to users: name yourself "
                              "(det -u NAME) or sign in on this master")
    return user


def _token_json(row: AuthToken) -> dict[str, Any]:
    return {"id": row.id, "kind": row.kind, "name": row.name, "username": row.username,
            "created_at": iso_time(row.created_at), "expires_at": iso_time(row.expires_at),
            "revoked_at": iso_time(row.revoked_at), "last_used_at": iso_time(row.last_used_at)}
