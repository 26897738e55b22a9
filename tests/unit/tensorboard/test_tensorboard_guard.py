"""TensorBoard behind the task's secret (hpcdet.tensorboard.guard): only a request with the
master proxy's ``Authorization: token <secret>`` reaches TensorBoard's WSGI app.

The real TensorBoard behind it, refusing a request straight to its port, is
test_tensorboard_serve.py.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest


def guard() -> Any:
    return importlib.import_module("hpcdet.tensorboard.guard")


def _app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"scalars"]


def _call(app: Any, authorization: str | None) -> tuple[str, bytes]:
    environ: dict[str, Any] = {"REQUEST_METHOD": "GET", "PATH_INFO": "/proxy/1/"}
    if authorization is not None:
        environ["HTTP_AUTHORIZATION"] = authorization
    seen: list[str] = []
    body = b"".join(app(environ, lambda status, headers: seen.append(status)))
    return seen[0], body


def test_only_the_tasks_secret_gets_through() -> None:
    app = guard().require_token(_app, "s3cret")
    assert _call(app, "token s3cret") == ("200 OK", b"scalars")
    for other in (None, "", "token", "token s3cre", "token s3cret2", "Bearer s3cret",
                  "s3cret", "token S3CRET", "token s3cret "):
        status, body = _call(app, other)
        assert status == "401 Unauthorized" and b"scalars" not in body, other


def test_an_empty_secret_is_refused() -> None:
    with pytest.raises(ValueError):
        guard().require_token(_app, "")


def test_the_secret_comes_from_a_file_never_the_command_line(tmp_path: Path) -> None:
    token_file = tmp_path / "service_token"
    token_file.write_text("abc\n")
    path, rest = guard().split_token_file(
        ["prog", "--logdir", "x", "--token-file", str(token_file), "--port", "1"])
    assert (path, rest) == (token_file, ["prog", "--logdir", "x", "--port", "1"])
    assert guard().read_secret(path) == "abc"
    token_file.write_text("\n")
    with pytest.raises(SystemExit, match="empty"):
        guard().read_secret(token_file)
    with pytest.raises(SystemExit, match="cannot read"):
        guard().read_secret(tmp_path / "missing")
    with pytest.raises(SystemExit, match="--token-file"):
        guard().split_token_file(["prog", "--logdir", "x"])


def test_the_job_refuses_to_serve_without_the_secret(tmp_path: Path) -> None:
    from hpcdet.errors import HpcdetError
    from hpcdet.tensorboard import serve

    with pytest.raises(HpcdetError, match="secret"):
        serve.start_tensorboard(tmp_path, "/proxy/1", tmp_path)
