"""The allocation agent's loop against a scripted master, and its HTTP exchange against a
small fake master (no Slurm: the steps here are plain scripts)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from hpcdet.jobfiles import exit_reason_path
from hpcdet.launch import allocation_agent
from hpcdet.launch.allocation_agent import Agent, FatalAnswer, http_exchange


class ScriptedMaster:
    """Answers the agent's exchanges from a list; records every batch of events."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers, self.received = answers, []  # type: ignore[var-annotated]

    def __call__(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        self.received.append(events)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return dict(answer)


def script(tmp_path: Path, name: str, body: str) -> tuple[str, str]:
    job_dir = tmp_path / name
    job_dir.mkdir()
    path = job_dir / "job-1.sh"
    path.write_text(body)
    return str(path), str(job_dir)


def launch(trial_id: int, path: str, job_dir: str, run_id: int = 1) -> dict[str, Any]:
    return {"trial_id": trial_id, "run_id": run_id, "script": path, "job_dir": job_dir}


def events(master: ScriptedMaster) -> list[tuple[int, str, Any]]:
    return [(e["trial_id"], e["event"], e.get("exit_code"))
            for batch in master.received for e in batch]


def test_the_agent_runs_each_launched_script_once_and_reports_its_exit(
        tmp_path: Path) -> None:
    path, job_dir = script(tmp_path, "trial-7", 'echo "$SLURM_EXACT"; exit 3\n')
    stale = exit_reason_path(job_dir, "55", 0)
    stale.write_text('{"reason": "preempted"}')  # an earlier run's, in the same job
    idle = {"launch": [], "cancel": [], "exit": False, "interval": 0.05}
    master = ScriptedMaster([
        {**idle, "launch": [launch(7, path, job_dir)]},
        {**idle, "launch": [launch(7, path, job_dir)]},  # resent: not run twice
        *[idle] * 40,
        {**idle, "exit": True},
    ])
    agent = Agent(master, job_id="55", environ={"PATH": "/usr/bin:/bin"}, sleep=_short_sleep)
    assert agent.run() == 0
    assert events(master) == [(7, "started", None), (7, "exited", 3)]
    assert (Path(job_dir) / "slurm-55.1.out").read_text() == "1\n"
    assert not stale.exists()


def test_reports_wait_for_a_master_that_is_down(tmp_path: Path) -> None:
    path, job_dir = script(tmp_path, "trial-1", "exit 0\n")
    idle = {"launch": [], "cancel": [], "exit": False, "interval": 0.01}
    down = OSError("connection refused")
    master = ScriptedMaster([{**idle, "launch": [launch(1, path, job_dir)]}, down, down,
                             {**idle, "exit": True}])
    slept: list[float] = []
    agent = Agent(master, job_id="9", environ={}, sleep=lambda s: (slept.append(s),
                                                                    _short_sleep(s)))
    assert agent.run() == 0
    # The start went out at once and, unacknowledged, twice more after growing pauses.
    started = [batch for batch in master.received if any(e["event"] == "started"
                                                         for e in batch)]
    assert len(started) == 3 and slept[:2] == [0.5, 1.0]
    assert ("exited", 0) in [(e["event"], e.get("exit_code")) for e in started[-1]]


def test_a_cancelled_step_is_terminated_and_one_never_started_is_reported_ended(
        tmp_path: Path) -> None:
    path, job_dir = script(tmp_path, "trial-2", "exec sleep 60\n")
    idle = {"launch": [], "cancel": [], "exit": False, "interval": 0.05}
    master = ScriptedMaster([
        {**idle, "launch": [launch(2, path, job_dir)]},
        {**idle, "cancel": [{"trial_id": 2, "run_id": 1}, {"trial_id": 3, "run_id": 1}]},
        *[idle] * 40,
        {**idle, "exit": True},
    ])
    agent = Agent(master, job_id="9", environ={}, sleep=_short_sleep)
    assert agent.run() == 0
    assert sorted(events(master)) == [(2, "exited", 143), (2, "started", None),
                                      (3, "exited", None)]


def test_a_refusal_ends_the_agent() -> None:
    master = ScriptedMaster([FatalAnswer("HTTP 401")])
    assert Agent(master, job_id="9", environ={}).run() == 1


class _FakeMaster(BaseHTTPRequestHandler):
    status = 200
    seen: list[tuple[str, str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((self.path, self.headers["Authorization"], body))
        payload = json.dumps({"launch": [], "cancel": [], "exit": True}).encode()
        self.send_response(self.status)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fake_master() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _FakeMaster)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    _FakeMaster.status, _FakeMaster.seen = 200, []


def test_the_http_exchange_carries_the_token_and_tells_failures_apart(
        fake_master: str) -> None:
    exchange = http_exchange(fake_master + "/", 4, "secret")
    assert exchange([{"trial_id": 1, "run_id": 1, "event": "started"}])["exit"] is True
    path, auth, body = _FakeMaster.seen[0]
    assert (path, auth) == ("/api/v1/allocations/4/exchange", "Bearer secret")
    assert body["events"][0]["event"] == "started"
    _FakeMaster.status = 503
    with pytest.raises(OSError, match="503"):
        exchange([])
    _FakeMaster.status = 401
    with pytest.raises(FatalAnswer):
        exchange([])
    with pytest.raises(OSError):
        http_exchange("http://127.0.0.1:9", 4, "secret")([])  # nothing listens there


def test_main_reads_the_token_file(tmp_path: Path, fake_master: str) -> None:
    token = tmp_path / ".token"
    token.write_text("from-file\n")
    assert allocation_agent.main(["--master", fake_master, "--allocation", "2",
                                  "--token-file", str(token)]) == 0
    assert _FakeMaster.seen[0][1] == "Bearer from-file"


def _short_sleep(seconds: float) -> None:
    import time
    time.sleep(min(seconds, 0.05))
