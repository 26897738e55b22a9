"""The HTTP layer under :class:`hpcdet.client.MasterClient`: the standard library only
(sockets; HTTP/1.1 itself in :mod:`hpcdet.client_wire`), so that ``det`` starts fast
(importing httpx and httpcore cost ~70 ms of a command's ~145 ms) and the harness needs no
HTTP package.

The master's API is small JSON requests and a few streamed downloads, so this is all it does:
keep-alive connections (a small pool, safe to share between threads: the harness reports
from a background thread), TLS verified with :func:`hpcdet.client_tls.verify_setting`, one
timeout for connecting and for every read, and the proxies of the environment
(``http_proxy``, ``https_proxy``, ``all_proxy``, ``no_proxy``; HTTP proxies only, HTTPS
through ``CONNECT``) as httpx honoured them. Redirects are not followed (nor were they).

Tests may hand the client an httpx transport (``httpx.MockTransport``, ``WSGITransport``)
instead: :class:`HttpxTransport` adapts it, importing httpx only then.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from hpcdet.client_url import quote_path, split_url, urlencode
from hpcdet.client_wire import Connection, Head, RemoteDisconnected

if TYPE_CHECKING:
    import ssl

    import httpx

# Errors on a reused keep-alive connection that mean the server closed it while it was idle:
# an idempotent request is sent again once on a fresh connection (as urllib3 does). Idle
# connections the server closed are mostly found before reuse (Connection.dropped); a POST
# caught in the remaining race fails as it did with httpx (the harness's reports carry
# sequence numbers and are resent by the reporter).
_STALE = (RemoteDisconnected, ConnectionResetError, BrokenPipeError)
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


class Headers:
    """Response headers; names are case-insensitive, as in HTTP."""

    def __init__(self, pairs: Any) -> None:
        self._items: dict[str, str] = {}
        for name, value in pairs:
            key = name.lower()
            self._items[key] = f"{self._items[key]}, {value}" if key in self._items else value

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._items.get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items


class Response:
    """One answer: its status and headers, and the body read at once or streamed.

    The names are httpx's (``status_code``, ``reason_phrase``, ``content``, ``text``,
    ``json()``, ``iter_bytes()``) so that callers read it as they read httpx's.
    """

    def __init__(self, status_code: int, reason_phrase: str, headers: Headers, *,
                 content: bytes | None = None, chunks: Iterator[bytes] | None = None,
                 on_close: Any = None) -> None:
        self.status_code = status_code
        self.reason_phrase = reason_phrase
        self.headers = headers
        self._content = content
        self._chunks = chunks
        self._on_close = on_close

    @property
    def content(self) -> bytes:
        if self._content is None:
            self._content = b"".join(self.iter_bytes())
        return self._content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)

    def read(self) -> bytes:
        return self.content

    def iter_bytes(self, chunk_size: int = 65536) -> Iterator[bytes]:
        """The body in pieces of at most ``chunk_size`` bytes (all at once if already read)."""
        if self._content is not None:
            for start in range(0, len(self._content), chunk_size):
                yield self._content[start:start + chunk_size]
            return
        if self._chunks is None:
            return
        chunks, self._chunks = self._chunks, None
        for chunk in chunks:
            for start in range(0, len(chunk), chunk_size):
                yield chunk[start:start + chunk_size]
        self.close(complete=True)

    def close(self, *, complete: bool = False) -> None:
        """Give the connection back (when the body was read to its end) or close it."""
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close(complete)


class Transport(Protocol):
    """What sends one request; :class:`StdlibTransport` or :class:`HttpxTransport`."""

    def send(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None,
             *, stream: bool = False) -> Response:
        """Send; raises OSError when the master is unreachable or its answer is broken."""

    def close(self) -> None:
        """Close the connections kept open."""


def json_body(body: Any) -> bytes:
    """``body`` as JSON bytes, encoded as httpx encoded ``json=`` (NaN is refused)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


def build_url(base: str, path: str, params: Mapping[str, Any] | None = None) -> str:
    """``base + path`` (``path`` may be a whole URL), escaped, with ``params`` as the query
    (lists repeat the key; True/False/None are ``true``/``false``/empty, as in httpx)."""
    url = path if "://" in path else base + path
    head, sep, query = url.partition("?")
    scheme, rest = head.split("://", 1)
    host, slash, url_path = rest.partition("/")
    url = f"{scheme}://{host}{quote_path(slash + url_path)}{sep}{query}"
    if not params:
        return url
    pairs = [(key, _param_text(item)) for key, value in params.items()
             for item in (value if isinstance(value, (list, tuple)) else [value])]
    return url + ("&" if sep else "?") + urlencode(pairs)


def _param_text(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "" if value is None else str(value)


class StdlibTransport:
    """Requests over :class:`~hpcdet.client_wire.Connection` s, kept alive and reused
    (thread-safe: a connection serves one request at a time)."""

    def __init__(self, *, timeout: float, verify: ssl.SSLContext | bool = True) -> None:
        self._timeout = timeout
        self._verify = verify
        self._context: ssl.SSLContext | None = None
        self._idle: dict[tuple[str, str, int], list[Connection]] = {}
        self._lock = threading.Lock()

    def send(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None,
             *, stream: bool = False) -> Response:
        scheme, host, port, path, query = split_url(url)
        key = (scheme, host, port or _default_port(scheme))
        target = (path or "/") + (f"?{query}" if query else "")
        proxy = _proxy_for(scheme, host)
        send_headers = dict(headers)
        if proxy is not None and scheme == "http":
            target = url  # a plain HTTP proxy takes the whole URL
            send_headers.update(proxy.headers)
        connection, reused = self._connection(key, proxy)
        try:
            head = _exchange(connection, method, target, body, send_headers)
        except _STALE:
            if not reused or method not in _IDEMPOTENT:
                raise
            connection, _ = self._connection(key, proxy, fresh=True)
            head = _exchange(connection, method, target, body, send_headers)
        return self._response(key, connection, head, stream=stream)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()

    def _connection(self, key: tuple[str, str, int], proxy: _Proxy | None, *,
                    fresh: bool = False) -> tuple[Connection, bool]:
        while not fresh:
            with self._lock:
                idle = self._idle.get(key)
                connection = idle.pop() if idle else None
            if connection is None:
                break
            if not connection.dropped():
                return connection, True
            connection.close()
        scheme, host, port = key
        tunnel = None
        if proxy is not None:
            tunnel = (proxy.host, proxy.port, proxy.headers if scheme == "https" else {})
        context = self._ssl_context() if scheme == "https" else None
        return Connection(host, port, timeout=self._timeout, context=context,
                          proxy=tunnel), False

    def _ssl_context(self) -> ssl.SSLContext:
        if self._context is None:
            import ssl  # only for an https:// master

            if isinstance(self._verify, ssl.SSLContext):
                self._context = self._verify
            elif self._verify:
                self._context = ssl.create_default_context()
            else:
                context = ssl.create_default_context()
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
                self._context = context
        return self._context

    def _response(self, key: tuple[str, str, int], connection: Connection, head: Head, *,
                  stream: bool) -> Response:
        headers = Headers(head.headers.items())

        def release(complete: bool) -> None:
            if complete and not head.will_close:
                with self._lock:
                    self._idle.setdefault(key, []).append(connection)
            else:
                connection.close()

        if not stream:
            try:
                content = b"".join(connection.body(head))
            except BaseException:
                connection.close()
                raise
            release(True)
            return Response(head.status, head.reason, headers, content=content)
        return Response(head.status, head.reason, headers, chunks=_chunks(connection, head),
                        on_close=release)


def _exchange(connection: Connection, method: str, target: str, body: bytes | None,
              headers: Mapping[str, str]) -> Head:
    """Send one request and read the answer's head; the connection is closed on failure."""
    try:
        return connection.request(method, target, headers, body)
    except BaseException:
        connection.close()
        raise


class BodyReadError(OSError):
    """The connection failed while a streamed body was being read (the cause is chained)."""


def _chunks(connection: Connection, head: Head) -> Iterator[bytes]:
    pieces = connection.body(head)
    while True:
        try:
            piece = next(pieces, None)
        except OSError as exc:
            raise BodyReadError(str(exc)) from exc
        if piece is None:
            return
        yield piece


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


class _Proxy:
    def __init__(self, url: str) -> None:
        from urllib.parse import unquote, urlsplit  # loaded by urllib.request already

        parts = urlsplit(url if "://" in url else "http://" + url)
        if parts.scheme != "http":
            raise OSError(f"proxy {parts.scheme}://{parts.hostname}: only http:// proxies "
                          "are supported")
        self.host = parts.hostname or ""
        self.port = parts.port or 80
        self.headers: dict[str, str] = {}
        if parts.username is not None:
            import base64

            secret = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            self.headers["Proxy-Authorization"] = "Basic " + base64.b64encode(
                secret.encode()).decode("ascii")


def _proxy_for(scheme: str, host: str) -> _Proxy | None:
    """The environment's proxy for ``scheme://host``, or None (no variable, or no_proxy)."""
    if not any(name.lower().endswith("_proxy") for name in os.environ):
        return None
    import urllib.request  # only when a proxy variable is set: it costs a few ms

    proxies = urllib.request.getproxies_environment()
    url = proxies.get(scheme) or proxies.get("all")
    if not url or urllib.request.proxy_bypass(host):
        return None
    return _Proxy(url)


class HttpxTransport:
    """An httpx transport (tests: ``httpx.MockTransport``, ``httpx.WSGITransport``) behind
    the :class:`Transport` interface; httpx's transport errors become OSError."""

    def __init__(self, transport: httpx.BaseTransport) -> None:
        self._transport = transport

    def send(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None,
             *, stream: bool = False) -> Response:
        import httpx

        if body is None and method in ("POST", "PUT", "PATCH"):
            body = b""
        request = httpx.Request(method, url, headers=dict(headers), content=body)
        try:
            answer = self._transport.handle_request(request)
            content = answer.read()
        except httpx.TransportError as exc:
            raise OSError(str(exc)) from exc
        return Response(answer.status_code, answer.reason_phrase,
                        Headers(answer.headers.items()), content=content)

    def close(self) -> None:
        self._transport.close()
