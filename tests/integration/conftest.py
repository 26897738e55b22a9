"""A live master (det-master in a subprocess) on the real dev Slurm cluster.

Every test here drives the real ``det`` CLI against the real master, which submits real
Slurm jobs; the database is SQLite or a fresh PostgreSQL database.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from it_helpers import BIN, LiveMaster


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"det-master exited early:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/api/v1/master", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"det-master did not answer:\n{log.read_text()[-3000:]}")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def master(request: pytest.FixtureRequest, slurm: dict[str, str],
           tmp_path: Path) -> Iterator[LiveMaster]:
    """det-master on a free port, submitting to the dev cluster, on SQLite or PostgreSQL."""
    db_url = (f"sqlite:///{tmp_path / 'master.sqlite'}" if request.param == "sqlite"
              else request.getfixturevalue("postgres_url"))
    port = free_port()
    config = {
        "port": port, "host": "127.0.0.1", "db": {"url": db_url},
        "reconciler": {"interval_seconds": 1},
        "webserver": {"workers": 1, "threads": 4},
        "resource_manager": {"master_host": "127.0.0.1", "cluster_name": "it",
                             "job_storage_root": str(tmp_path / "jobs")},
    }
    (tmp_path / "master.yaml").write_text(yaml.safe_dump(config))
    env = {**slurm, "DET_MASTER": f"http://127.0.0.1:{port}", "DET_USER": "tester"}
    log = tmp_path / "master.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(BIN / "det-master"), "--config",
                                    str(tmp_path / "master.yaml")], env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process, log)
        yield LiveMaster(url=url, env=env, job_root=tmp_path / "jobs", log=log)
    finally:
        process.terminate()
        process.wait(30)
