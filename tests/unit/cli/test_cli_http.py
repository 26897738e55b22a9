"""The client's own HTTP layer (hpcdet.client_http and hpcdet.client_wire: HTTP/1.1 on a socket)
against a real HTTP server in a thread: what it sends, keep-alive and stale connections,
streaming, errors, the health header, proxies, timeouts, threads.

TLS is tested in test_cli_tls.py (a real TLS server, the same client).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from hpcdet.client import MasterClient
from hpcdet.client_http import build_url, json_body
from hpcdet.client_wire import Connection, ProtocolError
from hpcdet.errors import MasterError


@dataclass
class Seen:
    """What the server received: one entry per request, and the connections opened."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    connections: int = 0


Answer = Callable[[BaseHTTPRequestHandler], None]


def _json(handler: BaseHTTPRequestHandler, status: int, doc: Any,
          headers: dict[str, str] | None = None) -> None:
    body = json.dumps(doc).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture
def server() -> Iterator[tuple[str, Seen, dict[str, Answer]]]:
    """A keep-alive HTTP/1.1 server; ``routes[path]`` answers a path (else the request is
    echoed back as JSON)."""
    seen = Seen()
    routes: dict[str, Answer] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            seen.connections += 1
            super().setup()

        def log_message(self, *_args: Any) -> None:
            """Quiet."""

        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            entry = {"method": self.command, "path": self.path, "body": body,
                     "headers": {k.lower(): v for k, v in self.headers.items()}}
            seen.requests.append(entry)
            answer = routes.get(self.path.split("?")[0])
            if answer is not None:
                answer(self)
            else:
                _json(self, 200, {"path": self.path, "body": body.decode()})

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", seen, routes
    httpd.shutdown()
    httpd.server_close()


def test_requests_carry_identity_json_and_httpx_style_queries(server: Any) -> None:
    url, seen, _ = server
    with MasterClient(url, user="alice", token="t0k") as client:
        assert client.get("/experiments", {"archived": False, "all": True, "labels": ["a", "b"],
                                           "owner": None, "limit": 5})["path"] == (
            "/api/v1/experiments?archived=false&all=true&labels=a&labels=b&owner=&limit=5")
        client.post("/experiments/1/labels", {"name": "é", "n": 1.5})
    get, post = seen.requests
    assert get["headers"]["accept"] == "application/json"
    assert get["headers"]["x-hpcdet-user"] == "alice"
    assert get["headers"]["authorization"] == "Bearer t0k"
    assert post["headers"]["content-type"] == "application/json"
    assert post["body"] == '{"name":"é","n":1.5}'.encode()


def test_json_and_url_encoding_match_what_httpx_sent() -> None:
    import httpx

    body = {"a": [1, "ü"], "b": None}
    assert json_body(body) == httpx.Request("POST", "http://m/", json=body).content
    with pytest.raises(ValueError):
        json_body({"loss": float("nan")})  # httpx refused NaN too
    assert build_url("http://m/api/v1", "/templates/my template") == (
        "http://m/api/v1/templates/my%20template")
    assert build_url("http://m/api/v1", "/x?a=1", {"b": 2}) == "http://m/api/v1/x?a=1&b=2"
    assert build_url("http://m/api/v1", "http://m/proxy/3/") == "http://m/proxy/3/"


def test_one_connection_is_kept_alive_for_many_requests(server: Any) -> None:
    url, seen, _ = server
    with MasterClient(url) as client:
        for _ in range(5):
            client.get("/master")
    assert len(seen.requests) == 5
    assert seen.connections == 1


def _closing_route(routes: dict[str, Answer]) -> threading.Event:
    """``/once`` answers, then closes the connection without saying so (no ``Connection:
    close``): the client finds out later. The event is set once it is closed."""
    closed = threading.Event()

    def close_after(handler: BaseHTTPRequestHandler) -> None:
        _json(handler, 200, {"ok": True})
        handler.wfile.flush()
        handler.connection.shutdown(socket.SHUT_RDWR)
        handler.close_connection = True
        closed.set()

    routes["/api/v1/once"] = close_after
    return closed


def test_a_connection_the_server_closed_while_idle_is_replaced(server: Any) -> None:
    url, seen, routes = server
    closed = _closing_route(routes)
    with MasterClient(url) as client:
        assert client.get("/once") == {"ok": True}
        assert closed.wait(10)
        assert client.post("/experiments", {"x": 1})["body"] == '{"x":1}'
    assert seen.connections == 2
    assert [r["path"] for r in seen.requests] == ["/api/v1/once", "/api/v1/experiments"]


def test_a_stale_connection_found_only_on_use(server: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The race the idle check cannot see: a GET is sent again on a fresh connection, a
    POST is not (it may have been done), and fails as an unreachable master."""
    url, seen, routes = server
    closed = _closing_route(routes)
    monkeypatch.setattr("hpcdet.client_wire.Connection.dropped", lambda self: False)
    with MasterClient(url) as client:
        client.get("/once")
        assert closed.wait(10)
        closed.clear()
        assert client.get("/master")["path"] == "/api/v1/master"
        client.get("/once")
        assert closed.wait(10)
        with pytest.raises(MasterError, match="cannot reach the master at .*: Remote end "
                           "closed connection without response|Connection reset|Broken pipe"):
            client.post("/experiments", {"x": 1})
    assert [r["path"] for r in seen.requests] == ["/api/v1/once", "/api/v1/master",
                                                  "/api/v1/once"]


def test_streamed_chunked_download(server: Any) -> None:
    url, _, routes = server
    payload = bytes(range(256)) * 5000

    def chunked(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for start in range(0, len(payload), 70000):
            piece = payload[start:start + 70000]
            handler.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        handler.wfile.write(b"0\r\n\r\n")

    routes["/api/v1/checkpoints/u/download"] = chunked
    with MasterClient(url) as client:
        with client.stream("/checkpoints/u/download") as response:
            chunks = list(response.iter_bytes(100000))
        assert b"".join(chunks) == payload
        assert max(len(c) for c in chunks) <= 100000
        assert client.get("/after")["path"] == "/api/v1/after"  # the connection is reusable


def test_errors_in_the_common_shape_and_otherwise(server: Any) -> None:
    url, _, routes = server
    routes["/api/v1/bad"] = lambda h: _json(h, 400, {"error": {
        "code": "invalid_config", "message": "bad config", "details": ["a: no"]}})

    def gateway(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(502)
        handler.send_header("Content-Length", "12")
        handler.end_headers()
        handler.wfile.write(b"proxy broke\n")

    routes["/api/v1/gateway"] = gateway
    with MasterClient(url) as client:
        with pytest.raises(MasterError) as bad:
            client.get("/bad")
        assert (bad.value.status, bad.value.code) == (400, "invalid_config")
        assert str(bad.value) == "bad config\n  a: no"
        with pytest.raises(MasterError, match=r"^master answered 502 Bad Gateway: proxy broke$"):
            client.get("/gateway")
        with pytest.raises(MasterError) as streamed:
            with client.stream("/bad"):
                pass
        assert streamed.value.code == "invalid_config"


def test_a_degraded_master_is_reported_once(server: Any) -> None:
    url, _, routes = server
    routes["/api/v1/experiments"] = lambda h: _json(
        h, 200, {"experiments": []}, {"X-Hpcdet-Health": "degraded; scheduler unreachable"})
    reports: list[str] = []
    with MasterClient(url, on_degraded=reports.append) as client:
        client.get("/experiments")
        client.get("/experiments")
    assert reports == ["degraded; scheduler unreachable"]


def test_unreachable_and_timed_out_masters_are_master_errors() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        with MasterClient(f"http://127.0.0.1:{port}") as client, \
                pytest.raises(MasterError, match=rf"^cannot reach the master at "
                              rf"http://127.0.0.1:{port}: \[Errno 111\] Connection refused$"):
            client.get("/master")
        sock.listen()  # accepts, never answers
        with MasterClient(f"http://127.0.0.1:{port}", timeout=0.3) as client, \
                pytest.raises(MasterError, match="cannot reach the master at .*timed out"):
            client.get("/master")


def test_http_proxy_from_the_environment(server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    proxy_url, seen, _ = server  # the test server plays the proxy: it sees the whole URL
    monkeypatch.setenv("http_proxy", "http://user:pw@" + proxy_url.split("://")[1])
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    with MasterClient("http://master.example:8080") as client:
        client.get("/master")
    [request] = seen.requests
    assert request["path"] == "http://master.example:8080/api/v1/master"
    assert request["headers"]["proxy-authorization"] == "Basic dXNlcjpwdw=="
    monkeypatch.setenv("no_proxy", "127.0.0.1")  # bypassed: sent to the server itself
    with MasterClient(proxy_url) as client:
        client.get("/master")
    assert seen.requests[-1]["path"] == "/api/v1/master"


def test_one_client_serves_many_threads(server: Any) -> None:
    url, seen, _ = server
    errors: list[BaseException] = []
    with MasterClient(url) as client:
        def work(n: int) -> None:
            try:
                for i in range(20):
                    assert client.post("/reports", {"n": n, "i": i})["body"] == (
                        f'{{"n":{n},"i":{i}}}')
            except BaseException as exc:  # noqa: BLE001 (collected for the main thread)
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert len(seen.requests) == 120
    assert seen.connections <= 6


def test_bodies_framed_by_the_close_and_answers_without_a_body(server: Any) -> None:
    url, seen, routes = server

    def until_close(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(b'{"framed": "by the close"}')
        handler.close_connection = True

    def no_content(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(204)
        handler.end_headers()

    routes["/api/v1/old"] = until_close
    routes["/api/v1/empty"] = no_content
    with MasterClient(url) as client:
        assert client.get("/old") == {"framed": "by the close"}
        assert client.delete("/empty") is None
        assert client.get("/empty") is None
    assert seen.connections == 2  # a fresh one after the close, then kept alive


def test_an_answer_that_is_not_http_is_an_unreachable_master() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def garbage() -> None:
            conn, _ = listener.accept()
            conn.recv(65536)
            conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
            conn.close()

        thread = threading.Thread(target=garbage, daemon=True)
        thread.start()
        with MasterClient(f"http://127.0.0.1:{port}") as client, \
                pytest.raises(MasterError, match=r"^cannot reach the master at .*: not an HTTP "
                              r"answer: b'SSH-2.0-OpenSSH_9.2'$"):
            client.get("/master")
        thread.join(5)


@pytest.mark.parametrize("header", [{"X-Hpcdet-User": "alice\r\nX-Forged: 1"},
                                    {"X-Hpcdet-User": "alice\0"}])
def test_a_header_with_a_line_break_is_never_sent(header: dict[str, str]) -> None:
    # Refused before any connection is opened: nothing listens on port 9 here.
    with pytest.raises(ProtocolError, match="header X-Hpcdet-User holds a line break"):
        Connection("127.0.0.1", 9, timeout=1).request("GET", "/api/v1/master", header, None)
