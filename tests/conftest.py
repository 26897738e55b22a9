"""Shared fixtures and the tier rules.

Tiers: unit tests need nothing; ``@pytest.mark.slurm`` needs the dev cluster
(``scripts/dev-cluster up``); ``@pytest.mark.postgres`` needs a PostgreSQL server
(``HPCDET_TEST_POSTGRES_URL``, default the local server with trust auth). Outside CI a missing
component skips its tier with the reason; with ``CI=true`` (or ``HPCDET_REQUIRE_ALL=1``) it
fails the run instead, so no tier is silently skipped in CI.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from db_templates import SchemaTemplates
from required import missing

# --timings-json: what each test cost (wall, CPU, scheduler jobs); scripts/test uses it.
pytest_plugins = ["timing_plugin"]

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PG = "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"


def slurm_env() -> dict[str, str]:
    """The environment that selects the dev cluster (SLURM_CONF, PATH, HPCDET_DEV_SLURM):
    this process's when it names one, else what ``scripts/dev-cluster env`` prints."""
    env = dict(os.environ)
    if "SLURM_CONF" not in env:
        out = subprocess.run([str(REPO / "scripts" / "dev-cluster"), "env"], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            words = shlex.split(line)
            if len(words) == 2 and words[0] == "export" and "=" in words[1]:
                name, value = words[1].split("=", 1)
                env[name] = value
    return env


@pytest.fixture(scope="session")
def slurm() -> dict[str, str]:
    """Environment for talking to a live Slurm cluster; skips/fails when there is none."""
    env = slurm_env()
    if shutil.which("sinfo") is None:
        missing("Slurm client commands are not installed (run scripts/dev-cluster up)")
    probe = subprocess.run(["sinfo", "-h", "-o", "%P"], env=env, capture_output=True, text=True,
                           timeout=30)
    if probe.returncode != 0:
        missing(f"no Slurm cluster answers: {probe.stderr.strip()}")
    for name in ("SLURM_CONF", "PATH", "HPCDET_DEV_SLURM"):
        if name in env:
            os.environ[name] = env[name]
    return env


@pytest.fixture(scope="session")
def pyslurm_ready(slurm: dict[str, str]) -> None:
    """pyslurm is installed and built for the dev cluster's Slurm (``scripts/build-pyslurm``;
    only for 25.11): what ``resource_manager.slurm_api: pyslurm`` needs; skips/fails if not."""
    from hpcdet.dispatcher.slurm.backend import SlurmBackend

    problem = SlurmBackend(slurm_api="pyslurm").startup_problem()
    if problem is not None:
        missing(problem)


@pytest.fixture(scope="session")
def slurmrestd(slurm: dict[str, str]) -> str:
    """slurmrestd's URL on the dev cluster's Slurm 25.11 (HPCDET_DEV_SLURMRESTD); skips/fails
    when the cluster runs another Slurm or slurmrestd does not answer."""
    url = slurm.get("HPCDET_DEV_SLURMRESTD", "")
    if slurm.get("HPCDET_DEV_SLURM") != "25.11" or not url:
        missing("no slurmrestd: run scripts/dev-cluster with --slurm 25.11")
    import httpx

    try:
        httpx.get(f"{url}/openapi/v3", timeout=10)  # any answer (401 without a token) will do
    except httpx.HTTPError as exc:
        missing(f"slurmrestd at {url} does not answer: {type(exc).__name__}")
    os.environ["HPCDET_DEV_SLURMRESTD"] = url
    return url


def postgres_admin_setting() -> str:
    """The PostgreSQL URL the tests create their databases with (HPCDET_TEST_POSTGRES_URL)."""
    return os.environ.get("HPCDET_TEST_POSTGRES_URL", DEFAULT_PG)


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    """A PostgreSQL URL allowed to create databases; skips/fails when unreachable."""
    url = postgres_admin_setting()
    import sqlalchemy as sa

    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("select 1"))
    except sa.exc.OperationalError as exc:
        missing(f"PostgreSQL is not reachable at {url}: {str(exc).splitlines()[0]}")
    finally:
        engine.dispose()
    return url


@pytest.fixture
def postgres_url(postgres_admin_url: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    import sqlalchemy as sa

    name = f"hpcdet_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    yield postgres_admin_url.rsplit("/", 1)[0] + f"/{name}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each database-backed test runs on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'master.sqlite'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture(scope="session")
def schema_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchemaTemplates]:
    templates = SchemaTemplates(tmp_path_factory.mktemp("schema"), postgres_admin_setting())
    yield templates
    templates.drop()


@pytest.fixture
def migrated_db_url(db_url: str, schema_templates: SchemaTemplates) -> str:
    """``db_url`` at the newest schema (as ``hpcdet.master.db.migrate`` leaves it)."""
    schema_templates.copy_to(db_url)
    return db_url


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Debian's chromium (scripts/ensure-chromium installs it); skips/fails when missing."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    missing("chromium is not installed (run scripts/ensure-chromium)")
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[Any]:
    """Headless Chromium driven by Playwright, which never downloads a browser of its own."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed (scripts/bootstrap installs it)")
    with sync_playwright() as playwright:
        # --no-sandbox: the tests run as root in CI, where Chromium's sandbox refuses to start.
        launched = playwright.chromium.launch(executable_path=chromium_path,
                                              args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def test_output() -> Path:
    """Where tests leave artefacts for people (screenshots): HPCDET_TEST_OUTPUT or test-output/."""
    path = Path(os.environ.get("HPCDET_TEST_OUTPUT") or REPO / "test-output")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def dev_tls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA and a server certificate made by ``scripts/dev-tls`` (openssl), for TLS tests."""
    directory = tmp_path_factory.mktemp("tls")
    subprocess.run([str(Path(__file__).resolve().parents[1] / "scripts" / "dev-tls")],
                   check=True, capture_output=True, timeout=120,
                   env={"PATH": "/usr/bin:/bin", "HPCDET_TLS_DIR": str(directory),
                        "HOME": str(directory)})
    return directory


@pytest.fixture(scope="session")
def mpiexec() -> list[str]:
    """``mpiexec`` and the flags for 2 ranks on this host; skips/fails when MPI is missing.

    Debian's Open MPI name first: with the dev PBS server's ``/opt/pbs/bin`` first on PATH,
    plain ``mpiexec`` is PBS's own wrapper script, which is not Open MPI's launcher.
    """
    path = shutil.which("mpiexec.openmpi") or shutil.which("mpiexec")
    if path is None:
        missing("mpiexec is not installed (scripts/bootstrap installs Open MPI)")
        raise AssertionError("unreachable")
    version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    if "Open MPI" not in version.stdout + version.stderr and "OpenRTE" not in version.stdout:
        return [path]
    # Open MPI refuses more ranks than cores (CI has 2 shared ones) and, as root, to start.
    flags = ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    return [path, *flags]


@pytest.fixture(scope="session")
def mpi4py_installed() -> None:
    """Skips/fails when mpi4py (scripts/bootstrap installs it) cannot be imported."""
    import importlib.util

    if importlib.util.find_spec("mpi4py") is None:
        missing("mpi4py is not installed (run scripts/bootstrap)")


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """The URL of a local S3-API server (``scripts/s3-test-server``: moto, a stand-in for a
    real S3 endpoint) on 127.0.0.1, for the session; skips/fails without moto."""
    import importlib.util
    import sys

    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("boto3") is None:
        missing("moto[server] and boto3 are not installed (pip install -e '.[dev]')")
    server = subprocess.Popen([sys.executable, str(REPO / "scripts" / "s3-test-server")],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline().strip()
        if not line.startswith("endpoint_url="):
            pytest.fail(f"scripts/s3-test-server did not start: {line!r}", pytrace=False)
        yield line.split("=", 1)[1]
    finally:
        server.terminate()
        server.wait(30)
        if server.stdout is not None:
            server.stdout.close()


def run_test_server(script: str, variable: str, what: str) -> Iterator[str]:
    """Run ``scripts/<script>`` for the session and yield the value of the ``variable=...``
    line it prints first; fails (whatever the tier rules) when it does not start."""
    import sys

    server = subprocess.Popen([sys.executable, str(REPO / "scripts" / script)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stderr is not None
        line = server.stdout.readline().strip()
        if not line.startswith(f"{variable}="):
            server.kill()
            missing(f"scripts/{script} ({what}) did not start: "
                    f"{server.stderr.read().strip()[-500:]}")
        yield line.split("=", 1)[1]
    finally:
        server.terminate()
        server.wait(30)
        for stream in (server.stdout, server.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture(scope="session")
def gcs_emulator() -> Iterator[str]:
    """``STORAGE_EMULATOR_HOST`` of a local Google Cloud Storage emulator
    (``scripts/gcs-test-server``: gcp-storage-emulator, a stand-in for GCS), for the
    session; skips/fails without it."""
    import importlib.util

    for module in ("gcp_storage_emulator", "google.cloud.storage"):
        if importlib.util.find_spec(module) is None:
            missing(f"{module} is not installed (pip install -e '.[dev]')")
    yield from run_test_server("gcs-test-server", "STORAGE_EMULATOR_HOST", "gcp-storage-emulator")


@pytest.fixture(scope="session")
def azure_connection_string() -> Iterator[str]:
    """A connection string to a local Azure Blob Storage emulator
    (``scripts/azure-test-server``: Azurite, a stand-in for Azure, installed with npm on
    first use), for the session; skips/fails without it."""
    import importlib.util

    if importlib.util.find_spec("azure.storage.blob") is None:
        missing("azure-storage-blob is not installed (pip install -e '.[dev]')")
    yield from run_test_server("azure-test-server", "AZURE_STORAGE_CONNECTION_STRING", "Azurite")


@pytest.fixture(scope="session")
def sshd() -> dict[str, str]:
    """The dev sshd on 127.0.0.1 (``scripts/dev-sshd``, a stand-in for a login node): its
    ``HPCDET_SSHD_*`` variables (host, port, user, key, known_hosts, dir). Started here if
    it is not running (with SLURM_CONF for its sessions when set); skips/fails without sshd."""
    script = str(REPO / "scripts" / "dev-sshd")
    if shutil.which("sshd") is None and not os.path.exists("/usr/sbin/sshd"):
        missing("openssh-server is not installed (scripts/dev-sshd up installs it)")
    env = {**os.environ, **({"SLURM_CONF": slurm_env()["SLURM_CONF"]}
                            if "SLURM_CONF" in slurm_env() else {})}
    up = subprocess.run([script, "up"], env=env, capture_output=True, text=True, timeout=120)
    if up.returncode != 0:
        missing(f"scripts/dev-sshd up failed: {up.stderr.strip()[-500:]}")
    out = subprocess.run([script, "env"], capture_output=True, text=True, check=True).stdout
    return dict(word.split("=", 1) for line in out.splitlines() for word in line.split()[1:])
