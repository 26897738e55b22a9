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


@pytest.fixture
def compat_master(slurm: dict[str, str], tmp_path: Path) -> Iterator[LiveMaster]:
    """det-master on a free port, submitting CPU-slot jobs to the dev cluster."""
    port = _free_port()
    storage = tmp_path / "ckpt"
    config: dict[str, Any] = {
        "port": port, "host": "127.0.0.1", "db": {"url": f"sqlite:///{tmp_path / 'm.sqlite'}"},
        "reconciler": {"interval_seconds": 1},
        "webserver": {"workers": 1, "threads": 4},
        "auth": {"mode": "open"},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(storage)},
        "security": {"storage_roots": [str(storage), str(tmp_path / "jobs")]},
        "resource_manager": {"master_host": "127.0.0.1", "cluster_name": "compat",
                             "job_storage_root": str(tmp_path / "jobs"), "slot_type": "cpu",
                             "default_compute_resource_pool": SIDE_PARTITION},
    }
    (tmp_path / "master.yaml").write_text(yaml.safe_dump(config))
    url = f"http://127.0.0.1:{port}"
    env = tool_environ({**slurm, "DET_MASTER": url, "DET_USER": "tester"})
    live = LiveMaster(url=url, env=env, job_root=tmp_path / "jobs", log=tmp_path / "master.log",
                      argv=(str(BIN / "det-master"), "--config", str(tmp_path / "master.yaml")))
    try:
        live.start()
        yield live
    finally:
        live.stop()
