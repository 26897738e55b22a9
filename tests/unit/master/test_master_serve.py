"""det-master's reconciler supervisor: one reconciler process, restarted if it dies."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from hpcdet.master.serve import ReconcilerSupervisor
from hpcdet.master.settings.core import MasterSettings


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


def test_the_reconciler_stops_when_its_master_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    # A master killed with SIGKILL cannot stop its reconciler: the reconciler notices that
    # its parent changed (it was re-parented) and stops by itself.
    from hpcdet.master import serve

    parents = iter([100, 100, 1])
    monkeypatch.setattr(serve.os, "getppid", lambda: next(parents, 1))
    stop = threading.Event()
    serve._stop_when_orphaned(stop, interval=0.01)
    assert stop.wait(10)


def test_gunicorn_runs_asyncio_workers_with_the_tls_files(settings: MasterSettings) -> None:
    from dataclasses import replace

    from hpcdet.master.serve import gunicorn_options
    from hpcdet.master.settings.tls import TlsSettings

    plain = gunicorn_options(replace(settings, workers=3, threads=5))
    assert plain["worker_class"] == "uvicorn_worker.UvicornWorker"
    assert plain["workers"] == 3 and "threads" not in plain and "certfile" not in plain
    assert plain["reuse_port"] is True  # each worker its own socket: connections spread
    tls = gunicorn_options(replace(settings, tls=TlsSettings("/etc/c.pem", "/etc/k.pem")))
    assert (tls["certfile"], tls["keyfile"]) == ("/etc/c.pem", "/etc/k.pem")


def test_a_port_something_listens_on_is_refused_at_start() -> None:
    import socket

    import click

    from hpcdet.master.serve import refuse_port_in_use

    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)  # as another master's
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        with pytest.raises(click.ClickException, match=f"cannot listen on 127.0.0.1:{port}"):
            refuse_port_in_use("127.0.0.1", port)
