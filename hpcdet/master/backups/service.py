"""``det-master backup``/``restore`` for either database: the checks around the copy (the
schema revision, an existing target, a non-empty database) and the manifest."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpcdet import __version__
from hpcdet.master.backups.checkpoint_audit import CheckpointAudit, audit_checkpoints
from hpcdet.master.backups.manifest import (
    BackupError,
    make_manifest,
    manifest_path,
    read_manifest,
    write_manifest,
)
from hpcdet.master.backups.postgres_backup import (
    backup_postgres,
    dump_revision,
    postgres_tables,
    restore_postgres,
)
from hpcdet.master.backups.sqlite_backup import (
    backup_sqlite,
    read_revision,
    restore_sqlite,
    sqlite_has_tables,
    sqlite_path,
)
from hpcdet.master.db import (
    HEAD_REVISION,
    known_revisions,
    make_engine,
    make_session_factory,
    session_scope,
)
from hpcdet.master.settings.core import MasterSettings

Say = Callable[[str], None]


@dataclass
class Outcome:
    """What a backup or restore did, for the summary line and ``--json``."""

    action: str
    path: str
    database: str
    schema_revision: str
    seconds: float
    size: int
    details: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` answer."""
        return {"action": self.action, "path": self.path, "database": self.database,
                "schema_revision": self.schema_revision, "seconds": round(self.seconds, 3),
                "size": self.size, "hpcdet_version": __version__, **self.details}


def backup(settings: MasterSettings, path: Path, *, force: bool, say: Say) -> Outcome:
    """Back the master's database up into ``path`` (and ``path.manifest.json``)."""
    kind = _kind(settings)
    if (path.exists() or manifest_path(path).exists()) and not force:
        raise BackupError(f"{path}: already exists (use --force to replace it)")
    started = time.monotonic()
    if kind == "sqlite":
        source = sqlite_path(settings.db_url)
        say(f"backing up {source} (SQLite online backup)")
        revision = backup_sqlite(source, path, _pages(say))
    else:
        say("backing up the PostgreSQL database (pg_dump --format=custom)")
        revision = backup_postgres(settings.db_url, path)
    manifest = make_manifest(path, kind, revision, __version__)
    write_manifest(path, manifest)
    return Outcome("backup", str(path), kind, revision, time.monotonic() - started,
                   manifest.size, {"manifest": str(manifest_path(path))})


def restore(settings: MasterSettings, path: Path, *, force: bool, say: Say) -> Outcome:
    """Restore the backup at ``path`` into the master's database, then report the
    checkpoint index against the disk."""
    kind = _kind(settings)
    if not path.is_file():
        raise BackupError(f"{path}: no such backup file")
    manifest = read_manifest(path)
    if manifest.database != kind:
        raise BackupError(f"{path}: a {manifest.database} backup; the master's database is "
                          f"{kind}")
    revision = read_revision(path) if kind == "sqlite" else dump_revision(path)
    if revision not in known_revisions():
        raise BackupError(f"{path}: its schema revision {revision} is newer than this hpcdet "
                          f"{__version__} knows (newest {HEAD_REVISION}); restore it with the "
                          f"hpcdet that wrote it ({manifest.hpcdet_version})")
    started = time.monotonic()
    details: dict[str, Any] = {"backup_created_at": manifest.created_at,
                               "backup_hpcdet_version": manifest.hpcdet_version}
    if kind == "sqlite":
        target = sqlite_path(settings.db_url)
        if sqlite_has_tables(target) and not force:
            raise BackupError(f"{target}: the database is not empty (use --force to replace "
                              "it; the old file is kept as NAME.pre-restore)")
        say(f"restoring {path} into {target}")
        aside = restore_sqlite(path, target, _pages(say))
        details["previous_database"] = str(aside) if aside else None
    else:
        tables = postgres_tables(settings.db_url)
        if tables and not force:
            raise BackupError(f"the PostgreSQL database is not empty: it holds {len(tables)} "
                              "tables (use --force to drop them and restore, in one "
                              "transaction)")
        say(f"restoring {path} (pg_restore | psql --single-transaction)")
        restore_postgres(path, settings.db_url, tables)
        details["dropped_tables"] = len(tables)
    if revision == HEAD_REVISION:
        audit = _audit(settings)
        details["checkpoints"] = audit.as_json()
        say(audit.summary())
    else:  # the models read only the newest schema: the master migrates it at its start
        details["checkpoints"] = None
        say(f"checkpoints not checked: the backup's schema {revision} is older than "
            f"{HEAD_REVISION}; run det-master checkpoints reconcile after the master "
            "migrated it")
    return Outcome("restore", str(path), kind, revision, time.monotonic() - started,
                   manifest.size, details)


def reconcile_checkpoints(settings: MasterSettings) -> CheckpointAudit:
    """The checkpoint report on its own (``det-master checkpoints reconcile``)."""
    return _audit(settings)


def _audit(settings: MasterSettings) -> CheckpointAudit:
    """Audit the checkpoints of the database the settings name."""
    engine = make_engine(settings.db_url)
    try:
        with session_scope(make_session_factory(engine)) as session:
            return audit_checkpoints(session, settings)
    finally:
        engine.dispose()


def _kind(settings: MasterSettings) -> str:
    """``sqlite`` or ``postgresql``; any other database is refused by name."""
    kind = settings.database_kind
    if kind not in ("sqlite", "postgresql"):
        raise BackupError(f"db url: database {kind!r} cannot be backed up (sqlite, postgresql)")
    return kind


def _pages(say: Say) -> Callable[[int, int], None]:
    """A progress callback printing the copied share of the pages, at most once per 10%."""
    shown = [-1]

    def progress(done: int, total: int) -> None:
        tenth = 10 * done // max(total, 1)
        if tenth != shown[0]:
            shown[0] = tenth
            say(f"  {done:,} of {total:,} pages ({10 * tenth}%)")

    return progress
