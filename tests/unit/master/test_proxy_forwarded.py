"""No header smuggling through the master's proxy (issue 28, finding 5).

- A caller's ``X-Forwarded-*`` (and the like) never reach a proxied service: the service
  sees the proxy's own, from the connection the master accepted.
- ``X-Forwarded-Proto: http`` sent over TLS does not make the master think the request came
  over plain HTTP: its session cookie keeps ``Secure``.
- A service's ``Set-Cookie`` reaches the browser confined to the task's own path, and never
  under the master's cookie names.

The end-to-end tests run the master's ASGI app on a uvicorn server configured exactly as
``det-master``'s gunicorn workers are (:func:`hpcdet.master.serve.gunicorn_options`, then
the worker class's own construction of uvicorn's config), so gunicorn's and uvicorn's
forwarded-header trust is what is tested.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from hang_guard import HANG_GUARD_S

from hpcdet.master.app import create_app
from hpcdet.master.db import make_session_factory, session_scope
from hpcdet.master.models import CommandTask
from hpcdet.master.proxy import headers as hdr
from hpcdet.master.proxy.asgi import create_asgi_app
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.tls import TlsSettings
from hpcdet.master.transitions import transition
from hpcdet.states import State

pytestmark = pytest.mark.interactive

ALICE = {"X-Hpcdet-User": "alice"}
FORGED = {"X-Forwarded-For": "6.6.6.6", "X-Forwarded-Proto": "https",
          "X-Forwarded-Host": "evil.example", "X-Real-IP": "6.6.6.6",
          "Forwarded": "for=6.6.6.6;proto=https", "X-Scheme": "https",
          "X-Forwarded-Port": "443", "X-Forwarded-Prefix": "/evil"}
# What the service tries to set, and what the browser must get instead (task 7 in the unit
# tests; the end-to-end test substitutes its own task id).
SERVICE_COOKIES = [
    "hpcdet_session=planted; Path=/", "HPCDET_User=root; Path=/",
    "__Secure-hpcdet_session=x; Secure; Path=/", "__Host-grab=1; Secure; Path=/",
    "x=1; Path=/", "y=2; Domain=example.org; Path=/proxy/{id}/api; Secure; HttpOnly; "
    "SameSite=Lax", "z=3", "w=4; Path=/proxy/{id}/../../", "v=5; path=/proxy/{id}0/",
    "_xsrf=2|abc; Path=/proxy/{id}/; Expires=Wed, 01 Jan 2031 00:00:00 GMT",
]
CONFINED = [
    "x=1; Path=/proxy/{id}/", "y=2; Secure; HttpOnly; SameSite=Lax; Path=/proxy/{id}/api",
    "z=3; Path=/proxy/{id}/", "w=4; Path=/proxy/{id}/", "v=5; Path=/proxy/{id}/",
    "_xsrf=2|abc; Expires=Wed, 01 Jan 2031 00:00:00 GMT; Path=/proxy/{id}/",
]


def _with_id(values: list[str], task_id: int) -> list[str]:
    return [value.replace("{id}", str(task_id)) for value in values]


# ---- the header functions ------------------------------------------------------------------


def test_every_forwarded_header_of_the_caller_is_replaced_by_the_proxys_own() -> None:
    sent = hdr.to_service([("Host", "master:8080"), *FORGED.items()], "t",
                          client="10.0.0.5", scheme="http")
    names = [name.lower() for name, _ in sent]
    for name in FORGED:
        assert names.count(name.lower()) <= 1, name
    found = dict((name.lower(), value) for name, value in sent)
    assert (found["x-forwarded-for"], found["x-forwarded-proto"],
            found["x-forwarded-host"]) == ("10.0.0.5", "http", "master:8080")
    for name in ("x-real-ip", "forwarded", "x-scheme", "x-forwarded-port",
                 "x-forwarded-prefix"):
        assert name not in found, name


def test_a_services_cookies_are_confined_to_its_task() -> None:
    back = hdr.to_caller([("Set-Cookie", value) for value in _with_id(SERVICE_COOKIES, 7)]
                         + [("Content-Type", "text/html")], 7)
    assert back == [("Set-Cookie", value) for value in _with_id(CONFINED, 7)] + [
        ("Content-Type", "text/html")]


def test_headers_acting_on_the_masters_whole_origin_are_dropped() -> None:
    back = hdr.to_caller([("Service-Worker-Allowed", "/"), ("Clear-Site-Data", '"cookies"'),
                          ("Strict-Transport-Security", "max-age=1"), ("Alt-Svc", "clear"),
                          ("Cache-Control", "no-store")], 7)
    assert back == [("Cache-Control", "no-store")]


def test_the_masters_cookies_never_reach_the_service_whatever_their_case() -> None:
    from hpcdet.master.api.auth import SESSION_COOKIE
    from hpcdet.master.web.identity import COOKIE

    cookie = f"{SESSION_COOKIE}=s; {COOKIE}=alice; HPCDET_SESSION=s2; _xsrf=x"
    assert hdr.strip_master_cookies(cookie) == "_xsrf=x"


def test_det_master_believes_no_forwarded_headers_unless_told(
        settings: MasterSettings) -> None:
    from hpcdet.master.serve import gunicorn_options

    assert gunicorn_options(settings)["forwarded_allow_ips"] == ""
    behind = replace(settings, trusted_proxies=("10.0.0.5/32", "10.1.0.0/16"))
    assert gunicorn_options(behind)["forwarded_allow_ips"] == "10.0.0.5/32,10.1.0.0/16"


def test_trusted_proxies_must_be_addresses_or_networks(tmp_path: Path) -> None:
    from hpcdet.errors import ConfigError
    from hpcdet.master.settings.core import load_settings

    config = tmp_path / "master.yaml"
    config.write_text("auth: {mode: open}\nwebserver: {trusted_proxies: [10.0.0.5, 10.1.0.0/16]}\n")
    assert load_settings(config, {}).trusted_proxies == ("10.0.0.5/32", "10.1.0.0/16")
    config.write_text("auth: {mode: open}\n")
    assert load_settings(config, {}).trusted_proxies == ()
    for bad in ("['*']", "[10.0.0.5/24]", "[proxy.example]", "10.0.0.5"):
        config.write_text(f"auth: {{mode: open}}\nwebserver: {{trusted_proxies: {bad}}}\n")
        with pytest.raises(ConfigError, match="trusted_proxies"):
            load_settings(config, {})


# ---- through a master served as det-master serves it -------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def det_master() -> Iterator[Any]:
    """``serve(app, settings)``: the app on a uvicorn server built as det-master's gunicorn
    workers build theirs; returns its base URL. Stopped at the end."""
    import uvicorn
    from gunicorn.config import Config
    from gunicorn.glogging import Logger

    from hpcdet.master.serve import gunicorn_options

    servers: list[tuple[Any, threading.Thread, Any]] = []

    def serve(app: Flask, settings: MasterSettings) -> str:
        cfg = Config()
        for key, value in gunicorn_options(settings).items():
            cfg.set(key, value)
        worker = cfg.worker_class(0, os.getpid(), [], None, 30, cfg, Logger(cfg))
        config = worker.config  # what the worker hands uvicorn
        config.app = create_asgi_app(app, 2)
        config.host, config.port = "127.0.0.1", _free_port()
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        servers.append((server, thread, worker))
        deadline = time.monotonic() + HANG_GUARD_S
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started
        scheme = "https" if settings.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{config.port}"

    yield serve
    for server, thread, worker in servers:
        server.should_exit = True
        thread.join(10)
        worker.tmp.close()  # gunicorn's heartbeat file


class _Service(BaseHTTPRequestHandler):
    """A proxied service: answers with the headers it got, and tries to set cookies."""

    def do_GET(self) -> None:  # noqa: N802
        task_id = self.path.split("/")[2]
        data = json.dumps({name.lower(): value for name, value in self.headers.items()})
        body = data.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        for value in _with_id(SERVICE_COOKIES, int(task_id)):
            self.send_header("Set-Cookie", value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def service() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Service)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


@pytest.fixture
def open_app(settings: MasterSettings, fake: FakeSchedulerBackend) -> Iterator[Flask]:
    app = create_app(replace(settings, require_user=True), backend=fake)
    yield app
    app.config["HPCDET_ENGINE"].dispose()


def _notebook_at(app: Flask, port: int) -> int:
    answer = app.test_client().post("/api/v1/notebooks", json={"config": {}}, headers=ALICE)
    assert answer.status_code == 201, answer.json
    task_id = int(answer.json["task"]["id"])
    with session_scope(make_session_factory(app.config["HPCDET_ENGINE"])) as session:
        task = session.get(CommandTask, task_id)
        assert task is not None
        transition(session, task, State.RUNNING, cause="the job runs (test)")
        task.service_host, task.service_port = "127.0.0.1", port
        task.service_address = "127.0.0.1"
    return task_id


def test_the_callers_forwarded_headers_never_reach_the_service(
        open_app: Flask, settings: MasterSettings, service: int, det_master: Any) -> None:
    task_id = _notebook_at(open_app, service)
    base = det_master(open_app, settings)
    answer = httpx.get(f"{base}/proxy/{task_id}/api/status", headers={**ALICE, **FORGED},
                       timeout=HANG_GUARD_S)
    assert answer.status_code == 200, answer.text
    seen = answer.json()
    host = base.removeprefix("http://")
    assert (seen["x-forwarded-for"], seen["x-forwarded-proto"], seen["x-forwarded-host"]) == (
        "127.0.0.1", "http", host)
    for name in ("x-real-ip", "forwarded", "x-scheme", "x-forwarded-port",
                 "x-forwarded-prefix"):
        assert name not in seen, name
    assert "6.6.6.6" not in json.dumps(seen) and "evil" not in json.dumps(seen)


def test_a_services_cookies_reach_the_browser_confined_to_its_task(
        open_app: Flask, settings: MasterSettings, service: int, det_master: Any) -> None:
    task_id = _notebook_at(open_app, service)
    base = det_master(open_app, settings)
    answer = httpx.get(f"{base}/proxy/{task_id}/", headers=ALICE, timeout=HANG_GUARD_S)
    assert answer.status_code == 200, answer.text
    assert answer.headers.get_list("set-cookie") == _with_id(CONFINED, task_id)


# gunicorn hands uvicorn its default ssl_version (PROTOCOL_TLS), which Python deprecates.
@pytest.mark.filterwarnings("ignore:ssl.PROTOCOL_TLS is deprecated:DeprecationWarning")
def test_the_session_cookie_keeps_secure_when_the_caller_claims_plain_http(
        settings: MasterSettings, fake: FakeSchedulerBackend, dev_tls_dir: Path,
        det_master: Any) -> None:
    from hpcdet.master.security import tokens

    tls = TlsSettings(str(dev_tls_dir / "server.pem"), str(dev_tls_dir / "server.key"))
    munge = replace(settings, auth_mode="munge", tls=tls)
    app = create_app(munge, backend=fake)
    try:
        with session_scope(make_session_factory(app.config["HPCDET_ENGINE"])) as session:
            link, _ = tokens.issue(session, "alice", "web_link", dt.timedelta(seconds=60))
        base = det_master(app, munge)
        context = ssl.create_default_context(cafile=str(dev_tls_dir / "ca.pem"))
        answer = httpx.get(f"{base}/login/{link}", verify=context, timeout=HANG_GUARD_S,
                           headers={"X-Forwarded-Proto": "http", "X-Forwarded-For": "6.6.6.6"})
        assert answer.status_code in (302, 303), answer.text
        cookie = answer.headers["set-cookie"]
        assert cookie.startswith("hpcdet_session=")
        assert "secure" in [part.strip().lower() for part in cookie.split(";")], cookie
    finally:
        app.config["HPCDET_ENGINE"].dispose()
