"""Who the browser is: a user name chosen on ``/login`` and kept in a cookie.

The CLI names its user in the ``X-Hpcdet-User`` header; the pages' scripts send the same
header with the name from the ``hpcdet_user`` cookie, so the API never reads the cookie and a
form posted from another site cannot act as the signed-in user (a cross-site request cannot
set a custom header). Names are not passwords (see :mod:`hpcdet.master.permissions`).
"""

from __future__ import annotations

import re
from typing import Any

from flask import redirect, render_template, request, url_for
from werkzeug.wrappers import Response

from hpcdet.master import authz
from hpcdet.master.api.common import db, settings
from hpcdet.master.permissions import ANONYMOUS, may_modify
from hpcdet.master.web import bp

COOKIE = "hpcdet_user"
# Login-name characters only: the value goes into a cookie and a header unquoted.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")
YEAR_SECONDS = 365 * 24 * 3600
OPEN_ENDPOINTS = {"web.login"}


def page_user() -> str:
    """Who the page acts for: the signed-in name, else ``anonymous`` (open masters only)."""
    return web_user() or ANONYMOUS


def page_sees(owner: str, workspace_id: int | None) -> bool:
    """Whether the browser's user may see an object (:mod:`hpcdet.master.authz`)."""
    return authz.access(db(), settings(), page_user(), owner, workspace_id) is not \
        authz.Access.NONE


def web_user() -> str | None:
    """The signed-in name, or None (a cookie that is not a valid name counts as none)."""
    name = request.cookies.get(COOKIE, "")
    return name if NAME.fullmatch(name) else None


@bp.before_request
def _require_sign_in() -> Any:
    """On a master with ``auth.require_user``, pages send an unnamed browser to /login."""
    if request.endpoint in OPEN_ENDPOINTS:
        return None
    if settings().require_user and web_user() is None:
        return redirect(url_for("web.login", next=request.full_path.rstrip("?")))
    return None


@bp.app_context_processor
def _identity() -> dict[str, Any]:
    user = web_user()
    return {"web_user": user, "may_modify": _may_modify}


def _may_modify(owner: str, workspace_id: int | None = None) -> bool:
    actor = page_user()
    role = authz.role_in(db(), workspace_id, actor) if workspace_id is not None else None
    return may_modify(settings(), actor, owner, role)


@bp.route("/login", methods=["GET", "POST"])
def login() -> Any:
    """Choose the name the pages act as; a bad name re-shows the form with a 400."""
    target = _safe_next(request.values.get("next"))
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
    """Forget the name."""
    response: Response = redirect(url_for("web.index"))
    response.delete_cookie(COOKIE, samesite="Strict")
    return response


def _safe_next(value: str | None) -> str:
    """A local path to return to; anything else (another site, a scheme) goes home."""
    if value and value.startswith("/") and not value.startswith("//") and "\\" not in value:
        return value
    return url_for("web.index")
