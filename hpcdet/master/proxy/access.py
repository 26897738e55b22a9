"""Who may use the proxy, and where it goes.

The caller is identified exactly as the API and the web pages identify them
(:mod:`hpcdet.master.api.auth`, :mod:`hpcdet.master.web.identity`): a bearer token (``det``),
the web session cookie (munge master) or, on an open master, the name header or the pages'
name cookie. The session cookie is taken without the pages' CSRF token, which a proxied
application cannot know: it is SameSite=Strict, so a cross-site request does not carry it,
and :mod:`.asgi` also refuses a WebSocket or changing request whose ``Origin`` is another
site's. Only the task's owner may use a task's proxy: a notebook runs code as its owner,
and what runs as a user is theirs to choose (:func:`authz.require_runs_as_self`; not
workspace members, not cluster admins either).

It runs in a worker thread inside a Flask request context of the master's app, so every rule
is the app's own code; one small query per request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flask import Flask, current_app, request

from hpcdet.master.api.auth import (
    LOGIN_HINT,
    SESSION_COOKIE,
    USER_HEADER,
    bearer_token,
    current_user,
    web_session_user,
)
from hpcdet.master.api.common import db
from hpcdet.master.errors import Gone, Unauthenticated, Unavailable
from hpcdet.master.models import CommandTask
from hpcdet.master.security import authz
from hpcdet.master.settings.core import MasterSettings
from hpcdet.states import State

# The request headers that identify a caller: the only ones copied into the context.
IDENTITY_HEADERS = frozenset({"authorization", "cookie", USER_HEADER.lower()})


@dataclass(frozen=True)
class Target:
    """Where one proxied request goes (``host``: the pinned IP address), and the secret
    the service expects."""

    task_id: int
    host: str
    port: int
    token: str


def authorize(app: Flask, task_id: int, headers: Sequence[tuple[str, str]]) -> Target:
    """The task's service for the caller ``headers`` identify; a refusal otherwise
    (:mod:`hpcdet.master.errors`: Unauthenticated nobody proven, NotFound unknown or unseen,
    Forbidden seen but not theirs, Unavailable not up yet, Gone ended)."""
    wanted = [(name, value) for name, value in headers if name.lower() in IDENTITY_HEADERS]
    with app.test_request_context(f"/proxy/{task_id}/", headers=wanted):
        return _target(task_id, proxy_user())


def proxy_user() -> str:
    """The caller of the request in context (see the module doc)."""
    from hpcdet.master.web.identity import web_user

    settings: MasterSettings = current_app.config["HPCDET_SETTINGS"]
    if settings.auth_mode == "munge":
        if bearer_token():
            return current_user()
        cookie = request.cookies.get(SESSION_COOKIE, "")
        if cookie:
            return web_session_user(cookie, check_csrf=False)
        raise Unauthenticated("login_required", "sign in first: det user web-login prints a "
                              f"link for the browser; for det, {LOGIN_HINT}")
    if request.headers.get(USER_HEADER):
        return current_user()
    return web_user() or current_user()


def _target(task_id: int, user: str) -> Target:
    settings: MasterSettings = current_app.config["HPCDET_SETTINGS"]
    what = f"task {task_id}"
    task = db().get(CommandTask, task_id)
    if task is None or task.service_token is None:
        raise authz.not_found(what)  # a task without a service has nothing to proxy
    have = authz.access(db(), settings, user, task.owner, task.workspace_id)
    if have is authz.Access.NONE:
        raise authz.not_found(what)
    authz.require_runs_as_self(settings, user, task.owner, f"open the {task.kind} of {what}",
                               f"start a {task.kind} of your own (det {task.kind} start)")
    if State(task.state).is_terminal:
        raise Gone("gone", f"{what} ended ({task.state}); its {task.kind} is gone")
    if task.state != State.RUNNING.value or task.service_address is None \
            or task.service_port is None:
        raise Unavailable("service_unavailable", f"the {task.kind} of {what} is not up yet "
                          f"(the task is {task.state}); try again in a few seconds")
    # The address pinned at registration (proxy/pinning.py), never the name again.
    return Target(task.id, task.service_address, task.service_port, task.service_token)
