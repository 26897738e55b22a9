"""The Alembic migrations build exactly the schema the models describe, on both databases."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

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
