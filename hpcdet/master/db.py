"""Database engine, sessions and migrations, for SQLite (default) and PostgreSQL alike."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

# The largest id a BIGINT column holds (both databases): a larger one in a URL is no row.
MAX_DB_INT = 2**63 - 1

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def make_engine(url: str) -> Engine:
    """Create an engine; SQLite gets the pragmas that make it safe for several processes."""
    if url.startswith("sqlite"):
        _ensure_sqlite_dir(url)
        engine = create_engine(url, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # No pre-ping: it costs a round trip on every checkout of the hot metrics path; stale
    # connections are recycled instead, and a failed request is retried by its client.
    return create_engine(url, pool_size=10, max_overflow=20, pool_recycle=1800)


def _ensure_sqlite_dir(url: str) -> None:
    """Create the SQLite file's directory (0700) and the file itself (0600), and take
    group and other permissions off an existing file and its ``-wal``/``-shm``: it holds
    every trial's token."""
    if "///" not in url:  # sqlite:// is an in-memory database
        return
    path = url.split("///", 1)[1].split("?", 1)[0]
    if not path or path == ":memory:" or path.startswith("file:"):
        return
    file = Path(path).expanduser()
    file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
    for each in (file, file.with_name(file.name + "-wal"), file.with_name(file.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(each, stat.S_IMODE(os.stat(each).st_mode) & 0o700)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # SQLite does not enforce foreign keys unless asked; WAL lets the reconciler write while
    # API workers read; busy_timeout makes concurrent writers wait instead of failing.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session that commits on success and rolls back on error (the boundary commits)."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


# The newest migration's revision (a test keeps it equal to Alembic's head): a database
# already there needs no Alembic at all, whose import and script scan cost ~0.4 s of every
# master start.
HEAD_REVISION = "0019"


def migrate(url: str) -> None:
    """Bring the database at ``url`` to the newest schema (Alembic ``upgrade head``)."""
    if url.startswith("sqlite"):
        _ensure_sqlite_dir(url)
    if schema_revision(url) == HEAD_REVISION:
        return
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    command.upgrade(config, "head")


def schema_revision(url: str) -> str | None:
    """The revision Alembic recorded in the database at ``url``; None if it has none yet
    (a new database) or cannot be read."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            value = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except SQLAlchemyError:
        return None
    finally:
        engine.dispose()
    return str(value) if value is not None else None
