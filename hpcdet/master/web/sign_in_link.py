"""Signing in with a one-time link from ``det user web-login``: ``/login/<token>``.

A sign-in link is a credential for *its* user, so two attacks use one against somebody else
(issue 28, finding 4):

* **Login CSRF.** Another site navigates the victim's browser to the intruder's own link;
  the victim then works, uploads and starts notebooks inside the intruder's account. A link
  is honoured only on a navigation the browser says did not come from another site: Fetch
  Metadata's ``Sec-Fetch-Site`` is ``none`` (typed, pasted, opened from a terminal) or
  ``same-origin``. ``cross-site`` and ``same-site`` are refused with 403, and so is a foreign
  ``Origin`` or ``Referer`` (browsers that send no Fetch Metadata); the link stays unused.
* **Silent session swap.** A browser already signed in as someone else is shown who it is
  signed in as and whom the link is for; only the confirm button (a POST from this page,
  carrying the current session's CSRF token) switches, and the old session is revoked.
"""

from __future__ import annotations

import datetime as dt
import hmac
from typing import Any
from urllib.parse import urlsplit

from flask import abort, current_app, redirect, render_template, request, url_for
from sqlalchemy.orm import Session
from werkzeug.wrappers import Response

from hpcdet.master.api.auth import CSRF_FIELD, SESSION_COOKIE
from hpcdet.master.api.common import settings
from hpcdet.master.security import tokens
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.identity import munge_mode, web_user

# Fetch Metadata values of a navigation that did not come from another site.
OWN_NAVIGATION = ("none", "same-origin")


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def foreign_source() -> str | None:
    """What shows that this request came from another site ("": nothing does)."""
    fetch_site = request.headers.get("Sec-Fetch-Site", "").strip().lower()
    if fetch_site and fetch_site not in OWN_NAVIGATION:
        return f"Sec-Fetch-Site: {fetch_site}"
    own = f"{request.scheme}://{request.host}".lower()
    for header in ("Origin", "Referer"):
        value = request.headers.get(header, "").strip()
        if value and _origin_of(value) != own:
            return f"{header}: {_origin_of(value)}"
    return None


def _page(template: str, status: int, **values: Any) -> tuple[str, int]:
    return render_template(template, page="login", next=url_for("web.index"), **values), status


@bp.route("/login/<token>", methods=["GET", "POST"])
def link_login(token: str) -> Any:
    """Sign in with a one-time link; a used or expired link answers 401 and sets nothing, a
    link opened from another site 403, and one for another user than the browser's asks
    first (see the module's docstring)."""
    if not munge_mode():
        abort(404)
    source = foreign_source()
    if source is not None:
        return _page("login.html", 403, error=(
            f"this sign-in link was opened from another site ({source}), so it was not used: "
            "open the link det user web-login printed yourself (paste it into the address "
            "bar)"))
    factory = current_app.config["HPCDET_SESSION_FACTORY"]
    with factory() as session:
        link_user = tokens.peek_web_link(session, token)
        if link_user is None:
            return _used_up()
        current = web_user()
        if request.method == "GET" and current not in (None, link_user):
            return _page("link_confirm.html", 200, current=current, link_user=link_user,
                         token=token)
        if request.method == "POST" and not _confirmed(current):
            abort(403)
        return _sign_in(session, token, replacing=current is not None)


def _confirmed(current: str | None) -> bool:
    """Whether the switch was confirmed on this master's page by the browser's session."""
    cookie = request.cookies.get(SESSION_COOKIE, "")
    return current is not None and hmac.compare_digest(
        request.form.get(CSRF_FIELD, ""), tokens.csrf_token(cookie))


def _used_up() -> tuple[str, int]:
    return _page("login.html", 401, error="this sign-in link is used up or expired: run "
                 "det user web-login for a new one")


def _sign_in(session: Session, token: str, *, replacing: bool) -> Any:
    user = tokens.consume_web_link(session, token)
    if user is None:  # another browser used it in between
        return _used_up()
    if replacing:
        tokens.revoke_token(session, request.cookies.get(SESSION_COOKIE, ""))
    cookie, _ = tokens.issue(session, user, "web",
                             dt.timedelta(hours=settings().session_hours), "web")
    tokens.seen(session, user)
    session.commit()
    response: Response = redirect(url_for("web.index"))
    response.set_cookie(SESSION_COOKIE, cookie, max_age=int(settings().session_hours * 3600),
                        httponly=True, samesite="Strict", secure=request.is_secure, path="/")
    return response
