"""SQLite: a consistent copy through the online backup API while the master runs, and a
restore that builds the new file beside the database and renames it into place."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.engine import make_url

from hpcdet.master.backups.manifest import BackupError, private_temp, publish, written_whole

# Pages copied per step of a restore (its source, a backup file, has no writers): a progress
# line per step. A backup of the live database copies in ONE step instead: SQLite restarts a
# stepped copy whenever another connection writes the source, so under the master's steady
# metric writes it might never end; one step is one read transaction, which in WAL mode the
# master's writers do not wait for.
PAGES_PER_STEP = 4096
ALL_PAGES = -1

Progress = Callable[[int, int], None]  # (pages copied, pages in all)


def sqlite_path(url: str) -> Path:
    """The database file of a ``sqlite:///PATH`` URL."""
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        raise BackupError(f"db url {url!r}: not a SQLite file (an in-memory database has "
                          "nothing to back up)")
    return Path(database).expanduser()


def backup_sqlite(source: Path, target: Path, progress: Progress) -> str:
    """Copy ``source`` into ``target`` (0600), consistent as of the copy's last step; return
    the copy's schema revision."""
    if not source.is_file():
        raise BackupError(f"{source}: no such database file")
    with written_whole(target) as temp:
        _copy(source, temp, progress, ALL_PAGES)
        return read_revision(temp)


def _copy(source: Path, target: Path, progress: Progress,
          pages: int = PAGES_PER_STEP) -> None:
    """The backup API's copy (readers and writers of ``source`` go on meanwhile); the copy
    leaves WAL mode so that it is one self-contained file."""
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst, pages=pages,
                   progress=lambda _status, remaining, total: progress(total - remaining, total))
        dst.execute("PRAGMA journal_mode=DELETE")
        if dst.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            raise BackupError(f"{source}: the copy fails SQLite's quick_check")
    except sqlite3.Error as exc:
        raise BackupError(f"{source}: cannot back up: {exc}") from None
    finally:
        dst.close()
        src.close()


def read_revision(path: Path) -> str:
    """The schema revision recorded in the SQLite file at ``path``."""
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise BackupError(f"{path}: not an hpcdet database ({exc})") from None
    if row is None:
        raise BackupError(f"{path}: records no schema revision")
    return str(row[0])


def sqlite_has_tables(path: Path) -> bool:
    """Whether the database at ``path`` exists and holds any table."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = connection.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
        return int(tables) > 0
    finally:
        connection.close()


def restore_sqlite(backup: Path, target: Path, progress: Progress) -> Path | None:
    """Replace ``target`` by a copy of ``backup``: built beside it, then renamed over it, so
    the database is the old one or the restored one, never half of each. The old file stays
    as ``NAME.pre-restore`` (returned), if there was one."""
    temp = private_temp(target)
    try:
        _copy(backup, temp, progress)
        _wal_mode(temp)
        if not target.exists():
            publish(temp, target)
            return None
        aside = _set_aside(target)
        publish(temp, target)
        return aside
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()


def _wal_mode(path: Path) -> None:
    """Put the restored file in WAL mode, as the master runs it."""
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
    finally:
        connection.close()


def _set_aside(target: Path) -> Path:
    """Fold the old database's WAL into it and keep it as ``NAME.pre-restore`` (a hard link,
    so ``target`` is never missing); a leftover ``-wal`` would be replayed into the new file."""
    connection = sqlite3.connect(target, timeout=30)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.execute("PRAGMA journal_mode=DELETE")
    except sqlite3.Error as exc:
        raise BackupError(f"{target}: cannot close the old database's journal ({exc}); is the "
                          "master still running? Stop it before a restore") from None
    finally:
        connection.close()
    aside = target.with_name(target.name + ".pre-restore")
    with contextlib.suppress(FileNotFoundError):
        aside.unlink()
    os.link(target, aside)
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            target.with_name(target.name + suffix).unlink()
    return aside
