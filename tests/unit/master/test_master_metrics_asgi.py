"""POST /trials/<id>/metrics on the event loop (api/metrics_asgi.py): the answers the Flask
route gives, byte for byte, and every doubtful request handed to the Flask route."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from flask import Flask
from master_helpers import queued_trial
from sqlalchemy import func, select

from hpcdet.master.db import make_session_factory
from hpcdet.master.models import Metric
from hpcdet.master.proxy.asgi import MasterApp, create_asgi_app
from hpcdet.master.reports.ingest import MetricWriter

TOKEN = "tok-fast"
STREAM = {"stream": {"run_id": 1, "requeue": 0, "rank": 0},
          "resumed_from": {"uuid": None, "steps_completed": 0}}


def _trial(app: Flask, token: str = TOKEN) -> int:
    return queued_trial(app, token, None)


def _body(first_step: int = 1, count: int = 3, **extra: Any) -> dict[str, Any]:
    reports = [{"steps_completed": first_step + i, "metrics": {"loss": 0.5, "acc": 1}}
               for i in range(count)]
    return {"group": "training", "reports": reports, **extra}


class Master:
    """The ASGI app, with a count of the requests its fast route handed to Flask."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.asgi: MasterApp = create_asgi_app(app, 2)
        self.handed_on = 0
        flask_asgi = self.asgi.metrics.flask_asgi

        async def counting(scope: Any, receive: Any, send: Any) -> None:
            self.handed_on += 1
            await flask_asgi(scope, receive, send)

        self.asgi.metrics.flask_asgi = counting

    def post(self, path: str, content: bytes, headers: dict[str, str]) -> httpx.Response:
        async def go() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.asgi)
            async with httpx.AsyncClient(transport=transport, base_url="http://m") as client:
                return await client.post(path, content=content, headers=headers)

        return asyncio.run(go())

    def writer(self) -> MetricWriter:
        writer: MetricWriter = self.app.config["HPCDET_METRIC_WRITER"]
        return writer


@pytest.fixture
def master(app: Flask) -> Iterator[Master]:
    yield Master(app)


def _headers(token: str = TOKEN, content_type: str = "application/json") -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": content_type}


def _flask_answer(app: Flask, path: str, content: bytes,
                  headers: dict[str, str]) -> tuple[int, bytes, str | None, str | None]:
    response = app.test_client().post(path, data=content, headers=headers)
    return (response.status_code, response.data, response.headers.get("Content-Type"),
            response.headers.get("X-Content-Type-Options"))


def _answer(response: httpx.Response) -> tuple[int, bytes, str | None, str | None]:
    return (response.status_code, response.content, response.headers.get("content-type"),
            response.headers.get("x-content-type-options"))


def _rows(app: Flask, trial_id: int) -> int:
    with make_session_factory(app.config["HPCDET_ENGINE"])() as session:
        return int(session.scalar(select(func.count()).select_from(Metric)
                                  .where(Metric.trial_id == trial_id)) or 0)


@pytest.mark.parametrize("stream", [False, True], ids=["no-stream", "stream"])
def test_a_report_is_stored_on_the_event_loop_with_the_flask_routes_answer(
        master: Master, stream: bool) -> None:
    fast_trial, flask_trial = _trial(master.app), _trial(master.app, "other")
    master.writer().token_of(fast_trial)  # cached: the fast route never reads the database
    extra = {**STREAM, "seq": 0} if stream else {}
    content = json.dumps(_body(**extra)).encode()
    fast = master.post(f"/api/v1/trials/{fast_trial}/metrics", content, _headers())
    expected = _flask_answer(master.app, f"/api/v1/trials/{flask_trial}/metrics", content,
                             _headers("other"))
    assert master.handed_on == 0
    assert _answer(fast) == expected
    assert fast.json() == ({"stored": 6, "duplicates": 0} if stream else {"stored": 6})
    assert _rows(master.app, fast_trial) == _rows(master.app, flask_trial) == 6


def test_a_resent_batch_is_stored_once(master: Master) -> None:
    trial_id = _trial(master.app)
    master.writer().token_of(trial_id)
    content = json.dumps(_body(**STREAM, seq=0)).encode()
    path = f"/api/v1/trials/{trial_id}/metrics"
    first = master.post(path, content, _headers())
    again = master.post(path, content, _headers())
    assert (first.json(), again.json()) == ({"stored": 6, "duplicates": 0},
                                            {"stored": 0, "duplicates": 3})
    assert master.handed_on == 0
    assert _rows(master.app, trial_id) == 6


def test_a_stale_execution_gets_the_flask_routes_409(master: Master) -> None:
    trial_id = _trial(master.app)
    master.writer().token_of(trial_id)
    path = f"/api/v1/trials/{trial_id}/metrics"
    newer = {**STREAM, "stream": {"run_id": 2, "requeue": 0, "rank": 0}, "seq": 0}
    assert master.post(path, json.dumps(_body(**newer)).encode(), _headers()).status_code == 200
    stale = json.dumps(_body(**STREAM, seq=0)).encode()
    fast = master.post(path, stale, _headers())
    assert master.handed_on == 0
    assert _answer(fast) == _flask_answer(master.app, path, stale, _headers())
    assert fast.json()["error"]["code"] == "stale_run"


DOUBTFUL: dict[str, tuple[str, bytes, dict[str, str]]] = {
    "bad group": ("", json.dumps({**_body(), "group": "nope"}).encode(), _headers()),
    "NaN": ("", b'{"group":"training","reports":[{"steps_completed":1,"metrics":{"a":NaN}}]}',
            _headers()),
    "1e400 where nothing else looks": (
        "", json.dumps({**_body(**STREAM, seq=0)}).replace('"uuid": null', '"uuid": 1e400')
        .encode(), _headers()),
    "NUL in a name": ("", json.dumps(_body()).replace("loss", "lo\\u0000ss").encode(),
                      _headers()),
    "lone surrogate in a name": ("", json.dumps(_body()).replace("loss", "lo\\ud800ss")
                                 .encode(), _headers()),
    "deep nesting": ("", json.dumps({**_body(), "x": [[[[[[]]]]]] * 1}).encode().replace(
        b"[[[[[[]]]]]]", b"[" * 150 + b"]" * 150), _headers()),
    "unknown key": ("", json.dumps({**_body(), "extra": {"a": {"b": 1}}}).encode(), _headers()),
    "nested metric": ("", json.dumps(_body()).replace('"acc": 1', '"acc": {"x": 1}').encode(),
                      _headers()),
    "not JSON": ("", b"{nope", _headers()),
    "not an object": ("", b"[1, 2]", _headers()),
    "text/plain": ("", json.dumps(_body()).encode(), _headers(content_type="text/plain")),
    "wrong token": ("", json.dumps(_body()).encode(), _headers("wrong")),
    "no token": ("", json.dumps(_body()).encode(), {"Content-Type": "application/json"}),
    "a query string": ("?x=1", json.dumps(_body()).encode(), _headers()),
    "stream without seq": ("", json.dumps(_body(**STREAM)).encode(), _headers()),
    "negative step": ("", json.dumps(_body(first_step=-5)).encode(), _headers()),
    "UTF-16": ("", json.dumps(_body()).encode("utf-16"), _headers()),
}


@pytest.mark.parametrize("case", sorted(DOUBTFUL))
def test_a_doubtful_request_gets_the_flask_routes_answer(master: Master, case: str) -> None:
    trial_id = _trial(master.app)
    master.writer().token_of(trial_id)
    query, content, headers = DOUBTFUL[case]
    path = f"/api/v1/trials/{trial_id}/metrics{query}"
    fast = master.post(path, content, headers)
    expected = _flask_answer(master.app, path, content, headers)
    assert master.handed_on == (0 if query else 1)  # a query string never reaches the route
    assert _answer(fast) == expected
    assert _rows(master.app, trial_id) == (6 if expected[0] == 200 else 0) * 2


def test_a_lone_surrogate_in_a_metric_name_is_a_400_not_a_500(master: Master) -> None:
    # Issue 28, finding 9: the driver could not encode it (a 500 on both paths before).
    trial_id = _trial(master.app)
    master.writer().token_of(trial_id)
    _, content, headers = DOUBTFUL["lone surrogate in a name"]
    fast = master.post(f"/api/v1/trials/{trial_id}/metrics", content, headers)
    assert fast.status_code == 400 and "surrogate" in fast.json()["error"]["message"]
    assert _rows(master.app, trial_id) == 0


def test_a_token_not_cached_yet_is_read_by_the_flask_route(master: Master) -> None:
    trial_id = _trial(master.app)
    content = json.dumps(_body()).encode()
    path = f"/api/v1/trials/{trial_id}/metrics"
    assert master.post(path, content, _headers()).json() == {"stored": 6}
    assert master.handed_on == 1  # the Flask route read the hash, and cached it
    assert master.post(path, json.dumps(_body(4)).encode(), _headers()).json() == {"stored": 6}
    assert master.handed_on == 1


def test_an_unknown_trial_is_a_404_from_the_flask_route(master: Master) -> None:
    content = json.dumps(_body()).encode()
    fast = master.post("/api/v1/trials/999999/metrics", content, _headers())
    assert fast.status_code == 404
    assert _answer(fast) == _flask_answer(master.app, "/api/v1/trials/999999/metrics", content,
                                          _headers())
