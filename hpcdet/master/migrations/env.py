"""Alembic environment: runs hpcdet's migrations against the URL the master was given."""

from alembic import context
from sqlalchemy import create_engine, pool, text

from hpcdet.master.db import LOCK_TIMEOUT_SECONDS
from hpcdet.master.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    url = config.get_main_option("sqlalchemy.url")
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":  # db.migrate says who holds the table
            connection.execute(text(f"SET lock_timeout = '{LOCK_TIMEOUT_SECONDS}s'"))
            connection.commit()
        # render_as_batch lets the same migrations ALTER tables on SQLite.
        context.configure(connection=connection, target_metadata=target_metadata,
                          render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations_online()
