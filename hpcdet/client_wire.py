"""HTTP/1.1 on one socket, for :mod:`hpcdet.client_http`: send a request, read the answer's
head, read its body (``Content-Length``, chunked, or up to the close).

Why not ``http.client``: importing it costs ``det`` ~12 ms of its ~50 ms budget (it loads
the ``email`` package to parse headers, and ``ssl`` even for a plain-HTTP master). The
master's API needs only this much of HTTP/1.1; the limits are ``http.client``'s (a line at
most 64 KiB, at most 100 headers), and its failures are OSErrors, as a connection's are:
the client reports them as an unreachable master, as it did with httpx.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    import ssl

MAX_LINE = 65536
MAX_HEADERS = 100
PIECE = 1024 * 1024
# Methods whose empty body is still sent with Content-Length: 0 (as http.client does).
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request",
            401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 409: "Conflict",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


class ProtocolError(OSError):
    """An answer that is not HTTP/1.x as it should be, or that was cut short."""


class RemoteDisconnected(ConnectionResetError):
    """The server closed the connection without answering (e.g. an idle keep-alive one)."""


class Head:
    """An answer's status line and headers (names lower-cased; repeated ones joined by
    ``, ``), and how its body is framed."""

    def __init__(self, status: int, reason: str, headers: dict[str, str], *,
                 length: int | None, chunked: bool, will_close: bool) -> None:
        self.status = status
        self.reason = reason or _REASONS.get(status, "")
        self.headers = headers
        self.length = length  # None with chunked or read-to-close bodies
        self.chunked = chunked
        self.will_close = will_close


class Connection:
    """One connection to ``host:port`` (through ``proxy`` if given: ``(host, port,
    headers)``), opened on first use; HTTPS when ``context`` is given."""

    def __init__(self, host: str, port: int, *, timeout: float,
                 context: ssl.SSLContext | None = None,
                 proxy: tuple[str, int, Mapping[str, str]] | None = None) -> None:
        self.host, self.port = host, port
        self._timeout = timeout
        self._context = context
        self._proxy = proxy
        self._sock: socket.socket | None = None
        self._reader: BinaryIO | None = None

    def dropped(self) -> bool:
        """Whether the server closed this idle connection (or sent something unasked: it
        cannot be reused either), as httpcore checks before reusing one."""
        if self._sock is None:
            return False
        import select  # loaded by socket already

        readable, _, _ = select.select([self._sock], [], [], 0)
        return bool(readable)

    def close(self) -> None:
        reader, sock, self._reader, self._sock = self._reader, self._sock, None, None
        if reader is not None:
            reader.close()
        if sock is not None:
            sock.close()

    def request(self, method: str, target: str, headers: Mapping[str, str],
                body: bytes | None) -> Head:
        """Send a request and read the answer's head (interim 1xx answers skipped)."""
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self._host_header()}",
                 "Accept-Encoding: identity"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        _refuse_line_breaks(lines)
        if self._sock is None:
            self._open()
        assert self._sock is not None
        if body is not None or method in _BODY_METHODS:
            lines.append(f"Content-Length: {len(body or b'')}")
        self._sock.sendall("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + (body or b""))
        while True:
            head = self._read_head(method)
            if not 100 <= head.status < 200:
                return head

    def body(self, head: Head) -> Iterator[bytes]:
        """The body of the answer ``head`` heads, in pieces of at most 1 MiB."""
        if head.chunked:
            yield from self._chunked()
        elif head.length is not None:
            yield from self._exactly(head.length)
        else:
            while piece := self._file().read(PIECE):
                yield piece

    # ---- the wire ------------------------------------------------------------------------

    def _open(self) -> None:
        address = (self._proxy[0], self._proxy[1]) if self._proxy else (self.host, self.port)
        sock = socket.create_connection(
            (_host_bytes(address[0]), address[1]),  # type: ignore[arg-type]  # bytes work
            timeout=self._timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._context is not None:
                if self._proxy is not None:
                    self._tunnel(sock)
                sock = self._context.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        self._sock, self._reader = sock, sock.makefile("rb")

    def _tunnel(self, sock: socket.socket) -> None:
        """Ask an HTTP proxy for a tunnel to the master (``CONNECT``), as http.client does."""
        assert self._proxy is not None
        target = f"{self._bracketed()}:{self.port}"
        lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"]
        lines += [f"{name}: {value}" for name, value in self._proxy[2].items()]
        sock.sendall("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n")
        self._sock, self._reader = sock, sock.makefile("rb")
        try:
            head = self._read_head("CONNECT")
        finally:
            assert self._reader is not None
            self._reader.close()  # the TLS socket reads on its own from here
            self._sock, self._reader = None, None
        if head.status != 200:
            raise OSError(f"Tunnel connection failed: {head.status} {head.reason}")

    def _file(self) -> BinaryIO:
        if self._reader is None:
            raise ProtocolError("the connection is closed")
        return self._reader

    def _line(self) -> bytes:
        line = self._file().readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise ProtocolError("got more than 65536 bytes in one line of the answer")
        return line

    def _read_head(self, method: str) -> Head:
        status_line = self._line()
        if not status_line:
            raise RemoteDisconnected("Remote end closed connection without response")
        version, _, rest = status_line.decode("latin-1").strip().partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or not code.isdigit() or len(code) != 3:
            raise ProtocolError(f"not an HTTP answer: {status_line.strip()[:80]!r}")
        headers = self._headers()
        status = int(code)
        connection = headers.get("connection", "").lower()
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = None
        if method in ("HEAD", "CONNECT") or status in (204, 304) or 100 <= status < 200:
            length, chunked = 0, False
        elif not chunked and "content-length" in headers:
            try:
                length = int(headers["content-length"].split(",")[0])
            except ValueError:
                raise ProtocolError("a Content-Length that is not a number") from None
        will_close = ("close" in connection or (version == "HTTP/1.0" and
                                                "keep-alive" not in connection)
                      or (length is None and not chunked))
        return Head(status, reason.strip(), headers, length=length, chunked=chunked,
                    will_close=will_close)

    def _headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        last = ""
        for _ in range(MAX_HEADERS + 1):
            line = self._line()
            if line in (b"\r\n", b"\n", b""):
                return headers
            text = line.decode("latin-1").rstrip("\r\n")
            if text[:1] in (" ", "\t") and last:  # an obsolete folded continuation
                headers[last] += " " + text.strip()
                continue
            name, sep, value = text.partition(":")
            if not sep:
                raise ProtocolError(f"a header line without a colon: {text[:80]!r}")
            last = name.strip().lower()
            value = value.strip()
            headers[last] = f"{headers[last]}, {value}" if last in headers else value
        raise ProtocolError(f"got more than {MAX_HEADERS} headers")

    def _exactly(self, length: int) -> Iterator[bytes]:
        left = length
        while left > 0:
            piece = self._file().read(min(left, PIECE))
            if not piece:
                raise ProtocolError(f"the answer ended {left} bytes early "
                                    f"(of {length})")
            left -= len(piece)
            yield piece

    def _chunked(self) -> Iterator[bytes]:
        while True:
            size_line = self._line()
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise ProtocolError(f"a bad chunk size: {size_line[:40]!r}") from None
            if size == 0:
                while self._line() not in (b"\r\n", b"\n", b""):
                    pass  # trailers: none that matter here
                return
            yield from self._exactly(size)
            if self._line() not in (b"\r\n", b"\n"):
                raise ProtocolError("a chunk not followed by CRLF")

    def _host_header(self) -> str:
        default = 443 if self._context is not None else 80
        host = self._bracketed()
        return host if self.port == default else f"{host}:{self.port}"

    def _bracketed(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host


def _refuse_line_breaks(lines: list[str]) -> None:
    """A CR, LF or NUL inside the request line or a header (a user name from the
    environment, a master URL) would end it early and let the rest forge headers or a second
    request; ``lines[0]`` is the request line, the rest are headers."""
    for index, line in enumerate(lines):
        if any(c in line for c in "\r\n\0"):
            what = "the request line" if index == 0 else f"header {line.partition(':')[0]}"
            raise ProtocolError(f"refusing to send a request: {what} holds a line break or NUL")


def _host_bytes(host: str) -> bytes | str:
    """An ASCII host name as bytes: a str would make the resolver load the idna codec."""
    try:
        return host.encode("ascii")
    except UnicodeEncodeError:
        return host


