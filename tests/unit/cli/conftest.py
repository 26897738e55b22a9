"""Fixtures for the ``det`` unit tests: a fake master answering through httpx.MockTransport.

The integration tests run the CLI against the real master; these only check what the CLI
sends and how it shows what comes back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from hpcdet.cli.main import CliState, cli

Handler = Callable[[httpx.Request], Any]


class FakeMasterTransport(httpx.MockTransport):
    """A FAKE master for unit tests only: canned JSON answers per route, no real logic.

    ``add(method, path, *answers)`` queues answers for ``/api/v1<path>``; each request takes
    the next one and the last one repeats. An answer may be a callable of the request.
    Unknown routes answer 404 in the API's common error shape. Every request is kept in
    :attr:`requests`.
    """

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[tuple[int, Any]]] = {}
        self.requests: list[httpx.Request] = []
        super().__init__(self._handle)

    def add(self, method: str, path: str, *answers: Any, status: int = 200) -> None:
        self.routes.setdefault((method, path), []).extend((status, a) for a in answers)

    def add_error(self, method: str, path: str, status: int, code: str, message: str,
                  details: list[str] | None = None) -> None:
        """Answer ``path`` with the API's common error shape (docs/api.md)."""
        self.add(method, path, error_body(code, message, status, details), status=status)

    def sent(self, method: str, path: str) -> list[httpx.Request]:
        """The requests made to one route, in order."""
        return [r for r in self.requests
                if r.method == method and r.url.path == "/api/v1" + path]

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path.removeprefix("/api/v1")
        queue = self.routes.get((request.method, path))
        if not queue:
            return httpx.Response(404, json=error_body("not_found", f"no route {path}", 404))
        status, answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if callable(answer):
            answer = answer(request)
        if isinstance(answer, httpx.Response):
            return answer
        return httpx.Response(status, json=answer)


def error_body(code: str, message: str, status: int,
               details: list[str] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or []},
            "status": status}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DET_MASTER", raising=False)
    monkeypatch.setenv("DET_USER", "alice")


@pytest.fixture
def fake_master() -> FakeMasterTransport:
    return FakeMasterTransport()


@pytest.fixture
def det(fake_master: FakeMasterTransport) -> Callable[..., Result]:
    """Run ``det ARGS...`` in-process against ``fake_master``, polling without waiting."""

    def invoke(*args: str) -> Result:
        state = CliState(transport=fake_master, poll_interval=0)
        return CliRunner().invoke(cli, list(args), obj=state, prog_name="det")

    return invoke
