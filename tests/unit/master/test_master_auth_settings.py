"""auth.mode in master.yaml, the open master's warning, trial tokens stored hashed."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from master_helpers import create
from sqlalchemy import create_engine, text

from hpcdet.errors import ConfigError
from hpcdet.master.db import MIGRATIONS_DIR
from hpcdet.master.models import Trial
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.security.tokens import hash_token
from hpcdet.master.serve import warn_if_open
from hpcdet.master.settings.core import MasterSettings, load_settings


def settings_from(tmp_path: Path, text_: str) -> MasterSettings:
    path = tmp_path / "master.yaml"
    path.write_text(text_)
    return load_settings(path, environ={})


def test_a_production_master_yaml_defaults_to_munge(tmp_path: Path) -> None:
    settings = settings_from(tmp_path, "port: 8080\n")
    assert settings.auth_mode == "munge" and settings.identifies_users
    assert load_settings(None, environ={}).auth_mode == "munge"


def test_the_dataclass_default_stays_open() -> None:
    assert MasterSettings().auth_mode == "open" and not MasterSettings().identifies_users


def test_auth_keys_are_read_and_checked(tmp_path: Path) -> None:
    settings = settings_from(tmp_path, "auth: {mode: open, require_user: true, "
                             "session_hours: 8, admins: [root]}\n")
    assert (settings.auth_mode, settings.session_hours, settings.admins) == ("open", 8.0,
                                                                             ("root",))
    assert settings.identifies_users
    with pytest.raises(ConfigError) as info:
        settings_from(tmp_path, "auth: {mode: kerberos, session_hours: 0, pam: true}\n")
    joined = "\n".join(info.value.errors)
    assert "<master.yaml>.auth.mode: must be one of munge, open" in joined
    assert "<master.yaml>.auth.session_hours" in joined and "<master.yaml>.auth.pam" in joined


def test_an_open_master_warns_loudly(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="hpcdet.master"):
        warn_if_open(MasterSettings(auth_mode="munge"))
        assert caplog.records == []
        warn_if_open(MasterSettings(auth_mode="open"))
    assert "ANYONE" in caplog.text and "claim ANY user name" in caplog.text


def test_the_database_holds_only_the_hash_of_a_trials_token(
        client: FlaskClient, app: Flask, reconciler: Reconciler,
        fake: FakeSchedulerBackend) -> None:
    """Finding 9: the database held every trial's bearer token in plain text."""
    create(client)
    reconciler.cycle()
    job_dir = Path(fake.submitted[0].script_path).parent
    token = (job_dir / ".token").read_text().strip()
    with app.config["HPCDET_SESSION_FACTORY"]() as session:
        [trial] = session.query(Trial).all()
        stored = trial.token
    assert stored == hash_token(token) and stored != token
    url = f"/api/v1/trials/{trial.id}/metrics"
    body = {"group": "training", "reports": [{"steps_completed": 1, "metrics": {"loss": 1.0}}]}
    assert client.post(url, json=body, headers={"Authorization": f"Bearer {token}"}) \
        .status_code == 200
    assert client.post(url, json=body, headers={"Authorization": f"Bearer {stored}"}) \
        .status_code == 401


def test_a_resubmissions_new_token_works_at_once_despite_the_cached_hash(
        client: FlaskClient, app: Flask, reconciler: Reconciler) -> None:
    """Each submission gets a new token; the report route caches the hash it last read, so
    the new job's first reports used to be refused (401) until the cache expired."""
    create(client)
    reconciler.cycle()
    with app.config["HPCDET_SESSION_FACTORY"]() as session:
        [trial] = session.query(Trial).all()
        trial_id = trial.id
    url = f"/api/v1/trials/{trial_id}/metrics"
    body = {"group": "training", "reports": [{"steps_completed": 1, "metrics": {"loss": 1.0}}]}
    first, second = "first-runs-token", "second-runs-token"
    for token, steps in ((first, 1), (second, 2)):  # as a resubmission rotates it
        with app.config["HPCDET_SESSION_FACTORY"]() as session:
            session.get(Trial, trial_id).token = hash_token(token)  # type: ignore[union-attr]
            session.commit()
        body["reports"][0]["steps_completed"] = steps  # type: ignore[index]
        answer = client.post(url, json=body, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.get_json()


def test_migration_0006_hashes_the_tokens_of_existing_trials(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url)
    command.upgrade(config, "0005")
    engine = create_engine(url)
    with engine.begin() as conn:
        # SQLite does not enforce the experiment's foreign key: a bare trial row will do.
        columns = [(row[1], row[2]) for row in conn.execute(text("PRAGMA table_info(trials)"))
                   if row[3] and row[1] != "token"]
        values = {name: 1 if kind.upper() in ("INTEGER", "BIGINT") else "{}"
                  for name, kind in columns}
        values["token"] = "plain-old-token"
        conn.execute(text(f"INSERT INTO trials ({', '.join(values)}) VALUES "
                          f"({', '.join(':' + k for k in values)})"), values)
    command.upgrade(config, "head")
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT token FROM trials")).scalar()
    engine.dispose()
    assert stored == hash_token("plain-old-token")
