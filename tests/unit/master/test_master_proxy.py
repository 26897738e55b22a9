"""The master's proxy (hpcdet.master.proxy): registration of a job's service.json, who may
use the proxy, which headers cross it, and its answers (404/503/502/403) in the common shape.

The upstream service is a real HTTP server on this host; the scheduler is scripted
(fake_scheduler.py). Jupyter behind the real proxy, in Chromium, is
tests/integration/test_it_notebooks.py.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from hang_guard import HANG_GUARD_S
from sqlalchemy import select

from hpcdet.dispatcher import JobPhase
from hpcdet.master.app import create_app
from hpcdet.master.db import make_session_factory, session_scope
from hpcdet.master.models import CommandTask
from hpcdet.master.proxy import headers as hdr
from hpcdet.master.proxy import pinning
from hpcdet.master.proxy.asgi import create_asgi_app
from hpcdet.master.proxy.registration import (
    BadServiceFile,
    host_allowed,
    parse_service_file,
)
from hpcdet.master.scheduling.notebooks import parse_duration
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.transitions import transition
from hpcdet.states import State

pytestmark = pytest.mark.interactive

ALICE = {"X-Hpcdet-User": "alice"}
BOB = {"X-Hpcdet-User": "bob"}


# ---- headers -------------------------------------------------------------------------------


def test_the_callers_master_credentials_never_reach_the_service() -> None:
    sent = hdr.to_service([
        ("Host", "master:8080"), ("Authorization", "Bearer master-token"),
        ("X-Hpcdet-User", "alice"), ("X-CSRF-Token", "csrf"),
        ("Cookie", "hpcdet_session=secret; _xsrf=abc; hpcdet_user=alice"),
        ("Connection", "keep-alive, X-Private"), ("X-Private", "hop"), ("Keep-Alive", "5"),
        ("X-Forwarded-For", "forged"), ("Accept", "text/html"),
    ], "service-secret", client="10.0.0.5", scheme="https")
    assert ("Authorization", "token service-secret") in sent
    assert ("Cookie", "_xsrf=abc") in sent
    assert ("Host", "master:8080") in sent and ("Accept", "text/html") in sent
    assert ("X-Forwarded-For", "10.0.0.5") in sent and ("X-Forwarded-Proto", "https") in sent
    names = [name.lower() for name, _ in sent]
    assert names.count("authorization") == 1 and names.count("x-forwarded-for") == 1
    for gone in ("x-hpcdet-user", "x-csrf-token", "connection", "x-private", "keep-alive"):
        assert gone not in names
    assert "secret" not in json.dumps(sent).replace("service-secret", "")


def test_a_cookie_header_of_master_cookies_only_is_dropped() -> None:
    sent = hdr.to_service([("Cookie", "hpcdet_session=s")], "t", client=None, scheme="http")
    assert [name for name, _ in sent if name.lower() == "cookie"] == []


def test_websocket_handshake_headers_are_the_client_librarys_own() -> None:
    caller = [("Sec-WebSocket-Key", "k"), ("Sec-WebSocket-Version", "13"),
              ("Sec-WebSocket-Protocol", "v1.kernel.websocket.jupyter.org, other"),
              ("Upgrade", "websocket")]
    sent = hdr.to_service(caller, "t", client=None, scheme="http", websocket=True)
    assert not any(name.lower().startswith("sec-websocket") for name, _ in sent)
    assert hdr.subprotocols(caller) == ["v1.kernel.websocket.jupyter.org", "other"]


def test_the_service_cannot_set_the_masters_cookies() -> None:
    back = hdr.to_caller([("Set-Cookie", "hpcdet_session=evil; Path=/"),
                          ("Set-Cookie", "_xsrf=ok; Path=/proxy/1/"),
                          ("Transfer-Encoding", "chunked"), ("Content-Type", "text/html")], 1)
    assert back == [("Set-Cookie", "_xsrf=ok; Path=/proxy/1/"), ("Content-Type", "text/html")]


@pytest.mark.parametrize(("origin", "same"), [
    (None, True), ("http://master:8080", True), ("https://master:8080", False),
    ("http://evil.example", False), ("null", False)])
def test_same_origin(origin: str | None, same: bool) -> None:
    headers = [("Host", "master:8080")] + ([("Origin", origin)] if origin else [])
    assert hdr.same_origin(headers, "http") is same


# ---- service.json --------------------------------------------------------------------------


def test_service_file_shape() -> None:
    address = parse_service_file(b'{"host": "node1", "port": 8888}')
    assert (address.host, address.port) == ("node1", 8888)
    for bad in (b"nope", b"[]", b'{"host": "node1"}', b'{"host": "a/b", "port": 1}',
                b'{"host": "node1", "port": 70000}', b'{"host": "node1", "port": true}',
                b'{"host": "user@node1", "port": 80}'):
        with pytest.raises(BadServiceFile):
            parse_service_file(bad)


def test_the_host_must_be_one_of_the_jobs_nodes() -> None:
    nodes = {"node1": ("node1", "vm", "127.0.0.1"), "node2": ("node2",)}
    assert host_allowed("node2", nodes) and host_allowed("vm", nodes)
    assert host_allowed("VM", nodes) and host_allowed("127.0.0.1", nodes)
    assert not host_allowed("db.example", nodes) and not host_allowed("localhost", nodes)
    # Whole names only (issue 28, finding 3): tests/unit/master/test_proxy_pinning.py.
    assert not host_allowed("node1.cluster.example", nodes)


@pytest.mark.parametrize(("raw", "seconds"), [("30m", 1800), ("1h30m", 5400), ("90s", 90),
                                              (45, 45), ("2d", 172800)])
def test_idle_timeout_durations(raw: Any, seconds: int) -> None:
    assert parse_duration(raw) == seconds


# ---- the master: registration and proxying ------------------------------------------------


class _Echo(BaseHTTPRequestHandler):
    """An upstream service that answers with what it received."""

    def do_GET(self) -> None:  # noqa: N802
        self._answer(b"")

    def do_POST(self) -> None:  # noqa: N802
        self._answer(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _answer(self, body: bytes) -> None:
        seen = {name.lower(): value for name, value in self.headers.items()}
        data = json.dumps({"path": self.path, "headers": seen,
                           "body": body.decode()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Set-Cookie", "hpcdet_session=planted; Path=/")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy_app(settings: MasterSettings, fake: FakeSchedulerBackend) -> Iterator[Flask]:
    app = create_app(replace(settings, require_user=True, admins=("root",)), backend=fake)
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


def _notebook(api: FlaskClient) -> dict[str, Any]:
    answer = api.post("/api/v1/notebooks", json={"config": {"idle_timeout": "5m"}},
                      headers=ALICE)
    assert answer.status_code == 201, answer.json
    assert answer.json["url"] == f"/proxy/{answer.json['task']['id']}/"
    assert answer.json["warnings"] == []
    task: dict[str, Any] = answer.json["task"]
    return task


def _cycle(app: Flask, fake: FakeSchedulerBackend) -> None:
    from hpcdet.master.composition import make_reconciler

    make_reconciler(app.config["HPCDET_SETTINGS"],
                    make_session_factory(app.config["HPCDET_ENGINE"]), fake).cycle()


def _row(app: Flask, task_id: int) -> CommandTask:
    with session_scope(make_session_factory(app.config["HPCDET_ENGINE"])) as session:
        task = session.get(CommandTask, task_id)
        assert task is not None
        session.expunge(task)
        return task


def test_a_notebook_task_has_a_private_secret_and_its_id_in_its_environment(
        proxy_app: Flask, fake: FakeSchedulerBackend) -> None:
    task = _notebook(proxy_app.test_client())
    assert (task["kind"], task["name"]) == ("notebook", "det-notebook")
    job_dir = Path(task["job_dir"])
    token_file = job_dir / "service_token"
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert token_file.read_text().strip() == _row(proxy_app, task["id"]).service_token
    environment = (job_dir / "environment.sh").read_text()
    assert f"export DET_TASK_ID={task['id']}" in environment
    assert "export HPCDET_NOTEBOOK_IDLE_SECONDS=300" in environment
    assert "export DET_USER=alice" in environment
    assert _row(proxy_app, task["id"]).service_token not in environment
    assert "hpcdet.services.notebook" in (job_dir / "script").read_text()


def test_a_bad_idle_timeout_is_refused(proxy_app: Flask) -> None:
    answer = proxy_app.test_client().post("/api/v1/notebooks",
                                          json={"config": {"idle_timeout": "soon"}},
                                          headers=ALICE)
    assert answer.status_code == 400
    assert "idle_timeout" in answer.json["error"]["details"][0]


def test_service_json_is_registered_once_checked_and_cleared_at_the_end(
        proxy_app: Flask, fake: FakeSchedulerBackend,
        monkeypatch: pytest.MonkeyPatch) -> None:
    task = _notebook(proxy_app.test_client())
    fake.phases[task["job_id"]] = JobPhase.RUNNING
    service = Path(task["job_dir"]) / "service.json"
    asked: list[list[str]] = []
    monkeypatch.setattr(fake, "node_hosts", lambda nodes: asked.append(list(nodes)) or {
        "node1": ("node1", "vm", "127.0.0.1")})  # the dev cluster's shape
    monkeypatch.setattr(pinning, "resolve", lambda host: {
        "vm": ["127.0.0.1"], "node1": ["127.0.0.1"]}.get(host, []))
    _cycle(proxy_app, fake)  # running, no service.json yet
    assert _row(proxy_app, task["id"]).service_host is None
    service.write_text('{"host": "db.example", "port": 5432}')
    _cycle(proxy_app, fake)  # a host that is none of the job's nodes is refused
    assert _row(proxy_app, task["id"]).service_host is None and asked == [["node1"]]
    service.write_text('{"host": "vm", "port": 8888}')  # the node's host name
    _cycle(proxy_app, fake)
    row = _row(proxy_app, task["id"])
    assert (row.service_host, row.service_address, row.service_port) == (
        "vm", "127.0.0.1", 8888)
    _cycle(proxy_app, fake)  # registered: the file is not read again
    assert len(asked) == 2
    fake.phases[task["job_id"]] = JobPhase.COMPLETED
    _cycle(proxy_app, fake)
    row = _row(proxy_app, task["id"])
    assert (row.state, row.service_host, row.service_address, row.service_port) == (
        "COMPLETED", None, None, None)


def _serve_at(app: Flask, task_id: int, port: int | None) -> None:
    with session_scope(make_session_factory(app.config["HPCDET_ENGINE"])) as session:
        task = session.get(CommandTask, task_id)
        assert task is not None
        if task.state != State.RUNNING.value:
            transition(session, task, State.RUNNING, cause="the job runs (test)")
        task.service_host, task.service_address, task.service_port = (
            ("127.0.0.1", "127.0.0.1", port) if port else (None, None, None))


def _call(app: Flask, method: str, path: str, headers: dict[str, str],
          body: bytes | None = None) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_asgi_app(app, 2), client=("10.1.2.3", 5))
        async with httpx.AsyncClient(transport=transport, base_url="http://master") as client:
            return await client.request(method, path, headers=headers, content=body)

    return asyncio.run(go())


def test_the_proxy_forwards_for_the_owner_with_the_services_secret(
        proxy_app: Flask, upstream: int) -> None:
    task = _notebook(proxy_app.test_client())
    _serve_at(proxy_app, task["id"], upstream)
    secret = _row(proxy_app, task["id"]).service_token
    path = f"/proxy/{task['id']}/api/contents/My%20File.ipynb?type=notebook"
    answer = _call(proxy_app, "POST", path, {**ALICE, "Cookie": "_xsrf=x"}, b"hello")
    assert answer.status_code == 200, answer.text
    seen = answer.json()
    assert seen["path"] == path and seen["body"] == "hello"  # the path unchanged
    assert seen["headers"]["authorization"] == f"token {secret}"
    assert seen["headers"]["cookie"] == "_xsrf=x" and "x-hpcdet-user" not in seen["headers"]
    assert seen["headers"]["x-forwarded-for"] == "10.1.2.3"
    assert "set-cookie" not in answer.headers  # the service's hpcdet_session is dropped
    # Not even a cluster admin: the notebook runs code as alice (issue 28, finding 1).
    refused = _call(proxy_app, "GET", path, {"X-Hpcdet-User": "root"})
    assert refused.status_code == 403 and "only its owner 'alice'" in refused.text


def test_the_proxy_refuses_others_and_says_why(
        proxy_app: Flask, upstream: int) -> None:
    task = _notebook(proxy_app.test_client())
    base = f"/proxy/{task['id']}/"

    def error(answer: httpx.Response) -> tuple[int, str]:
        return answer.status_code, answer.json()["error"]["code"]

    assert error(_call(proxy_app, "GET", base, ALICE)) == (503, "service_unavailable")
    _serve_at(proxy_app, task["id"], upstream)
    assert error(_call(proxy_app, "GET", base, BOB)) == (404, "not_found")
    assert error(_call(proxy_app, "GET", base, {})) == (401, "unauthorized")
    assert error(_call(proxy_app, "GET", "/proxy/999999/", ALICE)) == (404, "not_found")
    assert error(_call(proxy_app, "GET", "/proxy/abc/", ALICE)) == (404, "not_found")
    cross = {**ALICE, "Origin": "http://evil.example"}
    assert error(_call(proxy_app, "POST", base + "api/kernels", cross, b"{}")) == (
        403, "cross_origin")
    redirect = _call(proxy_app, "GET", f"/proxy/{task['id']}?x=1", ALICE)
    assert (redirect.status_code, redirect.headers["location"]) == (307, f"{base}?x=1")
    _serve_at(proxy_app, task["id"], _closed_port())
    assert error(_call(proxy_app, "GET", base, ALICE)) == (502, "service_refused")


def test_everything_else_still_reaches_the_flask_app(proxy_app: Flask) -> None:
    answer = _call(proxy_app, "GET", "/api/v1/master", {})
    assert answer.status_code == 200 and answer.json()["resource_manager"] == "slurm"
    missing = _call(proxy_app, "GET", "/api/v1/nope", ALICE)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_body_limits_still_apply_behind_the_asgi_app(proxy_app: Flask) -> None:
    answer = _call(proxy_app, "POST", "/api/v1/workspaces", ALICE, b"x" * (2 * 1024 * 1024))
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "payload_too_large"


# ---- WebSockets, through a real uvicorn server -------------------------------------------


@pytest.fixture
def ws_upstream() -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """A WebSocket echo service that records each handshake's headers and subprotocol."""
    from websockets.asyncio.server import ServerConnection, serve

    seen: list[dict[str, Any]] = []
    port = _closed_port()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def echo(connection: ServerConnection) -> None:
        request = connection.request
        assert request is not None
        seen.append({"path": request.path, "subprotocol": connection.subprotocol,
                     "headers": {k.lower(): v for k, v in request.headers.raw_items()}})
        async for message in connection:
            await connection.send(message)

    async def main() -> None:
        async with serve(echo, "127.0.0.1", port, subprotocols=["v1.test"]):
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    yield port, seen
    loop.call_soon_threadsafe(stop.set)
    thread.join(10)
    loop.close()


@pytest.fixture(params=["http", "https"])
def served(request: pytest.FixtureRequest, proxy_app: Flask) -> Iterator[tuple[str, Any]]:
    """The master's ASGI app on a real uvicorn server, plain or with TLS (the dev CA's
    certificate, as det-master serves security.tls); yields its ws(s) base URL and the
    client's SSL context."""
    import ssl
    import time

    import uvicorn

    port = _closed_port()
    tls: dict[str, Any] = {}
    context = None
    if request.param == "https":
        directory: Path = request.getfixturevalue("dev_tls_dir")
        tls = {"ssl_certfile": str(directory / "server.pem"),
               "ssl_keyfile": str(directory / "server.key")}
        context = ssl.create_default_context(cafile=str(directory / "ca.pem"))
    server = uvicorn.Server(uvicorn.Config(create_asgi_app(proxy_app, 2), host="127.0.0.1",
                                           port=port, log_level="warning", lifespan="on",
                                           **tls))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + HANG_GUARD_S
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    scheme = "wss" if context is not None else "ws"
    yield f"{scheme}://127.0.0.1:{port}", context
    server.should_exit = True
    thread.join(10)


def test_websockets_cross_the_proxy_both_ways_with_their_subprotocol(
        proxy_app: Flask, ws_upstream: tuple[int, list[dict[str, Any]]],
        served: tuple[str, Any]) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    upstream_port, seen = ws_upstream
    task = _notebook(proxy_app.test_client())
    _serve_at(proxy_app, task["id"], upstream_port)
    base, context = served
    url = f"{base}/proxy/{task['id']}/api/kernels/k1/channels?session_id=s"
    with connect(url, additional_headers={**ALICE, "Cookie": "hpcdet_user=alice; _xsrf=x"},
                 subprotocols=["v1.test"], ssl=context) as ws:  # type: ignore[list-item]
        assert ws.subprotocol == "v1.test"
        ws.send("text message")
        assert ws.recv(10) == "text message"
        ws.send(b"\x00binary")
        assert ws.recv(10) == b"\x00binary"
    # A page of the master itself (its own origin) may open one.
    page = base.replace("wss://", "https://").replace("ws://", "http://")
    with connect(url, additional_headers={**ALICE, "Origin": page}, ssl=context,
                 subprotocols=["v1.test"]) as ws:  # type: ignore[list-item]
        ws.send("same origin")
        assert ws.recv(10) == "same origin"
    handshake = seen.pop(0)
    assert handshake["path"] == f"/proxy/{task['id']}/api/kernels/k1/channels?session_id=s"
    assert handshake["subprotocol"] == "v1.test"
    secret = _row(proxy_app, task["id"]).service_token
    assert handshake["headers"]["authorization"] == f"token {secret}"
    assert handshake["headers"]["cookie"] == "_xsrf=x"
    assert "x-hpcdet-user" not in handshake["headers"]
    for headers in (BOB, {**ALICE, "Origin": "http://evil.example"}):
        with pytest.raises(InvalidStatus) as refused:
            connect(url, additional_headers=headers, ssl=context)
        assert refused.value.response.status_code in (403, 404)
    assert len(seen) == 1  # the same-origin one; the refused ones never reached the service


def test_on_a_munge_master_the_kernel_gets_the_owners_token_until_the_task_ends(
        settings: MasterSettings, fake: FakeSchedulerBackend) -> None:
    import datetime as dt

    from hpcdet.master.models import AuthToken
    from hpcdet.master.security import tokens

    app = create_app(replace(settings, auth_mode="munge"), backend=fake)
    sessions = make_session_factory(app.config["HPCDET_ENGINE"])
    with session_scope(sessions) as session:
        login, _ = tokens.issue(session, "alice", "session", dt.timedelta(hours=1))
    try:
        answer = app.test_client().post("/api/v1/notebooks", json={"config": {}},
                                        headers={"Authorization": f"Bearer {login}"})
        assert answer.status_code == 201, answer.json
        task = answer.json["task"]
        token_file = Path(task["job_dir"]) / "user_token"
        assert token_file.stat().st_mode & 0o777 == 0o600
        kernel_token = token_file.read_text().strip()
        assert kernel_token not in (Path(task["job_dir"]) / "environment.sh").read_text()
        with session_scope(sessions) as session:
            row = tokens.authenticate(session, kernel_token, tokens.USER_KINDS)
            assert (row.username, row.kind, row.name) == ("alice", "api", f"task:{task['id']}")
        fake.phases[task["job_id"]] = JobPhase.RUNNING
        _cycle(app, fake)
        with session_scope(sessions) as session:
            tokens.authenticate(session, kernel_token, tokens.USER_KINDS)  # still valid
        fake.phases[task["job_id"]] = JobPhase.COMPLETED
        _cycle(app, fake)
        with session_scope(sessions) as session:
            with pytest.raises(tokens.TokenProblem):
                tokens.authenticate(session, kernel_token, tokens.USER_KINDS)
            revoked = session.scalars(select(AuthToken.name).where(
                AuthToken.revoked_at.is_not(None))).all()
            assert revoked == [f"task:{task['id']}"]
    finally:
        app.config["HPCDET_ENGINE"].dispose()


def test_flask_responses_stream_through_the_asgi_app(proxy_app: Flask,
                                                     served: tuple[str, Any]) -> None:
    """A streamed response (a checkpoint download) reaches the caller chunk by chunk: the
    view's second chunk waits until the caller has received the first one."""
    from flask import Response

    first_seen = threading.Event()

    def chunks() -> Iterator[bytes]:
        yield b"first chunk\n"
        assert first_seen.wait(20), "the first chunk never reached the caller"
        yield b"second chunk\n"

    proxy_app.add_url_rule("/stream-probe", "stream_probe",
                           lambda: Response(chunks(), mimetype="text/plain"))
    base, context = served
    url = base.replace("wss://", "https://").replace("ws://", "http://") + "/stream-probe"
    received = b""
    with httpx.stream("GET", url, verify=context or True, timeout=HANG_GUARD_S) as response:
        for chunk in response.iter_bytes():
            received += chunk
            if b"first chunk" in received:
                first_seen.set()
    assert received == b"first chunk\nsecond chunk\n"
