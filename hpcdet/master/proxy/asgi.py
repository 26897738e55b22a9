"""The master's ASGI application (served by gunicorn's uvicorn workers, ``serve.py``).

``/proxy/<task_id>/...`` (HTTP and WebSocket) goes to the proxy, on the event loop: a held
WebSocket costs a coroutine, not a thread. Everything else goes to the Flask app through
``a2wsgi``'s WSGI adapter, whose thread pool (``webserver.threads`` per worker) runs the
views as gunicorn's threads did; its responses stream back chunk by chunk. The one
exception is the trials' metric reports, answered on the event loop when they are what the
harness sends (:mod:`hpcdet.master.api.metrics_asgi`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

import httpx
from a2wsgi import WSGIMiddleware
from flask import Flask

from hpcdet.master.api.metrics_asgi import MetricsRoute
from hpcdet.master.api.refusals import http_status, refusal_body
from hpcdet.master.errors import DomainError, Forbidden, NotFound
from hpcdet.master.monitoring import instruments
from hpcdet.master.proxy import forward
from hpcdet.master.proxy import headers as hdr
from hpcdet.master.proxy.access import authorize
from hpcdet.master.proxy.forward import Receive, Scope, Send

log = logging.getLogger(__name__)
# One line per proxied request would drown the master's log.
logging.getLogger("httpx").setLevel(logging.WARNING)

PREFIX = "/proxy/"
_PATH = re.compile(r"/proxy/([0-9]{1,18})(/.*)?\Z", re.DOTALL)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class MasterApp:
    """Routes a request to the proxy or to the Flask app (see the module doc)."""

    def __init__(self, flask_app: Flask, threads: int) -> None:
        self.flask_app = flask_app
        self.wsgi = WSGIMiddleware(flask_app, workers=threads)  # type: ignore[arg-type]
        self.metrics = MetricsRoute(flask_app, self.wsgi)  # type: ignore[arg-type]
        self.client: httpx.AsyncClient | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
        elif scope.get("path", "").startswith(PREFIX) or scope.get("path") == PREFIX[:-1]:
            await self.proxy(scope, receive, send)
        elif kind == "http" and self.metrics.matches(scope):
            await self.metrics(scope, receive, send)
        elif kind == "http":
            await self.wsgi(scope, receive, send)  # type: ignore[arg-type]
        else:  # a WebSocket anywhere but the proxy
            await _refuse(scope, receive, send, NotFound("not_found", "no WebSocket here"))

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.client = forward.make_client()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.client is not None:
                    await self.client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _client(self) -> httpx.AsyncClient:
        if self.client is None:  # a server without lifespan events
            self.client = forward.make_client()
        return self.client

    async def proxy(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``/proxy/<task_id>/<rest>`` to the task's service, for its owner and admins."""
        try:
            match = _PATH.match(scope["path"])
            if match is None:
                raise NotFound("not_found", "no such proxy path: /proxy/<task id>/...")
            if match.group(2) is None and scope["type"] == "http":
                await _redirect(scope, send, f"{scope['path']}/")
                return
            caller = forward.request_headers(scope)
            websocket = scope["type"] == "websocket"
            scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
            if (websocket or scope.get("method") not in SAFE_METHODS) \
                    and not hdr.same_origin(caller, scheme):
                raise Forbidden("cross_origin", "a request from another site's page may "
                                "not use the master's proxy")
            target = await asyncio.to_thread(authorize, self.flask_app, int(match.group(1)),
                                             caller)
            with instruments.proxy_connection("websocket" if websocket else "http"):
                if websocket:
                    upstream = await forward.open_websocket(scope, target)
                    await receive()  # websocket.connect
                    await forward.relay_websocket(upstream, receive, send)
                else:
                    await forward.forward_http(self._client(), scope, receive, send, target)
        except DomainError as exc:
            await _refuse(scope, receive, send, exc)


async def _refuse(scope: Scope, receive: Receive, send: Send, exc: DomainError) -> None:
    """Answer ``exc`` in the common error shape (a WebSocket: as the HTTP answer to its
    handshake where the server can, else by closing it, which it answers with 403)."""
    body = json.dumps(refusal_body(exc)).encode()
    start: dict[str, Any] = {"status": http_status(exc), "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]}
    if scope["type"] == "http":
        await send({"type": "http.response.start", **start})
        await send({"type": "http.response.body", "body": body})
        return
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    if "websocket.http.response" in (scope.get("extensions") or {}):
        await send({"type": "websocket.http.response.start", **start})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})


async def _redirect(scope: Scope, send: Send, path: str) -> None:
    query = scope.get("query_string") or b""
    location = path + (f"?{query.decode('latin-1')}" if query else "")
    await send({"type": "http.response.start", "status": 307,
                "headers": [(b"location", location.encode("latin-1")),
                            (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


def create_asgi_app(flask_app: Flask, threads: int) -> MasterApp:
    """The master's ASGI app around ``flask_app`` (``threads``: the WSGI pool's size)."""
    return MasterApp(flask_app, threads)
