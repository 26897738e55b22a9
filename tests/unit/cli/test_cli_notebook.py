"""``det notebook`` against a fake master: what is sent, the wait for the proxy, the URL."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

pytestmark = pytest.mark.interactive

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)
STATUS = "/proxy/7/api/status"


def task(state: str = "RUNNING", kind: str = "notebook") -> dict[str, Any]:
    return {"id": 7, "job_id": "812", "state": state, "name": "det-notebook", "kind": kind,
            "owner": "alice", "config": {}}


def test_start_sends_the_config_waits_for_the_proxy_and_prints_the_url(
        det: Det, fake_master: FakeMaster, tmp_path: Path) -> None:
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "a.ipynb").write_text("{}")
    fake_master.add("POST", "/notebooks", {"task": task("QUEUED"), "url": "/proxy/7/",
                                           "warnings": []}, status=201)
    fake_master.add("GET", STATUS, {"error": {}}, status=503)
    fake_master.add("GET", STATUS, {"status": "ok"})
    fake_master.add("GET", "/tasks/7", {"task": task("QUEUED")})
    result = det("notebook", "start", "--config", "idle_timeout=30m", "-c",
                 str(tmp_path / "ctx"), "--no-browser")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith("/proxy/7/")
    [request] = fake_master.sent("POST", "/notebooks")
    body = json.loads(request.content)
    assert body["config"] == {"idle_timeout": "30m"} and body["context"]
    assert [r.url.path for r in fake_master.requests].count(STATUS) == 2


def test_start_fails_when_the_notebook_ends_first(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("POST", "/notebooks", {"task": task("QUEUED")}, status=201)
    fake_master.add("GET", STATUS, {"error": {}}, status=503)
    fake_master.add("GET", "/tasks/7", {"task": task("ERROR")})
    fake_master.add("GET", "/tasks/7/logs", {"text": "jupyter: No module named jupyterlab\n",
                                             "next_offset": 36, "size": 36, "state": "ERROR"})
    result = det("notebook", "start", "--no-browser")
    assert result.exit_code == 1
    assert "ended ERROR before it answered" in result.stderr
    assert "No module named jupyterlab" in result.stderr  # the job's last lines
    assert "Traceback" not in result.output


def test_open_prints_the_url_and_refuses_other_kinds(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/tasks/7", {"task": task()})
    result = det("notebook", "open", "7", "--no-browser")
    assert result.exit_code == 0 and result.stdout.strip().endswith("/proxy/7/")
    fake_master.routes.clear()
    fake_master.add("GET", "/tasks/7", {"task": task(kind="command")})
    result = det("notebook", "kill", "7")
    assert result.exit_code == 1 and "is not a notebook" in result.stderr
