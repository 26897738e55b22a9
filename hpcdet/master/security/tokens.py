"""Users' tokens: sessions (from a MUNGE login), API tokens, one-time web links, web sessions.

Only a token's sha256 is stored (``auth_tokens.token_hash``); the token itself is shown
once, to its owner. A token is valid until ``expires_at`` unless revoked. A web link is
single use: :func:`consume_web_link` revokes it in the same statement that checks it, so two
browsers racing for one link cannot both win.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from hpcdet.master.models import AuthToken, User, as_utc, utcnow

KINDS = ("session", "api", "web_link", "web")
USER_KINDS = ("session", "api")  # what ``Authorization: Bearer`` accepts
PREFIX = "hdt_"
WEB_LINK_SECONDS = 60
# last_used_at is written at most this often per token (not on every request).
TOUCH_SECONDS = 60


@dataclass(frozen=True)
class TokenFacts:
    """What a request's token was: its name (``task:<id>`` for a task's) and expiry."""

    name: str
    expires_at: dt.datetime


class TokenProblem(Exception):
    """A token that does not authenticate; ``code`` is the API error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def hash_token(token: str) -> str:
    """The stored form of ``token``: sha256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(token: str, stored_hash: str) -> bool:
    """Whether ``token`` hashes to ``stored_hash`` (constant-time comparison)."""
    return hmac.compare_digest(hash_token(token), stored_hash)


def new_token() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def issue(session: Session, username: str, kind: str, lifetime: dt.timedelta,
          name: str = "") -> tuple[str, AuthToken]:
    """A new token of ``kind`` for ``username``: (the token, its row). The caller commits."""
    if kind not in KINDS:
        raise ValueError(f"unknown token kind {kind!r}")
    token = new_token()
    now = utcnow()
    row = AuthToken(username=username, kind=kind, token_hash=hash_token(token), name=name,
                    created_at=now, expires_at=now + lifetime)
    session.add(row)
    session.flush()
    return token, row


def authenticate(session: Session, token: str, kinds: Sequence[str]) -> AuthToken:
    """The live token row for ``token`` among ``kinds``, or :class:`TokenProblem`."""
    row = session.scalars(select(AuthToken).where(
        AuthToken.token_hash == hash_token(token))).one_or_none()
    if row is None or row.kind not in kinds:
        raise TokenProblem("unauthorized", "the token is not valid on this master; "
                           "run det user login")
    if row.revoked_at is not None:
        raise TokenProblem("token_revoked", "the token was revoked; run det user login")
    now = utcnow()
    if as_utc(row.expires_at) <= now:
        raise TokenProblem("token_expired", "the token has expired; run det user login")
    if row.last_used_at is None or now - as_utc(row.last_used_at) > dt.timedelta(
            seconds=TOUCH_SECONDS):
        row.last_used_at = now
        session.commit()
    return row


def _live_web_link(session: Session, token: str) -> AuthToken | None:
    row = session.scalars(select(AuthToken).where(AuthToken.token_hash == hash_token(token),
                                                  AuthToken.kind == "web_link")).one_or_none()
    if row is None or row.revoked_at is not None or as_utc(row.expires_at) <= utcnow():
        return None
    return row


def peek_web_link(session: Session, token: str) -> str | None:
    """The user a one-time web link would sign in, leaving it unused; None if it is not
    (or no longer) valid."""
    row = _live_web_link(session, token)
    return None if row is None else row.username


def consume_web_link(session: Session, token: str) -> str | None:
    """The user a one-time web link signs in, revoking the link; None if it is not (or no
    longer) valid."""
    row = _live_web_link(session, token)
    if row is None:
        return None
    now = utcnow()
    done = session.execute(update(AuthToken).where(
        AuthToken.id == row.id, AuthToken.revoked_at.is_(None)).values(
        revoked_at=now, last_used_at=now))
    session.commit()
    return row.username if getattr(done, "rowcount", 0) == 1 else None


def revoke(session: Session, token_id: int, username: str, *, admin: bool = False) -> bool:
    """Revoke token ``token_id`` if it is ``username``'s (any user's for an admin)."""
    row = session.get(AuthToken, token_id)
    if row is None or (row.username != username and not admin):
        return False
    if row.revoked_at is None:
        row.revoked_at = utcnow()
    session.commit()
    return True


def revoke_token(session: Session, token: str) -> None:
    """Revoke the token itself (logout)."""
    session.execute(update(AuthToken).where(
        AuthToken.token_hash == hash_token(token), AuthToken.revoked_at.is_(None)).values(
        revoked_at=utcnow()))
    session.commit()


def tokens_of(session: Session, username: str, kinds: Sequence[str]) -> list[AuthToken]:
    """``username``'s tokens of ``kinds``, newest first."""
    return list(session.scalars(select(AuthToken).where(
        AuthToken.username == username, AuthToken.kind.in_(kinds)).order_by(
        AuthToken.id.desc())))


def seen(session: Session, username: str) -> None:
    """Record that ``username`` signed in now (for ``det user list``)."""
    now = utcnow()
    user = session.get(User, username)
    if user is None:
        session.add(User(name=username, first_seen=now, last_seen=now))
    else:
        user.last_seen = now


def csrf_token(session_token: str) -> str:
    """The CSRF token of a web session: derived from (and so tied to) its session token."""
    return hashlib.sha256(b"hpcdet-csrf:" + session_token.encode()).hexdigest()[:43]
