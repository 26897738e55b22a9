"""Fixtures for master tests: a migrated database (SQLite and PostgreSQL), app and client."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient

from hpcdet.dispatcher.slurm.backend import SlurmBackend
from hpcdet.master.app import create_app
from hpcdet.master.composition import make_reconciler
from hpcdet.master.db import make_session_factory
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.settings.core import MasterSettings, ResourceManagerSettings


@pytest.fixture
def settings(migrated_db_url: str, tmp_path: Path) -> MasterSettings:
    rm = replace(ResourceManagerSettings(), job_storage_root=str(tmp_path / "jobs"),
                 master_host="master.example", cluster_name="unit")
    return MasterSettings(db_url=migrated_db_url, resource_manager=rm, state_dir=str(tmp_path))


@pytest.fixture
def app(settings: MasterSettings) -> Iterator[Flask]:
    app = create_app(settings, backend=SlurmBackend())
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def fake() -> FakeSchedulerBackend:
    """The scripted scheduler (tests/unit/master/fake_scheduler.py)."""
    return FakeSchedulerBackend()


@pytest.fixture
def reconciler(app: Flask, fake: FakeSchedulerBackend) -> Reconciler:
    """A reconciler on the app's database, submitting to the scripted scheduler."""
    return make_reconciler(app.config["HPCDET_SETTINGS"],
                           make_session_factory(app.config["HPCDET_ENGINE"]), fake)
