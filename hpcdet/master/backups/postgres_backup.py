"""PostgreSQL: ``pg_dump --format=custom`` and a restore through ``pg_restore | psql
--single-transaction``. Every connection setting goes in the libpq environment (PGHOST,
PGPASSWORD, ...), so no password is ever on a command line; argv lists, no shell."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from hpcdet.master import db
from hpcdet.master.backups.manifest import BackupError, written_whole

# URL query parameters libpq reads from the environment; any other is refused by name.
_QUERY_ENV = {"host": "PGHOST", "port": "PGPORT", "sslmode": "PGSSLMODE",
              "sslrootcert": "PGSSLROOTCERT", "sslcert": "PGSSLCERT", "sslkey": "PGSSLKEY",
              "application_name": "PGAPPNAME", "connect_timeout": "PGCONNECT_TIMEOUT",
              "target_session_attrs": "PGTARGETSESSIONATTRS"}
_REVISION = re.compile(r"^COPY \S*alembic_version .*FROM stdin;\n([^\n\\]+)\n", re.MULTILINE)


def libpq_env(url: str) -> dict[str, str]:
    """The environment that points libpq's tools at the database of a SQLAlchemy URL (its
    parts win over the same PG* variables of the environment)."""
    parsed = make_url(url)
    # What the url leaves out comes from the environment, as for the master's own driver
    # (libpq reads PGPASSFILE, PGSSLMODE, ... there too).
    env = dict(os.environ)
    fields = {"PGHOST": parsed.host, "PGPORT": parsed.port, "PGUSER": parsed.username,
              "PGPASSWORD": parsed.password, "PGDATABASE": parsed.database}
    env.update({key: str(value) for key, value in fields.items() if value is not None})
    for name, value in parsed.query.items():
        if name not in _QUERY_ENV:
            raise BackupError(f"db url: query parameter {name!r} is not passed to pg_dump "
                              f"(known: {', '.join(sorted(_QUERY_ENV))})")
        env[_QUERY_ENV[name]] = value if isinstance(value, str) else value[-1]
    if "PGDATABASE" not in env:
        raise BackupError("db url: names no database")
    return env


def tool(name: str) -> str:
    """The path of a PostgreSQL client program, or a message saying what to install."""
    path = shutil.which(name)
    if path is None:
        raise BackupError(f"{name} not found on PATH: install the PostgreSQL client of the "
                          "server's major version or newer (Debian: postgresql-client)")
    return path


def run_tool(argv: list[str], env: Mapping[str, str], what: str) -> str:
    """Run a client program; its stderr is the message when it fails."""
    result = subprocess.run(argv, env=dict(env), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        detail = result.stderr.strip() or result.stdout.strip() or "no output"
        raise BackupError(f"{what}: {Path(argv[0]).name} exited with {result.returncode}: "
                          f"{detail}")
    return result.stdout


def backup_postgres(url: str, target: Path) -> str:
    """Dump the database into ``target`` (custom format, 0600; one snapshot, consistent while
    the master writes); return the dump's schema revision."""
    env = libpq_env(url)
    with written_whole(target) as temp:
        run_tool([tool("pg_dump"), "--format=custom", "--no-owner", "--no-privileges",
                  f"--file={temp}"], env, f"pg_dump of {env['PGDATABASE']}")
        return dump_revision(temp)


def dump_revision(dump: Path) -> str:
    """The schema revision inside a custom-format dump (its alembic_version row)."""
    script = run_tool([tool("pg_restore"), "--data-only", "--table=alembic_version",
                       "--file=-", str(dump)], {"PATH": os.environ.get("PATH", "")},
                      f"pg_restore --list of {dump}")
    match = _REVISION.search(script)
    if match is None:
        raise BackupError(f"{dump}: the dump records no schema revision")
    return match.group(1).strip()


def postgres_tables(url: str) -> list[str]:
    """The tables in the database's current schema (empty: a database to restore into)."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(text(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"))
            return sorted(str(row[0]) for row in rows)
    except SQLAlchemyError as exc:
        raise BackupError(f"cannot read the database: {exc.__class__.__name__}: "
                          f"{str(exc).splitlines()[0]}") from None
    finally:
        engine.dispose()


def restore_postgres(dump: Path, url: str, drop: list[str]) -> None:
    """Restore ``dump`` into the database in ONE transaction: the tables in ``drop`` (the
    old contents, with --force) are dropped and the dump's are created and filled, or,
    on any error, nothing changes."""
    env = libpq_env(url)
    prefix = f"SET LOCAL lock_timeout = '{db.LOCK_TIMEOUT_SECONDS}s';\n"
    prefix += "".join(f'DROP TABLE IF EXISTS "{_ident(name)}" CASCADE;\n' for name in drop)
    restore = subprocess.Popen(
        [tool("pg_restore"), "--no-owner", "--no-privileges", "--file=-", str(dump)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    psql = subprocess.Popen(
        [tool("psql"), "--no-psqlrc", "--quiet", "--single-transaction",
         "--set=ON_ERROR_STOP=1", "--file=-"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert restore.stdout is not None and restore.stderr is not None
    assert psql.stdin is not None and psql.stderr is not None
    with restore, psql:  # both are waited for, whatever happens
        fed = _feed(psql.stdin, prefix.encode(), restore.stdout)
        restore_err = restore.stderr.read()
        restore.wait()
        if restore.returncode != 0 or not fed:
            # Killed before it reads the end of its input, psql never sends the COMMIT of
            # --single-transaction: the server rolls the whole restore back.
            psql.kill()
        with contextlib.suppress(BrokenPipeError):
            psql.stdin.close()  # the end of the input: psql commits
        psql_err = psql.stderr.read()
        psql.wait()
    if restore.returncode != 0:
        raise BackupError(f"pg_restore of {dump} exited with {restore.returncode}: "
                          f"{restore_err.decode(errors='replace').strip()} (nothing restored)")
    if psql.returncode != 0 and b"lock timeout" in psql_err:
        raise BackupError(str(db.DatabaseBusyError("the restore", db.other_sessions(url))))
    if psql.returncode != 0:
        raise BackupError(f"psql exited with {psql.returncode}: "
                          f"{psql_err.decode(errors='replace').strip()} (nothing restored)")


def _feed(sink: IO[bytes], prefix: bytes, source: IO[bytes]) -> bool:
    """Write ``prefix`` then all of ``source`` into ``sink`` (left open); False when the
    reader stopped early (psql stopped at an error: its stderr says which)."""
    try:
        sink.write(prefix)
        shutil.copyfileobj(source, sink)
        sink.flush()
    except BrokenPipeError:
        return False
    return True


def _ident(name: str) -> str:
    """A name for inside double quotes (a quote doubled, as SQL escapes it)."""
    return name.replace('"', '""')
