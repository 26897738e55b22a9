"""Fixtures of the compat tier: a live master on the dev Slurm cluster for the tutorials.

The master is ``tests/integration``'s :class:`LiveMaster` (SQLite only: the tutorials test
what the trial sees, not the database); its checkpoint storage is a ``shared_fs`` directory
under the test's ``tmp_path``, since Determined's tutorial configs name no storage. Its
trials run in the dev cluster's ``side`` partition (node[5-6], 8 slots, which no other test
uses): scripts/test runs this tier beside the integration tests.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from it_helpers import BIN, LiveMaster  # noqa: E402
from tutorials import tool_environ  # noqa: E402

SIDE_PARTITION = "side"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def live_compat_master(slurm: dict[str, str], base: Path) -> Iterator[LiveMaster]:
    """det-master on a free port, submitting CPU-slot jobs to the dev cluster, its files
    (database, jobs, checkpoints under ``base/ckpt``) in ``base``."""
    port = _free_port()
    storage = base / "ckpt"
    config: dict[str, Any] = {
        "port": port, "host": "127.0.0.1", "db": {"url": f"sqlite:///{base / 'm.sqlite'}"},
        "reconciler": {"interval_seconds": 1},
        "webserver": {"workers": 1, "threads": 4},
        "auth": {"mode": "open"},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(storage)},
        "security": {"storage_roots": [str(storage), str(base / "jobs")]},
        "resource_manager": {"master_host": "127.0.0.1", "cluster_name": "compat",
                             "job_storage_root": str(base / "jobs"), "slot_type": "cpu",
                             "default_compute_resource_pool": SIDE_PARTITION},
    }
    (base / "master.yaml").write_text(yaml.safe_dump(config))
    url = f"http://127.0.0.1:{port}"
    env = tool_environ({**slurm, "DET_MASTER": url, "DET_USER": "tester"})
    live = LiveMaster(url=url, env=env, job_root=base / "jobs", log=base / "master.log",
                      argv=(str(BIN / "det-master"), "--config", str(base / "master.yaml")))
    try:
        live.start()
        yield live
    finally:
        live.stop()


@pytest.fixture
def compat_master(slurm: dict[str, str], tmp_path: Path) -> Iterator[LiveMaster]:
    """det-master on a free port, submitting CPU-slot jobs to the dev cluster."""
    with live_compat_master(slurm, tmp_path) as live:
        yield live


@pytest.fixture(scope="module")
def module_master(slurm: dict[str, str],
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveMaster]:
    """One such master for a module's tests (each names its experiments apart)."""
    with live_compat_master(slurm, tmp_path_factory.mktemp("master")) as live:
        yield live
