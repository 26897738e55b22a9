"""Test databases at the newest schema, copied from one migrated template per process."""

from __future__ import annotations

import uuid
from pathlib import Path


class SchemaTemplates:
    """One database migrated to the newest schema per test process, copied for each test.

    Alembic's ``upgrade head`` takes ~0.5 s a database; a copy takes ~1 ms (SQLite, the
    backup API) or ~0.1 s (PostgreSQL, ``CREATE DATABASE ... TEMPLATE``). Each xdist worker
    makes its own templates, the first time a test of its needs one.
    """

    def __init__(self, directory: Path, postgres_admin_url: str) -> None:
        self.directory = directory
        self.postgres_admin_url = postgres_admin_url  # as the postgres_url fixture uses it
        self.sqlite_path: Path | None = None
        self.postgres_template: str | None = None

    def copy_to(self, url: str) -> None:
        """Fill the fresh, empty test database at ``url`` with the migrated schema."""
        if url.startswith("sqlite"):
            self._copy_sqlite(Path(url.split("///", 1)[1]))
        else:
            self._copy_postgres(url)

    def _copy_sqlite(self, target: Path) -> None:
        import sqlite3

        if self.sqlite_path is None:
            from hpcdet.master.db import migrate

            path = self.directory / "template.sqlite"
            migrate(f"sqlite:///{path}")
            self.sqlite_path = path
        target.parent.mkdir(parents=True, exist_ok=True)
        source, copy = sqlite3.connect(self.sqlite_path), sqlite3.connect(target)
        try:
            source.backup(copy)
        finally:
            source.close()
            copy.close()

    def _copy_postgres(self, url: str) -> None:
        import sqlalchemy as sa

        name = url.rsplit("/", 1)[1]
        admin = sa.create_engine(self.postgres_admin_url, isolation_level="AUTOCOMMIT")
        try:
            if self.postgres_template is None:
                from hpcdet.master.db import migrate

                template = f"hpcdet_test_template_{uuid.uuid4().hex[:12]}"
                with admin.connect() as conn:
                    conn.execute(sa.text(f'CREATE DATABASE "{template}"'))
                migrate(f"{self.postgres_admin_url.rsplit('/', 1)[0]}/{template}")
                self.postgres_template = template
            # The test's database was made empty by postgres_url, which drops it afterwards.
            with admin.connect() as conn:
                conn.execute(sa.text(f'DROP DATABASE "{name}"'))
                conn.execute(sa.text(
                    f'CREATE DATABASE "{name}" TEMPLATE "{self.postgres_template}"'))
        finally:
            admin.dispose()

    def drop(self) -> None:
        if self.postgres_template is None:
            return
        import sqlalchemy as sa

        admin = sa.create_engine(self.postgres_admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(
                f'DROP DATABASE IF EXISTS "{self.postgres_template}" WITH (FORCE)'))
        admin.dispose()
