"""Which headers cross the proxy, each way.

To the service: the caller's headers less the hop-by-hop ones, less everything that proves
who the caller is to the master (``Authorization``, the name header, the master's own
cookies; other cookies, e.g. Jupyter's ``_xsrf``, pass), plus the service's own secret
(``Authorization: token <secret>``: Jupyter's form; hpcdet's TensorBoard wrapper checks it
too). ``Host`` is kept, so the service sees the origin the browser sees (Jupyter compares
``Origin`` with it), with the ``X-Forwarded-*`` a reverse proxy adds: always the proxy's own,
from the connection the master accepted (``det-master`` believes no caller's forwarded
headers unless ``webserver.trusted_proxies`` names its reverse proxy); the caller's own are
dropped, so the service never sees them.

Back to the caller: the service's headers less the hop-by-hop ones, less the ones that
would act on the master's whole origin (:data:`ORIGIN_WIDE`), with every ``Set-Cookie``
confined to the task's own path and none under the master's names (:mod:`.cookies`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hpcdet.master.api.auth import CSRF_HEADER, USER_HEADER
from hpcdet.master.proxy import cookies

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
# Set by the proxy itself; a caller's own values would be believed by the service (Jupyter
# trusts them: tornado's xheaders read X-Real-Ip, X-Forwarded-For/-Proto and X-Scheme).
FORWARDED = frozenset({
    "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-forwarded-port",
    "x-forwarded-prefix", "x-forwarded-ssl", "x-forwarded-server", "forwarded",
    "x-real-ip", "x-scheme", "front-end-https",
})  # fmt: skip
# A service's response headers that would act on the master's whole origin, not on the
# one response: a service worker for every page (Service-Worker-Allowed: /), wiping the
# master's cookies and storage (Clear-Site-Data), the origin's HSTS or alternative services.
ORIGIN_WIDE = frozenset({"service-worker-allowed", "clear-site-data",
                         "strict-transport-security", "alt-svc", "set-cookie2"})

Header = tuple[str, str]


def _connection_tokens(headers: Sequence[Header]) -> set[str]:
    """Header names the ``Connection`` header lists (also hop-by-hop)."""
    return {token.strip().lower() for name, value in headers if name.lower() == "connection"
            for token in value.split(",") if token.strip()}


def strip_master_cookies(cookie_header: str) -> str:
    """``cookie_header`` without the master's own cookies (the session, the pages' name,
    anything named like them: :func:`.cookies.is_masters`; "" if none is left)."""
    kept = [part.strip() for part in cookie_header.split(";")
            if part.strip() and not cookies.is_masters(part.split("=", 1)[0])]
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


def to_caller(headers: Iterable[Header], task_id: int) -> list[Header]:
    """The response headers of task ``task_id``'s service as the caller gets them."""
    pairs = list(headers)
    drop = HOP_BY_HOP | ORIGIN_WIDE | _connection_tokens(pairs)
    out: list[Header] = []
    for name, value in pairs:
        lower = name.lower()
        if lower == "set-cookie":
            confined = cookies.confine(value, cookies.task_prefix(task_id))
            if confined is not None:
                out.append((name, confined))
        elif lower not in drop:
            out.append((name, value))
    return out


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
