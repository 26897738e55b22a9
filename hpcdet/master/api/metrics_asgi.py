"""``POST /api/v1/trials/<id>/metrics`` answered on the event loop, below the WSGI bridge.

Trials report far more often than anything else reaches the master; a py-spy profile of the
workers at 256 reporting trials (docs/performance.md, "Ingest headroom") put about 60 % of
their CPU in the plumbing around the view: a2wsgi's thread hand-offs, Flask's request
handling and its JSON. This route serves the common request, one the harness's reporter
sends, straight from the ASGI scope: the body parsed once (orjson when installed), the
cached token hash compared, the same :func:`~hpcdet.master.reports.reports.metrics_batch`
validation, and the same group-commit writer, awaited without a thread
(:meth:`~hpcdet.master.reports.ingest.MetricWriter.apply_async`).

Anything it is not sure of goes to the Flask route with the body it read, unchanged, so every
error answer (400, 401, 404, 413 and their messages) still comes from one place: a query
string, a content type other than ``application/json``, no ``Content-Length`` or one over
the route's limit, a token hash not in the writer's cache or not matching (the route reads
it fresh), a body that is not exactly the reporter's shape (``group``, ``reports`` of
``{steps_completed, metrics}``, ``stream``, ``seq``, ``resumed_from``, scalar leaves: its depth
is then bounded) or that would be refused. What it answers itself is the success (200
``{"stored", "duplicates"}``) and what only the write can tell (409 ``stale_run``, 500), in
the bytes and headers the Flask route gives (a test compares them).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from flask import Flask

from hpcdet.master.api.body_limits import limit_for
from hpcdet.master.api.errors import error_body
from hpcdet.master.db import MAX_DB_INT
from hpcdet.master.errors import DomainError
from hpcdet.master.reports.ingest import MetricWriter, StaleRunError
from hpcdet.master.reports.reports import STALE_RUN, metrics_batch
from hpcdet.master.security.tokens import token_matches

# The ASGI types of hpcdet.master.proxy.forward.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

ENDPOINT = "api.report_metrics"
_PATH = re.compile(r"/api/v1/trials/([0-9]{1,19})/metrics\Z")
_BODY_KEYS = frozenset({"group", "reports", "stream", "seq", "resumed_from"})
_REPORT_KEYS = frozenset({"steps_completed", "metrics"})
_SCALARS = (str, int, float, bool, type(None))
_READ_HEADERS = (b"content-length", b"content-type", b"authorization")
# The JSON escape of U+0000: a body that contains it goes the way that checks every string.
_NUL_ESCAPE = b"\\u0000"
# A surrogate escape (paired or lone: told apart only after parsing) goes to the Flask
# route, which refuses a lone one with its 400.
_SURROGATE_ESCAPES = (b"\\ud", b"\\uD")


def _stdlib_loads(body: bytes) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(body.decode("utf-8"), parse_constant=refuse)  # UTF-8 only, as orjson


def _json_loads() -> Callable[[bytes], Any]:
    """orjson's ``loads`` (about 3x faster on the reporter's bodies; it refuses NaN and
    Infinity too), else the standard library's, made as strict."""
    try:
        from orjson import loads
    except ImportError:  # pragma: no cover - orjson is in the master extra
        return _stdlib_loads
    return loads


_loads = _json_loads()


class _NotHere(Exception):
    """The request is one for the Flask route (see the module docstring)."""


class MetricsRoute:
    """The fast path for reports, falling back to ``flask_asgi`` (the WSGI bridge)."""

    def __init__(self, flask_app: Flask, flask_asgi: AsgiApp) -> None:
        self.flask_app = flask_app
        self.flask_asgi = flask_asgi
        settings = flask_app.config["HPCDET_SETTINGS"]
        self.max_bytes = limit_for(ENDPOINT, settings.hardening.max_body_mb)

    def matches(self, scope: Scope) -> bool:
        """Whether the request is a report for this route to try (cheap: path and method)."""
        return (scope.get("method") == "POST" and not scope.get("query_string")
                and not scope.get("root_path") and not self.flask_app.debug
                and _PATH.match(scope.get("path", "")) is not None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        length = _content_length(headers)
        if headers is None or length is None or length > self.max_bytes:
            await self.flask_asgi(scope, receive, send)  # it answers 413, or reads the body
            return
        body = await _read_body(receive)
        if body is None:  # the client went away
            return
        try:
            status, answer = await self._report(scope, headers, body)
        except _NotHere:
            await self.flask_asgi(scope, _replay(body, receive), send)
            return
        await _respond(send, status, self._json(answer))

    async def _report(self, scope: Scope, headers: dict[bytes, bytes],
                      body: bytes) -> tuple[int, Any]:
        trial_id = _trial_id(scope)
        writer: MetricWriter = self.flask_app.config["HPCDET_METRIC_WRITER"]
        _check_token(writer, trial_id, headers)
        if (_mimetype(headers) != "application/json" or _NUL_ESCAPE in body
                or any(escape in body for escape in _SURROGATE_ESCAPES)):
            raise _NotHere
        parsed = _parse(body)
        try:
            batch = metrics_batch(trial_id, parsed)
        except DomainError:
            raise _NotHere from None
        try:
            applied = await writer.apply_async(batch)
        except StaleRunError as exc:
            return 409, error_body(409, STALE_RUN, str(exc))
        except Exception as exc:  # as the Flask app's handler of the unexpected answers
            self.flask_app.logger.exception("unhandled error")
            return 500, error_body(500, "internal", f"internal error: {type(exc).__name__}")
        answer: dict[str, Any] = {"stored": applied.rows}
        if batch.stream is not None:
            answer["duplicates"] = applied.duplicates
        return 200, answer

    def _json(self, value: Any) -> bytes:
        # What the Flask app's JSON provider writes for a view's dict (compact, sorted keys).
        return (self.flask_app.json.dumps(value, separators=(",", ":")) + "\n").encode()


def _headers(scope: Scope) -> dict[bytes, bytes] | None:
    """The request's headers by lower-case name; None if one this route reads is repeated
    (the Flask route decides what that means)."""
    headers: dict[bytes, bytes] = {}
    for name, value in scope.get("headers", ()):
        key = bytes(name).lower()
        if key in headers and key in _READ_HEADERS:
            return None
        headers[key] = bytes(value)
    return headers


def _content_length(headers: dict[bytes, bytes] | None) -> int | None:
    raw = None if headers is None else headers.get(b"content-length")
    if headers is None or raw is None or b"transfer-encoding" in headers or not raw.isdigit():
        return None
    return int(raw)


def _mimetype(headers: dict[bytes, bytes]) -> str:
    return headers.get(b"content-type", b"").split(b";", 1)[0].strip().decode("latin-1").lower()


def _trial_id(scope: Scope) -> int:
    match = _PATH.match(scope["path"])
    trial_id = int(match.group(1)) if match else -1
    if not 0 <= trial_id <= MAX_DB_INT:
        raise _NotHere
    return trial_id


def _check_token(writer: MetricWriter, trial_id: int, headers: dict[bytes, bytes]) -> None:
    """The bearer token against the cached hash; anything else is the Flask route's to say."""
    expected = writer.cached_token(trial_id)
    header = headers.get(b"authorization", b"").decode("latin-1")
    token = header[7:].strip() if header.startswith("Bearer ") else ""
    if expected is None or not token or not token_matches(token, expected):
        raise _NotHere


def _parse(body: bytes) -> dict[str, Any]:
    """The body if it is exactly the reporter's shape (bounded depth), else :class:`_NotHere`."""
    try:
        parsed = _loads(body)
    except ValueError:
        raise _NotHere from None
    if not isinstance(parsed, dict) or not parsed.keys() <= _BODY_KEYS:
        raise _NotHere
    reports = parsed.get("reports")
    if not isinstance(reports, list) or not all(_plain_report(r) for r in reports):
        raise _NotHere
    for key in ("stream", "resumed_from"):
        value = parsed.get(key)
        if not (_scalar(value) or isinstance(value, dict) and all(map(_scalar, value.values()))):
            raise _NotHere
    if not _scalar(parsed.get("group")) or not _scalar(parsed.get("seq")):
        raise _NotHere
    return parsed


def _plain_report(report: Any) -> bool:
    """``{steps_completed, metrics}`` with scalar leaves (metrics_batch checks the rest)."""
    if not isinstance(report, dict) or not report.keys() <= _REPORT_KEYS:
        return False
    metrics = report.get("metrics")
    return _scalar(report.get("steps_completed")) and (
        _scalar(metrics) or isinstance(metrics, dict) and all(map(_scalar, metrics.values())))


def _scalar(value: Any) -> bool:
    """A JSON scalar the Flask route takes (not an infinite float: 1e400 parses as one)."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, _SCALARS)


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body (its length is known and within the limit); None on a disconnect."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` for the Flask route: the body already read, then the client's messages."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def _respond(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"x-content-type-options", b"nosniff")]})
    await send({"type": "http.response.body", "body": body})
