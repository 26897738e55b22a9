"""The Alembic migrations build exactly the schema the models describe, on both databases."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from hpcdet.master.db import make_engine, migrate
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
