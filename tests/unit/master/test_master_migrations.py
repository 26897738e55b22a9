"""The Alembic migrations build exactly the schema the models describe, on both databases."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from hpcdet.master.db import HEAD_REVISION, MIGRATIONS_DIR, make_engine, migrate, schema_revision
from hpcdet.master.models import Base


def test_migrations_match_the_models(db_url: str) -> None:
    migrate(db_url)
    engine = make_engine(db_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"render_as_batch": True})
            differences = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    assert differences == []


def test_head_revision_is_alembics_head() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    assert ScriptDirectory.from_config(config).get_current_head() == HEAD_REVISION


def test_a_database_at_the_head_is_not_migrated_again(db_url: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    migrate(db_url)
    assert schema_revision(db_url) == HEAD_REVISION
    import alembic.command

    def upgrade(*args: object) -> None:
        raise AssertionError("alembic ran on a database at the head")

    monkeypatch.setattr(alembic.command, "upgrade", upgrade)
    migrate(db_url)  # a no-op: no Alembic


def test_a_new_database_has_no_revision(tmp_path: Path) -> None:
    assert schema_revision(f"sqlite:///{tmp_path / 'new.sqlite'}") is None


def _alembic(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def test_migration_0019_adds_the_slot_layout_and_is_undone(db_url: str) -> None:
    config = _alembic(db_url)
    command.upgrade(config, "0018")
    command.upgrade(config, "head")
    command.downgrade(config, "0018")
    engine = make_engine(db_url)
    try:
        columns = {c["name"] for c in inspect(engine).get_columns("jobs")}
    finally:
        engine.dispose()
    assert not columns & {"node_count", "slots_per_node"}
    test_migrations_match_the_models(db_url)  # and upgraded again, as the models say


def test_migration_0019_leaves_earlier_jobs_without_a_layout(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    config = _alembic(url)
    command.upgrade(config, "0018")
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            # SQLite does not enforce the trial's foreign key: a bare job row will do.
            required = [(row[1], row[2]) for row in conn.execute(text("PRAGMA table_info(jobs)"))
                        if row[3]]
            values = {name: 1 if kind.upper() in ("INTEGER", "BIGINT", "BOOLEAN") else "{}"
                      for name, kind in required}
            conn.execute(text(f"INSERT INTO jobs ({', '.join(values)}) VALUES "
                              f"({', '.join(':' + k for k in values)})"), values)
        command.upgrade(config, "head")
        with engine.connect() as conn:
            layout = conn.execute(text("SELECT node_count, slots_per_node FROM jobs")).one()
    finally:
        engine.dispose()
    assert tuple(layout) == (None, None)
