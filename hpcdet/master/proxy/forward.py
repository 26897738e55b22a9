"""Forwarding one proxied request to its service: HTTP streamed both ways, WebSocket
messages both ways, all on the event loop (no thread per connection).

The path is forwarded unchanged (the service serves under ``/proxy/<task_id>/``). A
service that refuses the connection is a 502, one that does not answer in time a 504;
both in the common error shape (:mod:`.asgi` writes it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.typing import Subprotocol

from hpcdet.master.errors import UpstreamFailed, UpstreamTimeout
from hpcdet.master.proxy import headers as hdr
from hpcdet.master.proxy.access import Target

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

CONNECT_SECONDS = 10.0
# A service may take long to answer (a large notebook save); an idle WebSocket is kept.
WRITE_SECONDS = 300.0


def make_client() -> httpx.AsyncClient:
    """The client every proxied HTTP request of a worker goes through (pooled)."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(connect=CONNECT_SECONDS, read=None, write=WRITE_SECONDS,
                              pool=CONNECT_SECONDS),
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=100),
        follow_redirects=False, trust_env=False)


def request_headers(scope: Scope) -> list[tuple[str, str]]:
    """The request's headers as text (HTTP headers are Latin-1)."""
    return [(name.decode("latin-1"), value.decode("latin-1"))
            for name, value in scope.get("headers", [])]


def upstream_target(scope: Scope, target: Target, scheme: str) -> str:
    """The service's URL for the request: the same path and query, on the service's host."""
    raw = scope.get("raw_path") or scope["path"].encode("utf-8")
    query = scope.get("query_string") or b""
    host = f"[{target.host}]" if ":" in target.host else target.host  # an IPv6 address
    url = f"{scheme}://{host}:{target.port}{raw.decode('latin-1')}"
    return url + (f"?{query.decode('latin-1')}" if query else "")


def _client_address(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        chunk = message.get("body", b"")
        if chunk:
            yield chunk
        if not message.get("more_body", False):
            return


async def forward_http(client: httpx.AsyncClient, scope: Scope, receive: Receive, send: Send,
                       target: Target) -> None:
    """Send the request to the service and stream its answer back."""
    caller = request_headers(scope)
    names = {name.lower() for name, _ in caller}
    has_body = "content-length" in names or "transfer-encoding" in names
    outgoing = hdr.to_service(caller, target.token, client=_client_address(scope),
                              scheme=scope.get("scheme", "http"))
    request = client.build_request(scope["method"], upstream_target(scope, target, "http"),
                                   headers=outgoing,
                                   content=_body(receive) if has_body else None)
    try:
        response = await client.send(request, stream=True)
    except httpx.TimeoutException as exc:
        raise UpstreamTimeout("service_timeout", f"{_service(target)} did not answer in time "
                              f"({type(exc).__name__})") from None
    except httpx.HTTPError as exc:
        raise UpstreamFailed("service_refused", f"{_service(target)} refused the connection "
                             f"or broke it: {exc or type(exc).__name__}") from None
    try:
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": [(name.encode("latin-1"), value.encode("latin-1"))
                                for name, value in hdr.to_caller(
                                    response.headers.multi_items(), target.task_id)]})
        async for chunk in response.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        await response.aclose()


def _service(target: Target) -> str:
    return f"the service of task {target.task_id} ({target.host}:{target.port})"


async def open_websocket(scope: Scope, target: Target) -> ClientConnection:
    """Connect to the service's WebSocket with the caller's subprotocols; 502 if refused."""
    caller = request_headers(scope)
    outgoing = [(name, value) for name, value in hdr.to_service(
        caller, target.token, client=_client_address(scope), scheme=scope.get("scheme", "ws"),
        websocket=True) if name.lower() not in ("host", "origin")]
    offered = hdr.subprotocols(caller)
    try:
        return await connect(
            upstream_target(scope, target, "ws"), additional_headers=outgoing,
            subprotocols=[Subprotocol(name) for name in offered] or None,
            open_timeout=CONNECT_SECONDS, max_size=None, user_agent_header=None)
    except InvalidStatus as exc:
        raise UpstreamFailed("service_refused", f"{_service(target)} refused the WebSocket: "
                             f"HTTP {exc.response.status_code}") from None
    except (OSError, InvalidHandshake, TimeoutError) as exc:
        raise UpstreamFailed("service_refused", f"{_service(target)} refused the WebSocket: "
                             f"{exc or type(exc).__name__}") from None


async def relay_websocket(upstream: ClientConnection, receive: Receive, send: Send) -> None:
    """Accept the caller's WebSocket and pass messages both ways until either side closes."""
    await send({"type": "websocket.accept", "subprotocol": upstream.subprotocol})

    async def from_caller() -> None:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            if message["type"] == "websocket.receive":
                data = message.get("bytes")
                await upstream.send(data if data is not None else message.get("text") or "")

    async def from_service() -> None:
        with contextlib.suppress(ConnectionClosed):
            async for data in upstream:
                if isinstance(data, bytes):
                    await send({"type": "websocket.send", "bytes": data})
                else:
                    await send({"type": "websocket.send", "text": data})
        code = upstream.close_code or 1000
        with contextlib.suppress(Exception):  # the caller may be gone already
            await send({"type": "websocket.close", "code": 1000 if code in (1005, 1006)
                        else code})

    tasks = [asyncio.ensure_future(from_caller()), asyncio.ensure_future(from_service())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await upstream.close()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await task
