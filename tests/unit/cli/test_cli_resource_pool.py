"""``det resource-pool list`` against a fake master, and against the real master's API
serving a stored pools snapshot (over HTTP through WSGI)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from hpcdet.cli.main import CliState, cli
from hpcdet.dispatcher.slurm.backend import SlurmBackend

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)


def _pool(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "partition": name, "slot_type": "cpu", "nodes_up": 3,
            "nodes_total": 3, "slots_used": 1, "slots_total": 12, "gpu_types": [],
            "jobs_pending": 0, "default_compute": False, "default_aux": False,
            "description": None, **extra}


ANSWER = {"taken_at": "2024-05-01T12:00:00+00:00", "refresh_seconds": 15, "resource_pools": [
    _pool("batch", slot_type="cuda", nodes_up=2, slots_used=2, slots_total=4,
          gpu_types=["a100", "v100"], jobs_pending=5, default_compute=True,
          description="CPU and GPU nodes"),
    _pool("debug", default_aux=True),
    _pool("gpu-only", partition="batch", slot_type="cuda", default_compute=False),
]}


def test_list_table(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/resource-pools", ANSWER)
    result = det("resource-pool", "list")
    assert result.exit_code == 0, result.output
    header, _, batch, debug, gpu_only = result.stdout.splitlines()
    assert header.split("  ")[0] == "Pool" and "Nodes up/total" in header
    assert batch.split() == ["batch", "batch", "cuda", "2/3", "2/4", "a100,", "v100", "5",
                             "compute", "CPU", "and", "GPU", "nodes"]
    assert debug.split() == ["debug", "debug", "cpu", "3/3", "1/12", "-", "0", "aux", "-"]
    assert gpu_only.split()[:2] == ["gpu-only", "batch"]


def test_alias_and_json(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/resource-pools", ANSWER)
    result = det("rp", "ls", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == ANSWER


def test_before_the_master_has_read_slurm(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/resource-pools",
                    {"resource_pools": [], "taken_at": None, "refresh_seconds": 15})
    result = det("rp", "list")
    assert result.exit_code == 0
    assert result.stdout == "No resource pools yet: the master reads them from Slurm every 15 s.\n"


def test_an_unreachable_master_is_one_line(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add_error("GET", "/resource-pools", 500, "internal", "boom")
    result = det("rp", "list")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "boom" in result.output


@pytest.fixture
def real_master(migrated_db_url: str, tmp_path: Path) -> Iterator[tuple[httpx.WSGITransport, Any]]:
    """The real master app with its database, reached over HTTP through WSGI."""
    from hpcdet.dispatcher.slurm.backend import SlurmBackend
    from hpcdet.master.app import create_app
    from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings

    rm = replace(ResourceManagerSettings(), job_storage_root=str(tmp_path / "jobs"),
                 master_host="master.example", cluster_name="unit", pool_refresh_seconds=7)
    settings = MasterSettings(db_url=migrated_db_url, resource_manager=rm, state_dir=str(tmp_path))
    app = create_app(settings, backend=SlurmBackend())
    yield httpx.WSGITransport(app=app), app
    app.config["HPCDET_ENGINE"].dispose()


def _run(transport: httpx.BaseTransport, *args: str) -> Result:
    state = CliState(transport=transport, user="alice", poll_interval=0)
    return CliRunner().invoke(cli, list(args), obj=state, prog_name="det")


def _store_pools(app: Any) -> None:
    from hpcdet.master.db import make_session_factory, session_scope
    from hpcdet.master.queue.pools import read_pools
    from hpcdet.master.queue.snapshots import POOLS, store_snapshot

    sinfo = ("batch*|node1|idle|4|0/4/0/4|(null)|gpu:0|\n"
             "batch*|node2|mixed|4|1/3/0/4|gpu:2|gpu:1|\n"
             "debug|node1|idle|4|0/4/0/4|(null)|gpu:0|\n")

    def runner(argv: Any, *, timeout: float = 60) -> str:
        return sinfo if argv[0] == "sinfo" else "debug\ndebug\n"

    data = read_pools(SlurmBackend(runner=runner), app.config["HPCDET_SETTINGS"])
    with session_scope(make_session_factory(app.config["HPCDET_ENGINE"])) as session:
        store_snapshot(session, POOLS, data)


def test_the_api_serves_the_snapshot(real_master: tuple[httpx.WSGITransport, Any]) -> None:
    transport, app = real_master
    empty = json.loads(_run(transport, "rp", "list", "--json").stdout)
    assert empty == {"resource_pools": [], "taken_at": None, "refresh_seconds": 7}
    _store_pools(app)
    answer = json.loads(_run(transport, "rp", "list", "--json").stdout)
    assert answer["taken_at"] is not None
    by_name = {pool["name"]: pool for pool in answer["resource_pools"]}
    assert list(by_name) == ["batch", "debug"]
    assert (by_name["batch"]["slot_type"], by_name["batch"]["slots_used"],
            by_name["batch"]["slots_total"], by_name["batch"]["default_compute"]) == (
        "cuda", 1, 2, True)
    assert by_name["debug"]["jobs_pending"] == 2
    table = _run(transport, "resource-pool", "list").stdout.splitlines()
    assert table[2].split()[:8] == ["batch", "batch", "cuda", "2/2", "1/2", "-", "0",
                                    "compute,"]
    assert table[3].split()[:7] == ["debug", "debug", "cpu", "1/1", "0/4", "-", "2"]
