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
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from hpcdet import __version__
from hpcdet.errors import HpcdetError

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


class SchemaTooNewError(HpcdetError):
    """The database was written by a newer hpcdet: its revision is none this code knows."""

    def __init__(self, revision: str) -> None:
        self.revision = revision
        super().__init__(
            f"the database is at schema revision {revision}, newer than this hpcdet "
            f"{__version__} knows (its newest is {HEAD_REVISION}): run the hpcdet that "
            "wrote it, or restore the backup taken before the upgrade "
            "(docs/admin/upgrades.md)")


# How long a schema change or a restore waits for a table another session holds (a master
# still running, an open psql) before it gives up and says who holds it. PostgreSQL's own
# default is to wait for ever: a migration at a master's start would hang without a word.
LOCK_TIMEOUT_SECONDS = 60
# SQLSTATE lock_not_available: "canceling statement due to lock timeout".
LOCK_NOT_AVAILABLE = "55P03"


class DatabaseBusyError(HpcdetError):
    """A schema change or restore gave up waiting for tables another session holds."""

    def __init__(self, what: str, sessions: list[str]) -> None:
        holders = "; ".join(sessions) if sessions else "none is connected any more"
        super().__init__(
            f"{what} waited {LOCK_TIMEOUT_SECONDS} s for tables other sessions hold, and "
            f"changed nothing: stop the master (and whatever else uses the database) and "
            f"run it again. Other sessions: {holders}")


def migrate(url: str) -> None:
    """Bring the database at ``url`` to the newest schema (Alembic ``upgrade head``);
    :class:`SchemaTooNewError` when a newer hpcdet wrote it, :class:`DatabaseBusyError`
    when another session holds a table it must change (nothing is changed then)."""
    if url.startswith("sqlite"):
        _ensure_sqlite_dir(url)
    current = schema_revision(url)
    if current == HEAD_REVISION:
        return
    if current is not None and current not in known_revisions():
        raise SchemaTooNewError(current)
    from alembic import command

    try:
        command.upgrade(alembic_config(url), "head")
    except OperationalError as exc:
        if getattr(exc.orig, "pgcode", None) != LOCK_NOT_AVAILABLE:
            raise
        raise DatabaseBusyError("the schema upgrade", other_sessions(url)) from None


def other_sessions(url: str) -> list[str]:
    """The other sessions connected to the PostgreSQL database at ``url``, one line each
    (who, from where, which program, doing what since when); empty when none or unreadable."""
    query = text(
        "SELECT pid, usename, application_name, client_addr, state, "
        "date_trunc('second', now() - COALESCE(xact_start, backend_start)) AS age "
        "FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() AND backend_type = 'client backend' ORDER BY pid")
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(query).all()
    except SQLAlchemyError:
        return []
    finally:
        engine.dispose()
    return [f"pid {r.pid} ({r.usename}, {r.application_name or 'no program name'}, "
            f"{r.client_addr or 'local socket'}): {r.state or 'unknown'} for {r.age}"
            for r in rows]


def alembic_config(url: str) -> Any:
    """Alembic's configuration for hpcdet's migrations against ``url``."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def known_revisions() -> list[str]:
    """Every revision this code has a migration for, oldest first (read from the files'
    names, ``NNNN_message.py``, without importing Alembic)."""
    return sorted(p.name.split("_", 1)[0] for p in (MIGRATIONS_DIR / "versions").glob("*.py"))


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
