"""det-master's reconciler supervisor: one reconciler process, restarted if it dies."""

from __future__ import annotations

import os
import signal
import time

import pytest

from hpcdet.master.serve import ReconcilerSupervisor
from hpcdet.master.settings import MasterSettings


def _wait(condition: object, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return True
        time.sleep(0.1)
    return False


def test_a_dead_reconciler_is_started_again(settings: MasterSettings,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ReconcilerSupervisor, "CHECK_SECONDS", 0.2)
    supervisor = ReconcilerSupervisor(settings)
    supervisor.start()
    try:
        first = supervisor.process
        assert first is not None and first.pid is not None
        os.kill(first.pid, signal.SIGKILL)
        assert _wait(lambda: supervisor.process is not first and supervisor.process.is_alive())
    finally:
        supervisor.stop()
    assert supervisor.process is not None and not supervisor.process.is_alive()
