"""Servers for the reporting tests that can go down and come back on the same port.

A plain module with a unique name (not conftest.py), so tests can import it directly.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import Any

from flask import Flask
from harness_fakes import FakeMaster, _handler_for
from werkzeug.serving import BaseWSGIServer, make_server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Restartable:
    """Something served on one fixed port: ``down()`` refuses connections, ``up()`` serves."""

    def __init__(self) -> None:
        self.port = free_port()
        self._server: ThreadingHTTPServer | BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        self._server = self._make_server()
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def down(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
            self._server = None

    def _make_server(self) -> ThreadingHTTPServer | BaseWSGIServer:
        raise NotImplementedError


class RestartableFake(Restartable):
    """harness_fakes.FakeMaster's routes (and records), on a port that can close."""

    def __init__(self, master: FakeMaster) -> None:
        super().__init__()
        self.master = master

    def _make_server(self) -> ThreadingHTTPServer:
        return ThreadingHTTPServer(("127.0.0.1", self.port), _handler_for(self.master))


class LiveMaster(Restartable):
    """The real master app behind werkzeug's threaded server.

    ``lose_answers``: that many report POSTs are applied by the master but answered 503, as
    when the master dies after its commit and before its answer (the client resends).
    """

    def __init__(self, app: Flask) -> None:
        super().__init__()
        self.app = app
        self.lose_answers = 0
        self._lock = threading.Lock()

    def _make_server(self) -> BaseWSGIServer:
        return make_server("127.0.0.1", self.port, self._wsgi, threaded=True)

    def _wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        reporting = environ["REQUEST_METHOD"] == "POST" and environ["PATH_INFO"].endswith(
            ("/metrics", "/checkpoints"))
        if not reporting or not self._lose_one():
            return self.app(environ, start_response)
        b"".join(self.app(environ, lambda *args, **kwargs: None))  # applied, answer lost
        start_response("503 SERVICE UNAVAILABLE", [("Content-Type", "text/plain")])
        return [b"answer lost\n"]

    def _lose_one(self) -> bool:
        with self._lock:
            if self.lose_answers <= 0:
                return False
            self.lose_answers -= 1
            return True
