"""Who is calling: a user (a token, or on an open master ``X-Hpcdet-User``) or a trial's
harness (its own bearer token).

On a master with ``auth.mode: munge`` the name header is ignored: a user is whoever owns
the ``Authorization: Bearer`` session or API token (from ``det user login``, which proves
the Unix user with MUNGE) or the web session cookie set by a one-time link; a web request
that changes something must also carry that session's CSRF token. On an open master
(``auth.mode: open``) callers name themselves, as before.
"""

from __future__ import annotations

import hmac

from flask import current_app, g, request

from hpcdet.master.errors import Forbidden, Invalid, Unauthenticated
from hpcdet.master.models import Trial
from hpcdet.master.security import tokens, users
from hpcdet.master.security.permissions import ANONYMOUS
from hpcdet.master.settings.core import MasterSettings

USER_HEADER = "X-Hpcdet-User"
SESSION_COOKIE = "hpcdet_session"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOGIN_HINT = "run det user login (det logs in by itself where MUNGE runs)"


def current_user() -> str:
    """The calling user's name; 401 when the master requires one and none was proven."""
    if "hpcdet_user" not in g:
        settings = current_app.config["HPCDET_SETTINGS"]
        identified = _identify(settings)
        if settings.identifies_users and identified != ANONYMOUS:
            _refuse_deactivated(identified)
        g.hpcdet_user = identified
    name: str = g.hpcdet_user
    return name


def _refuse_deactivated(name: str) -> None:
    """403 when a cluster admin deactivated user ``name`` (det user deactivate)."""
    with current_app.config["HPCDET_SESSION_FACTORY"]() as session:
        if users.is_deactivated(session, name):
            raise users.deactivated_error(name)


def _identify(settings: MasterSettings) -> str:
    bearer = bearer_token()
    if settings.auth_mode == "munge":
        if bearer:
            return _token_user(bearer, tokens.USER_KINDS)
        cookie = request.cookies.get(SESSION_COOKIE, "")
        if cookie:
            return web_session_user(cookie, check_csrf=True)
        raise Unauthenticated("login_required", f"this master needs to know who you are: "
                              f"{LOGIN_HINT}")
    return _open_user(settings)


def _open_user(settings: MasterSettings) -> str:
    name = (request.headers.get(USER_HEADER) or "").strip()
    if name:
        if len(name) > 128 or not name.isprintable():
            raise Invalid("bad_request", f"invalid {USER_HEADER} header")
        return name
    if settings.require_user:
        raise Unauthenticated("unauthorized", f"this master requires the {USER_HEADER} header "
                              "(det sends it from -u/--user or your login name)")
    return ANONYMOUS


def bearer_token() -> str:
    """The request's ``Authorization: Bearer`` token, or ``""``."""
    header = request.headers.get("Authorization", "")
    return header[7:].strip() if header.startswith("Bearer ") else ""


def _token_user(token: str, kinds: tuple[str, ...]) -> str:
    factory = current_app.config["HPCDET_SESSION_FACTORY"]
    with factory() as session:
        try:
            row = tokens.authenticate(session, token, kinds)
        except tokens.TokenProblem as exc:
            raise Unauthenticated(exc.code, exc.message) from None
        g.hpcdet_token = tokens.TokenFacts(row.name, row.expires_at)
        return row.username


def calling_token() -> tokens.TokenFacts | None:
    """The name and expiry of the token the caller authenticated with (None: no token, or
    an open master's name header); call after :func:`current_user`."""
    facts: tokens.TokenFacts | None = g.get("hpcdet_token")
    return facts


def web_session_user(cookie: str, *, check_csrf: bool) -> str:
    """The user of a web session cookie; a state-changing request without the session's
    CSRF token (header or form field) is refused with 403 before anything happens."""
    user = _token_user(cookie, ("web",))
    _refuse_deactivated(user)  # pages too (hpcdet.master.web.identity)
    if check_csrf and request.method not in SAFE_METHODS:
        sent = request.headers.get(CSRF_HEADER) or request.form.get(CSRF_FIELD) or ""
        if not hmac.compare_digest(sent, tokens.csrf_token(cookie)):
            raise Forbidden("csrf", "this request did not carry the page's CSRF token; "
                            "reload the page and try again")
    return user


def require_trial_token(trial: Trial) -> None:
    """401 unless the request carries ``trial``'s own bearer token."""
    require_token(trial.id, trial.token)


def require_token(trial_id: int, expected_hash: str) -> None:
    """401 unless the request's bearer token hashes to ``expected_hash`` (trial
    ``trial_id``'s stored token hash)."""
    token = bearer_token()
    if not token or not tokens.token_matches(token, expected_hash):
        raise Unauthenticated("unauthorized", f"a valid token for trial {trial_id} is required")
