"""The web pages in real headless Chromium against a live ``det-master`` whose database the
test fills directly (no trial needs to train for a page to show one).

Fixtures:
- ``web_master``: det-master (a subprocess, as users run it) on a fresh SQLite database,
  submitting to the dev Slurm cluster; signed-in users are named (``require_user``) and
  ``site-admin`` is an admin. ``web_master_settings`` (a test module may override it) adds
  top-level master.yaml keys.
- ``web_db``: a SQLAlchemy ``Session`` factory on that master's database, for seeding.
- ``desktop`` / ``phone``: a browser context at 1440x900 / 390x844.
- ``shots``: the folder for screenshots, ``test-output/web/``.

Every test here is marked ``web`` and ``browser`` (and ``slurm``: the master needs the dev
cluster to start its reconciler against).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import create_engine
from sqlalchemy.orm import Session, sessionmaker

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from db_templates import SchemaTemplates  # noqa: E402
from it_helpers import BIN, LiveMaster  # noqa: E402

from hpcdet.services.service_file import free_port  # noqa: E402

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.web)
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.slurm)


@pytest.fixture
def web_master_settings() -> dict[str, Any]:
    """Extra top-level keys of the master.yaml; a test module may override it."""
    return {}


@pytest.fixture
def web_master(slurm: dict[str, str], tmp_path: Path, web_master_settings: dict[str, Any],
               schema_templates: SchemaTemplates) -> Iterator[LiveMaster]:
    """det-master on a free port and a fresh SQLite database, against the dev cluster."""
    db_url = f"sqlite:///{tmp_path / 'master.sqlite'}"
    schema_templates.copy_to(db_url)  # the master's own migration at start is then a no-op
    port = free_port()
    config: dict[str, Any] = {
        "port": port, "host": "127.0.0.1", "db": {"url": db_url},
        "reconciler": {"interval_seconds": 1},
        "webserver": {"workers": 1, "threads": 4},
        "resource_manager": {"master_host": "127.0.0.1", "cluster_name": "web",
                             "job_storage_root": str(tmp_path / "jobs"), "slot_type": "cpu"},
        "auth": {"mode": "open", "require_user": True, "admins": ["site-admin"]},
    }
    config.update(web_master_settings)
    (tmp_path / "master.yaml").write_text(yaml.safe_dump(config))
    url = f"http://127.0.0.1:{port}"
    env = {**slurm, "DET_MASTER": url, "DET_USER": "tester"}
    live = LiveMaster(url=url, env=env, job_root=tmp_path / "jobs", log=tmp_path / "master.log",
                      db_url=db_url,
                      argv=(str(BIN / "det-master"), "--config", str(tmp_path / "master.yaml")))
    try:
        live.start()
        yield live
    finally:
        live.stop()
        live.cancel_leftover_jobs()


@pytest.fixture
def web_db(web_master: LiveMaster) -> Iterator[Callable[[], Session]]:
    """Sessions on the live master's database (it migrated it at start)."""
    engine = create_engine(web_master.db_url)
    try:
        yield sessionmaker(engine)
    finally:
        engine.dispose()


# The pages' Content-Security-Policy forbids evaluating strings as script, which is how
# Playwright runs a test's wait_for_function predicates in the page: these contexts bypass
# it. The policy itself is tested with it in force: tests/integration/test_it_web.py and
# test_it_identity_web.py drive every page in Chromium and fail on any console error (a
# refused script is one), and tests/unit/master/test_master_security_headers.py checks
# the headers.
@pytest.fixture
def desktop(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport=DESKTOP, bypass_csp=True)
    yield ctx
    ctx.close()


@pytest.fixture
def phone(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, bypass_csp=True)
    yield ctx
    ctx.close()


@pytest.fixture
def shots(test_output: Path) -> Path:
    path = test_output / "web"
    path.mkdir(parents=True, exist_ok=True)
    return path
