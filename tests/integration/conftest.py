"""A live master (det-master in a subprocess) on the real dev Slurm cluster.

Every test here drives the real ``det`` CLI against the real master, which submits real
Slurm jobs; the database is SQLite or a fresh PostgreSQL database.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from db_templates import SchemaTemplates
from it_helpers import BIN, LiveMaster, missing
from packaging_helpers import InstalledHpcdet, build, install

# A failed test that ran a live master says what the master and its jobs printed last: CI
# keeps no temporary directories, and a hang (a trial that stops mid-way) is diagnosed from
# these or not at all.
_TAIL_LINES = 40
_JOB_LOGS_SHOWN = 4


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when != "call" or not report.failed:
        return
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, LiveMaster):
            for title, path in _master_files(value):
                report.sections.append((f"{title} (last {_TAIL_LINES} lines)", _tail(path)))


def _master_files(master: LiveMaster) -> list[tuple[str, Path]]:
    """The master's log and its newest job logs (``slurm-<id>.out/.err`` and PBS's)."""
    try:
        jobs = sorted((p for p in master.job_root.rglob("*") if p.is_file()
                       and (p.name.startswith("slurm-") or p.suffix in (".OU", ".ER"))),
                      key=lambda p: p.stat().st_mtime)
    except OSError:
        jobs = []
    return [("master log", master.log),
            *((f"job log {p.relative_to(master.job_root)}", p) for p in jobs[-_JOB_LOGS_SHOWN:])]


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - 64 * 1024))
            lines = handle.read().decode(errors="replace").splitlines()
    except OSError as exc:
        return f"(not readable: {exc.strerror})"
    return "\n".join(lines[-_TAIL_LINES:])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def resource_manager_settings() -> dict[str, Any]:
    """Extra ``resource_manager`` keys of the master.yaml; a test module may override it."""
    return {}


@pytest.fixture
def master_settings() -> dict[str, Any]:
    """Extra top-level keys of the master.yaml (``auth``...); a test module may override it."""
    return {}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def master(request: pytest.FixtureRequest, slurm: dict[str, str], tmp_path: Path,
           resource_manager_settings: dict[str, Any], master_settings: dict[str, Any],
           schema_templates: SchemaTemplates) -> Iterator[LiveMaster]:
    """det-master on a free port, submitting to the dev cluster, on SQLite or PostgreSQL."""
    db_url = (f"sqlite:///{tmp_path / 'master.sqlite'}" if request.param == "sqlite"
              else request.getfixturevalue("postgres_url"))
    # At the newest schema already: the master's own migration at start is then a no-op.
    schema_templates.copy_to(db_url)
    port = free_port()
    config = {
        "port": port, "host": "127.0.0.1", "db": {"url": db_url},
        "reconciler": {"interval_seconds": 1},
        "webserver": {"workers": 1, "threads": 4},
        # slot_type cpu: partition batch includes the GPU nodes, which would make it a cuda
        # pool; tests of GPU slots set their own resource_manager_settings.
        "resource_manager": {"master_host": "127.0.0.1", "cluster_name": "it",
                             "job_storage_root": str(tmp_path / "jobs"), "slot_type": "cpu"},
    }
    config["resource_manager"].update(resource_manager_settings)
    config.update(master_settings)
    # load_settings defaults to munge; these tests name their user with DET_USER.
    config["auth"] = {"mode": "open", **config.get("auth", {})}
    (tmp_path / "master.yaml").write_text(yaml.safe_dump(config))
    # A master with security.tls serves HTTPS (the test sets DET_MASTER_CERT_FILE).
    scheme = "https" if (config.get("security") or {}).get("tls") else "http"
    url = f"{scheme}://127.0.0.1:{port}"
    env = {**slurm, "DET_MASTER": url, "DET_USER": "tester"}
    live = LiveMaster(url=url, env=env, job_root=tmp_path / "jobs",
                      log=tmp_path / "master.log", db_url=db_url,
                      argv=(str(BIN / "det-master"), "--config", str(tmp_path / "master.yaml")))
    try:
        live.start()
        yield live
    finally:
        live.stop()
        live.cancel_leftover_jobs()


@pytest.fixture(scope="session")
def installed_hpcdet(tmp_path_factory: pytest.TempPathFactory) -> InstalledHpcdet:
    """The working tree's wheel, built once per session and installed with its ``master``
    extra into a fresh venv outside the repository (tests/integration/packaging_helpers.py)."""
    import importlib.util

    if importlib.util.find_spec("build") is None:
        missing("the `build` package is not installed (pip install -e '.[dev]')")
    root = tmp_path_factory.mktemp("packaging")
    return install(build(root / "build"), root / "installed")
