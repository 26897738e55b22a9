"""Test helpers for the harness and Core API tests: a fake master, a job directory.

A plain module with a unique name (not conftest.py), so tests can import it directly.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hang_guard import HANG_GUARD_S

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]
TOKEN = "test-token-123"
_ROUTE = re.compile(r"^/api/v1/trials/(\d+)/(metrics|checkpoints|early_exit)$")
_PREEMPTION = re.compile(r"^/api/v1/trials/(\d+)/preemption$")


@dataclass
class Recorded:
    """One request the fake master accepted."""

    trial_id: int
    route: str
    body: dict[str, Any]


class FakeMaster:
    """A FAKE of the master for unit tests: only the routes the harness calls.

    ``POST /api/v1/trials/<id>/metrics``, ``.../checkpoints`` and ``.../early_exit`` are
    checked for the bearer token and recorded; ``fail_next`` holds statuses to answer
    (with the common error shape) before accepting again, to exercise retries.
    ``GET .../preemption`` answers ``{"preempt": self.preempt}`` (or the next status in
    ``fail_polls``) and counts ``polls``. It knows nothing of experiments or states: the
    real routes are tested with the real master (tests/unit/master).
    """

    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.accepted: list[Recorded] = []
        self.fail_next: list[int] = []
        self.attempts = 0
        self.preempt = False
        self.polls = 0
        self.fail_polls: list[int] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def metric_posts(self, group: str | None = None) -> list[dict[str, Any]]:
        """The bodies of accepted metric POSTs (optionally one group's)."""
        with self._lock:
            posts = [r.body for r in self.accepted if r.route == "metrics"]
        return [p for p in posts if group is None or p["group"] == group]

    def reports(self, group: str) -> list[dict[str, Any]]:
        """Every accepted report of ``group``, in arrival order."""
        return [report for post in self.metric_posts(group) for report in post["reports"]]

    def checkpoints(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.accepted if r.route == "checkpoints"]

    def early_exits(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.accepted if r.route == "early_exit"]

    def answer_get(self, path: str, auth: str | None) -> tuple[int, Any]:
        """The status and JSON body for one GET (only the preemption poll exists)."""
        with self._lock:
            if _PREEMPTION.match(path) is None:
                return 404, _error("not_found", f"no route {path}")
            if auth != f"Bearer {self.token}":
                return 401, _error("unauthorized", "bad or missing trial token")
            self.polls += 1
            if self.fail_polls:
                status = self.fail_polls.pop(0)
                return status, _error("internal", f"scripted failure {status}")
            return 200, {"preempt": self.preempt}

    def answer(self, path: str, auth: str | None, body: dict[str, Any]) -> tuple[int, Any]:
        """The status and JSON body for one POST."""
        with self._lock:
            self.attempts += 1
            match = _ROUTE.match(path)
            if match is None:
                return 404, _error("not_found", f"no route {path}")
            if auth != f"Bearer {self.token}":
                return 401, _error("unauthorized", "bad or missing trial token")
            if self.fail_next:
                status = self.fail_next.pop(0)
                return status, _error("internal", f"scripted failure {status}")
            record = Recorded(int(match.group(1)), match.group(2), body)
            self.accepted.append(record)
        if record.route == "checkpoints":
            return 201, {"checkpoint": body}
        if record.route == "early_exit":
            return 200, {}
        return 200, {"stored": len(body["reports"])}


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": []}}


def _handler_for(master: FakeMaster) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            self._send(*master.answer(self.path, self.headers.get("Authorization"), body))

        def do_GET(self) -> None:
            self._send(*master.answer_get(self.path, self.headers.get("Authorization")))

        def _send(self, status: int, answer: Any) -> None:
            payload = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return None  # keep test output quiet

    return Handler


def write_job_dir(
    root: pathlib.Path,
    master_url: str,
    *,
    entrypoint: str | list[str] = "python3 train.py",
    **extra: Any,
) -> pathlib.Path:
    """A job directory as the master lays it out: trial.json, .token, context/."""
    (root / "context").mkdir(parents=True, exist_ok=True)
    (root / ".token").write_text(TOKEN + "\n")
    trial = {
        "master_url": master_url,
        "experiment_id": 7,
        "trial_id": 11,
        "run_id": 1,
        "trial_seed": 1234,
        "hparams": {"lr": 0.1},
        "experiment_config": {"name": "test", "entrypoint": entrypoint},
        "latest_checkpoint": None,
        "checkpoint_dir": str(root / "checkpoints"),
        "token_file": ".token",
        **extra,
    }
    (root / "trial.json").write_text(json.dumps(trial))
    return root


def job_environ(job_dir: pathlib.Path, **extra: str) -> dict[str, str]:
    """This process's environment minus any job/rank variables, plus a job's and ``extra``."""
    prefixes = ("DET_", "SLURM_", "MASTER_", "RANK", "WORLD_SIZE", "LOCAL_", "GROUP_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update(
        PYTHONPATH=str(REPO_ROOT),
        DET_TRIAL_INFO=str(job_dir / "trial.json"),
        DET_JOB_DIR=str(job_dir),
        OMP_NUM_THREADS="1",
    )
    env.update(extra)
    return env


def unique_job_id() -> str:
    """A Slurm-like job id, different per call: concurrent test runs on one host would
    otherwise derive the same rendezvous port."""
    return str(random.SystemRandom().randrange(10**6, 10**8))


def one_node_step(job_dir: pathlib.Path, ntasks: int = 2) -> list[dict[str, str]]:
    """The environments srun gives the tasks of a one-node step, one per rank."""
    shared = {
        "SLURM_JOB_ID": unique_job_id(),
        "SLURM_JOB_NODELIST": "localhost",
        "SLURM_NNODES": "1",
        "SLURM_NODEID": "0",
        "SLURM_NTASKS": str(ntasks),
        "SLURM_TASKS_PER_NODE": str(ntasks),
    }
    return [
        job_environ(job_dir, **shared, SLURM_PROCID=str(rank), SLURM_LOCALID=str(rank))
        for rank in range(ntasks)
    ]


@dataclass
class RankResult:
    """What one harness process did."""

    returncode: int
    stdout: str
    stderr: str


def start_harness(
    job_dir: pathlib.Path, envs: list[dict[str, str]]
) -> list[subprocess.Popen[bytes]]:
    """Start ``python -m hpcdet.harness`` once per env, in context/, logging to rank-<i>.*."""
    procs = []
    for index, env in enumerate(envs):
        out, err = _log_paths(job_dir, index)
        with out.open("w") as stdout, err.open("w") as stderr:
            command = [sys.executable, "-W", "error", "-m", "hpcdet.harness"]
            cwd = job_dir / "context"
            procs.append(subprocess.Popen(command, cwd=cwd, env=env, stdout=stdout, stderr=stderr))
    return procs


# A guard against a hang, not a time limit (tests/hang_guard.py).
HANG_TIMEOUT = HANG_GUARD_S


def wait_harness(
    job_dir: pathlib.Path, procs: list[subprocess.Popen[bytes]], timeout: float = HANG_TIMEOUT
) -> list[RankResult]:
    """Wait for every rank (killing them all if one hangs) and collect their output."""
    try:
        codes = [proc.wait(timeout=timeout) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    logs = [_log_paths(job_dir, index) for index in range(len(procs))]
    return [
        RankResult(code, out.read_text(), err.read_text())
        for code, (out, err) in zip(codes, logs, strict=True)
    ]


def run_harness(
    job_dir: pathlib.Path, envs: list[dict[str, str]], timeout: float = HANG_TIMEOUT
) -> list[RankResult]:
    """Run one harness process per env to completion."""
    return wait_harness(job_dir, start_harness(job_dir, envs), timeout)


def _log_paths(job_dir: pathlib.Path, index: int) -> tuple[pathlib.Path, pathlib.Path]:
    return job_dir / f"rank-{index}.out", job_dir / f"rank-{index}.err"
