"""Who the browser is.

On a master with ``auth.mode: munge`` the browser is signed in by a one-time link from
``det user web-login`` (``/login/<token>``), which sets an HttpOnly, SameSite=Strict session
cookie (Secure over HTTPS); every state-changing request from the pages carries the
session's CSRF token (a hidden form field, or the ``X-CSRF-Token`` header from
``hpcdet.js``), and one without it is refused with 403 before anything happens.

On an open master (``auth.mode: open``) the user name is chosen on ``/login`` and kept in a
cookie. The CLI names its user in the ``X-Hpcdet-User`` header; the pages' scripts send the same
header with the name from the ``hpcdet_user`` cookie, so the API never reads the cookie and a
form posted from another site cannot act as the signed-in user (a cross-site request cannot
set a custom header). Names are not passwords (see :mod:`hpcdet.master.security.permissions`).
"""

from __future__ import annotations

import hmac
import re
from typing import Any

from flask import abort, current_app, g, redirect, render_template, request, url_for
from werkzeug.wrappers import Response

from hpcdet.master.api.auth import CSRF_FIELD, SESSION_COOKIE, web_session_user
from hpcdet.master.api.common import db, settings
from hpcdet.master.errors import DomainError
from hpcdet.master.security import authz, tokens
from hpcdet.master.security.permissions import ANONYMOUS, may_modify
from hpcdet.master.transfer import wire
from hpcdet.master.web.blueprint import bp

COOKIE = "hpcdet_user"
# Login-name characters only: the value goes into a cookie and a header unquoted.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")
YEAR_SECONDS = 365 * 24 * 3600
OPEN_ENDPOINTS = {"web.login", "web.link_login"}  # (web/sign_in_link.py)


def munge_mode() -> bool:
    return settings().auth_mode == "munge"


def page_user() -> str:
    """Who the page acts for: the signed-in name, else ``anonymous`` (open masters only)."""
    return web_user() or ANONYMOUS


def page_sees(owner: str, workspace_id: int | None) -> bool:
    """Whether the browser's user may see an object (:mod:`hpcdet.master.security.authz`)."""
    return authz.access(db(), settings(), page_user(), owner, workspace_id) is not \
        authz.Access.NONE


def web_user() -> str | None:
    """The signed-in name, or None (a cookie that is not a valid name or session counts as
    none)."""
    if munge_mode():
        if "hpcdet_web_user" not in g:
            g.hpcdet_web_user = _session_user()
        user: str | None = g.hpcdet_web_user
        return user
    name = request.cookies.get(COOKIE, "")
    return name if NAME.fullmatch(name) else None


def _session_user() -> str | None:
    cookie = request.cookies.get(SESSION_COOKIE, "")
    if not cookie:
        return None
    try:
        return web_session_user(cookie, check_csrf=False)
    except DomainError:
        return None


def csrf_for_page() -> str:
    """The CSRF token the page's forms and scripts send ("" without a web session)."""
    cookie = request.cookies.get(SESSION_COOKIE, "")
    token = tokens.csrf_token(cookie) if cookie and munge_mode() and web_user() else ""
    if token:
        wire.keep_uncompressed()  # a secret in the page: no BREACH length oracle
    return token


@bp.before_request
def _require_sign_in() -> Any:
    """On a master that identifies users, pages send an unknown browser to /login."""
    if request.endpoint in OPEN_ENDPOINTS:
        return None
    if settings().identifies_users and web_user() is None:
        return redirect(url_for("web.login", next=request.full_path.rstrip("?")))
    return None


@bp.app_context_processor
def _identity() -> dict[str, Any]:
    user = web_user()
    return {"web_user": user, "csrf_token": csrf_for_page(), "munge_mode": munge_mode(),
            "may_modify": _may_modify}


def _may_modify(owner: str, workspace_id: int | None = None) -> bool:
    actor = page_user()
    role = authz.role_in(db(), workspace_id, actor) if workspace_id is not None else None
    return may_modify(settings(), actor, owner, role)


@bp.route("/login", methods=["GET", "POST"])
def login() -> Any:
    """Choose the name the pages act as; a bad name re-shows the form with a 400."""
    target = _safe_next(request.values.get("next"))
    if munge_mode():
        status = 200 if request.method == "GET" else 403
        return render_template("login.html", page="login", next=target, error=None), status
    if request.method == "GET":
        return render_template("login.html", page="login", next=target, error=None)
    name = (request.form.get("name") or "").strip()
    if not NAME.fullmatch(name):
        error = ("name: letters, digits and . _ @ + - only, starting with a letter or "
                 "digit, at most 128 characters")
        return render_template("login.html", page="login", next=target, error=error,
                               name=name), 400
    response: Response = redirect(target)
    response.set_cookie(COOKIE, name, max_age=YEAR_SECONDS, samesite="Strict")
    return response


@bp.post("/logout")
def logout() -> Any:
    """Forget the name (open master) or end the web session (munge master; the form must
    carry the CSRF token)."""
    if munge_mode():
        cookie = request.cookies.get(SESSION_COOKIE, "")
        if cookie and web_user() is not None:
            if not hmac.compare_digest(request.form.get(CSRF_FIELD, ""),
                                              tokens.csrf_token(cookie)):
                abort(403)
            factory = current_app.config["HPCDET_SESSION_FACTORY"]
            with factory() as session:
                tokens.revoke_token(session, cookie)
    response: Response = redirect(url_for("web.index"))
    response.delete_cookie(COOKIE, samesite="Strict")
    response.delete_cookie(SESSION_COOKIE, samesite="Strict", httponly=True)
    return response


def _safe_next(value: str | None) -> str:
    """A local path to return to; anything else (another site, a scheme) goes home.

    No whitespace or control character at all: browsers strip tab, CR and LF inside a URL,
    so ``/\t/evil.example`` would become ``//evil.example``, another site."""
    if (value and value.startswith("/") and not value.startswith("//") and "\\" not in value
            and value.isprintable() and not any(char.isspace() for char in value)):
        return value
    return url_for("web.index")
