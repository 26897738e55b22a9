"""The TensorBoard task's loop (hpcdet.tensorboard.serve) with a real ``tensorboard``.

A fake metrics source stands in for the master. TensorBoard is started as the job starts it,
``service.json`` names its port, and its own scalars API (under the ``/proxy/<id>`` prefix)
serves the points, then also the ones reported while it runs, to requests carrying the
task's secret as the master's proxy sends it; without it, the port answers 401.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hang_guard import HANG_GUARD_S
from tensorboard_fakes import FakeMetrics

from hpcdet.errors import HpcdetError
from hpcdet.services.service_file import SERVICE_FILE, TOKEN_FILE
from hpcdet.tensorboard.events import RunWriter
from hpcdet.tensorboard.serve import StopFlag, fresh_logdir, run, task_secret
from hpcdet.tensorboard.sync import Syncer

pytestmark = pytest.mark.interactive
PREFIX = "/proxy/42"
SECRET = "task-secret"
AS_THE_PROXY = {"Authorization": f"token {SECRET}"}


def scalars(port: int, run_name: str, tag: str) -> list[list[float]]:
    query = urllib.parse.urlencode({"run": run_name, "tag": tag})
    url = f"http://127.0.0.1:{port}{PREFIX}/data/plugin/scalars/scalars?{query}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=AS_THE_PROXY),
                                    timeout=HANG_GUARD_S) as answer:
            points: list[list[float]] = json.load(answer)
            return points
    except urllib.error.HTTPError:  # the run or tag is not loaded yet
        return []


def status(url: str, headers: dict[str, str]) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                    timeout=HANG_GUARD_S) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)


def wait_for(probe: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_tensorboard_serves_the_points_and_new_ones(tmp_path: Path) -> None:
    fake = FakeMetrics()
    fake.experiments[1] = [10]
    fake.report(10, "validation", 100, validation_loss=0.8)
    logdir = fresh_logdir(tmp_path / "tensorboard")
    (tmp_path / TOKEN_FILE).write_text(SECRET + "\n")  # as the master writes it
    syncer = Syncer(fake, logdir, experiment_ids=[1], open_writer=RunWriter)
    stop = StopFlag()
    ended: list[int] = []
    thread = threading.Thread(target=lambda: ended.append(run(
        syncer, logdir, tmp_path, PREFIX, interval=0.2, stop=stop)))
    thread.start()
    try:
        service = wait_for(lambda: (tmp_path / SERVICE_FILE).exists(), "service.json")
        service = json.loads((tmp_path / SERVICE_FILE).read_text())
        port = int(service["port"])
        assert service["host"]
        tag = "validation/validation_loss"
        first = wait_for(lambda: scalars(port, "trial_10", tag), "the first point")
        assert [(step, round(value, 3)) for _, step, value in first] == [(100, 0.8)]
        fake.report(10, "validation", 200, validation_loss=0.5)
        both = wait_for(lambda: [p for p in scalars(port, "trial_10", tag)
                                 if len(scalars(port, "trial_10", tag)) == 2],
                        "the point reported while TensorBoard ran", 30)
        assert [step for _, step, _ in both] == [100, 200]
        # Straight to the node's port without the secret (or with another): refused.
        for headers in ({}, {"Authorization": "token wrong"}, {"Authorization": SECRET}):
            assert status(f"http://127.0.0.1:{port}{PREFIX}/", headers) == 401, headers
            assert status(f"http://127.0.0.1:{port}{PREFIX}/data/plugin/scalars/scalars?"
                          f"run=trial_10&tag={tag}", headers) == 401
        assert status(f"http://127.0.0.1:{port}{PREFIX}/", AS_THE_PROXY) == 200
    finally:
        stop.stopped = True
        thread.join(30)
    assert ended == [0]


def test_no_secret_no_tensorboard(tmp_path: Path) -> None:
    """TensorBoard is never served without the task's secret: a missing or empty file is
    refused, naming it."""
    with pytest.raises(HpcdetError, match="cannot read the task's secret"):
        task_secret(tmp_path)
    (tmp_path / TOKEN_FILE).write_text(" \n", encoding="utf-8")
    with pytest.raises(HpcdetError, match="the task's secret .* is empty"):
        task_secret(tmp_path)
    (tmp_path / TOKEN_FILE).write_text(f"{SECRET}\n", encoding="utf-8")
    assert task_secret(tmp_path) == (tmp_path / TOKEN_FILE, SECRET)
