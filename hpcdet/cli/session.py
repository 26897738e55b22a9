"""``det``'s session tokens: ``~/.hpcdet/auth.json`` (0600, in a 0700 directory), one entry
per master URL, and the MUNGE login that fills it.

``det`` logs in by itself when it has no valid token for the master it talks to, and once
more on a 401 that says the token expired or was revoked. ``DET_USER_TOKEN`` (an API token
from ``det user token create``) replaces the file for scripts; it is never renewed.
Standard library only at import (the client is imported when used).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hpcdet.errors import HpcdetError, MasterError

if TYPE_CHECKING:
    import httpx

    from hpcdet.client import MasterClient

TOKEN_ENV = "DET_USER_TOKEN"
# A token this close to its expiry is not used: a fresh login is cheaper than a failed call.
MARGIN = dt.timedelta(seconds=60)


class LoginError(HpcdetError):
    """A MUNGE login that could not be done; the message says how to check."""


def auth_file() -> str:
    """``~/.hpcdet/auth.json`` (os.path, not pathlib: every command reads it, and pathlib
    costs a login node's ``det`` ~1.5 ms to import)."""
    return os.path.join(os.path.expanduser("~"), ".hpcdet", "auth.json")


def load() -> dict[str, Any]:
    """Every stored session, by master URL (empty when there is no readable file)."""
    try:
        with open(auth_file(), encoding="utf-8") as handle:
            doc = json.load(handle)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def stored(master: str) -> dict[str, Any] | None:
    """The stored session for ``master`` if it is still valid for a while."""
    entry = load().get(master)
    if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
        return None
    try:
        expires = dt.datetime.fromisoformat(str(entry.get("expires_at")))
    except ValueError:
        return None
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=dt.timezone.utc)
    if expires - MARGIN <= dt.datetime.now(dt.timezone.utc):
        return None
    return entry


def save(master: str, entry: dict[str, Any] | None) -> None:
    """Store (or with None, forget) ``master``'s session; the file is written 0600."""
    path = auth_file()
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    os.chmod(directory, 0o700)
    doc = load()
    if entry is None:
        doc.pop(master, None)
    else:
        doc[master] = entry
    tmp = os.path.join(directory, f".auth.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(doc, handle, indent=2, sort_keys=True)
    os.replace(tmp, path)


def login(master: str, *, transport: httpx.BaseTransport | None = None,
          encode: Any = None) -> dict[str, Any]:
    """Prove who we are to ``master`` with a fresh MUNGE credential; store and return the
    session (``{token, username, expires_at, token_id}``). ``encode`` replaces
    :func:`hpcdet.munge.encode` (unit tests pass a fake)."""
    from hpcdet import munge
    from hpcdet.client import MasterClient

    try:
        credential = (encode or munge.encode)(munge.login_payload(master))
    except munge.MungeError as exc:
        raise LoginError(f"cannot log in to {master}: {exc}") from None
    with MasterClient(master, transport=transport) as client:
        answer = client.post("/auth/login", {"credential": credential})
    entry = {key: answer.get(key) for key in ("token", "username", "expires_at", "token_id")}
    save(master, entry)
    return entry


def open_client(master: str, *, user: str | None = None,
                transport: httpx.BaseTransport | None = None, encode: Any = None,
                cert_file: str | None = None,
                on_degraded: Callable[[str], None] | None = None) -> MasterClient:
    """A client for ``master`` that proves who is calling as ``det`` does (and the SDK).

    It sends ``DET_USER_TOKEN`` or the stored session token (``~/.hpcdet/auth.json``)
    when there is one, and logs in with MUNGE (``encode``: a fake in tests) when the master
    asks who is calling; ``DET_USER_TOKEN`` is never renewed. ``user`` is sent to an open
    master (auth.mode: open), which believes it.
    """
    from hpcdet.client import MasterClient, normalize_master_url

    url = normalize_master_url(master)
    api_token = os.environ.get(TOKEN_ENV)
    entry = None if api_token else stored(url)
    token = api_token or (entry or {}).get("token")

    def relogin(error: MasterError) -> str | None:
        fresh: str | None = login(url, transport=transport, encode=encode).get("token")
        return fresh

    return MasterClient(url, user=user, token=token, transport=transport,
                        relogin=None if api_token else relogin, cert_file=cert_file,
                        on_degraded=on_degraded)
