"""Which headers cross the proxy, each way.

To the service: the caller's headers less the hop-by-hop ones, less everything that proves
who the caller is to the master (``Authorization``, the name header, the master's own
cookies; other cookies, e.g. Jupyter's ``_xsrf``, pass), plus the service's own secret
(``Authorization: token <secret>``: Jupyter's form; TensorBoard ignores it). ``Host`` is
kept, so the service sees the origin the browser sees (Jupyter compares ``Origin`` with
it), with the ``X-Forwarded-*`` a reverse proxy adds.

Back to the caller: the service's headers less the hop-by-hop ones and less any cookie the
service would set under the master's own names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hpcdet.master.api.auth import CSRF_HEADER, SESSION_COOKIE, USER_HEADER

# RFC 9110 7.6.1, plus the WebSocket handshake's own (the client library makes its own).
HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
    "trailer", "transfer-encoding", "upgrade", "proxy-connection",
})  # fmt: skip
WEBSOCKET_HANDSHAKE = frozenset({
    "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions",
    "sec-websocket-protocol", "sec-websocket-accept",
})  # fmt: skip
MASTER_CREDENTIALS = frozenset({"authorization", USER_HEADER.lower(), CSRF_HEADER.lower()})
# The pages' name cookie (open master) and the web session cookie (munge master).
MASTER_COOKIES = frozenset({SESSION_COOKIE, "hpcdet_user"})
# Set by the proxy itself; a caller's own values would be believed by the service.
FORWARDED = frozenset({"x-forwarded-for", "x-forwarded-proto", "x-forwarded-host",
                       "forwarded", "x-real-ip"})

Header = tuple[str, str]


def _connection_tokens(headers: Sequence[Header]) -> set[str]:
    """Header names the ``Connection`` header lists (also hop-by-hop)."""
    return {token.strip().lower() for name, value in headers if name.lower() == "connection"
            for token in value.split(",") if token.strip()}


def strip_master_cookies(cookie_header: str) -> str:
    """``cookie_header`` without the master's own cookies ("" if none is left)."""
    kept = [part.strip() for part in cookie_header.split(";")
            if part.strip() and part.split("=", 1)[0].strip() not in MASTER_COOKIES]
    return "; ".join(kept)


def to_service(headers: Sequence[Header], token: str, *, client: str | None, scheme: str,
               websocket: bool = False) -> list[Header]:
    """The headers sent to the service for a caller's request with ``headers``."""
    drop = HOP_BY_HOP | MASTER_CREDENTIALS | FORWARDED | _connection_tokens(headers)
    if websocket:
        drop |= WEBSOCKET_HANDSHAKE
    out: list[Header] = []
    host = ""
    for name, value in headers:
        lower = name.lower()
        if lower in drop:
            continue
        if lower == "host":
            host = value
        if lower == "cookie":
            value = strip_master_cookies(value)
            if not value:
                continue
        out.append((name, value))
    out.append(("Authorization", f"token {token}"))
    if client:
        out.append(("X-Forwarded-For", client))
    out.append(("X-Forwarded-Proto", scheme))
    if host:
        out.append(("X-Forwarded-Host", host))
    return out


def to_caller(headers: Iterable[Header]) -> list[Header]:
    """The service's response headers as the caller gets them."""
    pairs = list(headers)
    drop = HOP_BY_HOP | _connection_tokens(pairs)
    return [(name, value) for name, value in pairs
            if name.lower() not in drop and not _sets_master_cookie(name, value)]


def _sets_master_cookie(name: str, value: str) -> bool:
    return name.lower() == "set-cookie" and value.split("=", 1)[0].strip() in MASTER_COOKIES


def subprotocols(headers: Sequence[Header]) -> list[str]:
    """The WebSocket subprotocols the caller offers, in its order."""
    return [token.strip() for name, value in headers
            if name.lower() == "sec-websocket-protocol"
            for token in value.split(",") if token.strip()]


def same_origin(headers: Sequence[Header], scheme: str) -> bool:
    """Whether a browser request comes from the master's own pages: no ``Origin`` (not a
    browser's cross-site request) or one whose host is the request's ``Host``."""
    found = {name.lower(): value for name, value in headers}
    origin = found.get("origin")
    if origin is None:
        return True
    web = "https" if scheme in ("https", "wss") else "http"
    return origin == f"{web}://{found.get('host', '')}"
