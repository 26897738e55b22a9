"""The statements of the metric writer's transaction (:mod:`hpcdet.master.reports.ingest`):
PostgreSQL's (COPY, one round trip per step besides) and SQLite's, on the driver's cursor."""

from __future__ import annotations

import functools
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from hpcdet.master.models import Metric, utcnow

Execution = tuple[int, int]  # (run_id, requeue): compared lexicographically
# One new metrics report: (trial_id, group, steps, metrics, run_id, requeue, archived).
Row = tuple[int, str, int, Mapping[str, float], int, int, bool]


@dataclass(frozen=True, order=True)
class StreamKey:
    """One reporter: a rank of one execution (run, Slurm requeue) of a trial."""

    trial_id: int
    run_id: int
    requeue: int
    rank: int

    @property
    def execution(self) -> Execution:
        return (self.run_id, self.requeue)


class CarefulPath(Exception):
    """The fast path met a resend, a new or a stale execution: roll back, redo it carefully."""


class Postgres:
    """The hot path's statements on PostgreSQL: COPY, and one round trip per step besides."""

    def __init__(self, conn: Connection) -> None:
        self._cursor: Any = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]

    def claim(self, keys: list[StreamKey], known: set[StreamKey]) -> tuple[
            set[StreamKey], list[tuple[int, int, int, int, int]]]:
        """Create the unknown streams; lock the batch's (all of a trial's when one is new).

        The rows are read by a second statement, after the locks: under READ COMMITTED it
        sees a newer execution whose first request committed while this one waited.
        """
        created = self._create([k for k in keys if k not in known])
        rows = self._lock_and_read(keys, created)
        present = {StreamKey(*row[:4]) for row in rows}
        if not present.issuperset(keys):  # known here, but gone (its trial was deleted)
            created |= self._create([k for k in keys if k not in present])
            rows = self._lock_and_read(keys, created)
        return created, rows

    def claim_fast(self, spans: dict[StreamKey, tuple[int, int]],
                   progress: list[tuple[int, int]]) -> list[tuple[int, int, int, int, int]]:
        """The common case in one round trip: every stream's batch follows its ``last_seq``.

        Each stream's ``last_seq`` moves to the batch's highest seq only if it is below the
        lowest (the UPDATE takes the row's lock, as the careful path's SELECT .. FOR UPDATE
        does), progress moves, then a statement of its own reads the trials' streams, and
        which of them this transaction updated. Anything else (a stream not updated: a
        resend; or unknown), and the caller starts over on the careful path.
        """
        statements = []
        if spans:
            statements.append(
                b"UPDATE report_streams AS s SET last_seq = v.hi FROM (VALUES " + self._values(
                    "(%d,%d,%d,%d,%d,%d)", [(*_key(k), low, high)
                                            for k, (low, high) in sorted(spans.items())])
                + b") AS v(t, r, q, k, lo, hi) WHERE s.trial_id = v.t AND s.run_id = v.r "
                b"AND s.requeue = v.q AND s.rank = v.k AND s.last_seq < v.lo")
        if progress:
            statements.append(self._progress_statement(progress))
        if spans:
            statements.append(
                b"SELECT trial_id, run_id, requeue, rank, last_seq, "
                b"xmin = pg_current_xact_id()::xid FROM report_streams WHERE trial_id IN ("
                + self._ids({k.trial_id for k in spans}) + b")")
        if not statements:
            return []
        self._cursor.execute(b"; ".join(statements))
        if not spans:
            return []
        rows = self._cursor.fetchall()
        mine = {StreamKey(*row[:4]) for row in rows if row[5]}
        if not mine.issuperset(spans):
            raise CarefulPath
        return [tuple(row[:5]) for row in rows]

    def _create(self, keys: list[StreamKey]) -> set[StreamKey]:
        if not keys:
            return set()
        from psycopg2.extras import execute_values

        now = utcnow()
        return {StreamKey(*row) for row in execute_values(
            self._cursor, "INSERT INTO report_streams (trial_id, run_id, requeue, rank, "
            "last_seq, created_at) VALUES %s ON CONFLICT DO NOTHING "
            "RETURNING trial_id, run_id, requeue, rank",
            [(k.trial_id, k.run_id, k.requeue, k.rank, -1, now) for k in keys], fetch=True)}

    def _lock_and_read(self, keys: list[StreamKey],
                       created: set[StreamKey]) -> list[tuple[int, int, int, int, int]]:
        where = b"(trial_id, run_id, requeue, rank) IN (" + self._values(
            "(%d,%d,%d,%d)", [(k.trial_id, k.run_id, k.requeue, k.rank) for k in keys]) + b")"
        if created:
            where += b" OR trial_id IN (" + self._ids({k.trial_id for k in created}) + b")"
        read = (b"SELECT trial_id, run_id, requeue, rank, last_seq FROM report_streams "
                b"WHERE trial_id IN (" + self._ids({k.trial_id for k in keys}) + b")")
        self._cursor.execute(b"SELECT 1 FROM report_streams WHERE " + where + b" ORDER BY "
                             b"trial_id, run_id, requeue, rank FOR UPDATE; " + read)
        rows: list[tuple[int, int, int, int, int]] = self._cursor.fetchall()
        return rows

    def insert_rows(self, rows: list[Row]) -> None:
        if not rows:
            return
        now = utcnow().isoformat()
        buffer = io.StringIO()
        for trial_id, group, steps, metrics, run_id, requeue, archived in rows:
            prefix = f"{trial_id}\t{group}\t{steps}\t"
            suffix = f"\t{run_id}\t{requeue}\t{'t' if archived else 'f'}\t{now}\n"
            buffer.writelines(f"{prefix}{_copy_escape(name)}\t{value!r}{suffix}"
                              for name, value in metrics.items())
        buffer.seek(0)
        self._cursor.copy_expert('COPY metrics (trial_id, "group", steps_completed, name, '
                                 "value, run_id, requeue, archived, reported_at) FROM STDIN",
                                 buffer)

    def finish(self, streams: list[tuple[int, int, int, int, int]],
               progress: list[tuple[int, int]]) -> None:
        """Move the streams' ``last_seq`` and the trials' progress: one round trip."""
        statements = []
        if streams:
            statements.append(b"UPDATE report_streams AS s SET last_seq = v.s FROM (VALUES "
                              + self._values("(%d,%d,%d,%d,%d)", streams) + b") AS "
                              b"v(t, r, q, k, s) WHERE s.trial_id = v.t AND s.run_id = v.r "
                              b"AND s.requeue = v.q AND s.rank = v.k")
        if progress:
            statements.append(self._progress_statement(progress))
        if statements:
            self._cursor.execute(b"; ".join(statements))

    def close(self) -> None:
        self._cursor.close()

    def _progress_statement(self, progress: list[tuple[int, int]]) -> bytes:
        # Only ever forward: a retried or reordered request must not move it back.
        return (b"UPDATE trials AS t SET steps_completed = v.s FROM (VALUES "
                + self._values("(%d,%d)", progress) + b") AS v(id, s) "
                b"WHERE t.id = v.id AND t.steps_completed < v.s")

    @staticmethod
    def _ids(ids: set[int]) -> bytes:
        return ",".join(str(int(i)) for i in sorted(ids)).encode()

    @staticmethod
    def _values(template: str, rows: Sequence[tuple[int, ...]]) -> bytes:
        # Only integers (ids, counters): formatting them is safe, and cheaper than mogrify.
        return ",".join(template % tuple(map(int, row)) for row in rows).encode()


class Sqlite:
    """The same on SQLite, where the first statement must take the database's write lock."""

    def __init__(self, conn: Connection) -> None:
        self._cursor: Any = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        self._now = _sqlite_time(conn)

    def claim(self, keys: list[StreamKey], known: set[StreamKey]) -> tuple[
            set[StreamKey], list[tuple[int, int, int, int, int]]]:
        """INSERT OR IGNORE every stream first (the write lock, before any read); the rows
        this transaction created carry its own ``created_at``."""
        self._cursor.executemany(
            "INSERT OR IGNORE INTO report_streams (trial_id, run_id, requeue, rank, last_seq, "
            "created_at) VALUES (?, ?, ?, ?, -1, ?)",
            [(k.trial_id, k.run_id, k.requeue, k.rank, self._now) for k in keys])
        trials = sorted({k.trial_id for k in keys})
        self._cursor.execute(
            "SELECT trial_id, run_id, requeue, rank, last_seq, created_at FROM report_streams "
            f"WHERE trial_id IN ({', '.join('?' * len(trials))})", trials)
        rows = self._cursor.fetchall()
        wanted = set(keys)
        created = {key for *row, _, at in rows
                   if at == self._now and (key := StreamKey(*row)) in wanted}
        return created, [tuple(row[:5]) for row in rows]

    def insert_rows(self, rows: list[Row]) -> None:
        if rows:
            self._cursor.executemany(
                'INSERT INTO metrics (trial_id, "group", steps_completed, name, value, run_id, '
                "requeue, archived, reported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(trial_id, group, steps, name, value, run_id, requeue, archived, self._now)
                 for trial_id, group, steps, metrics, run_id, requeue, archived in rows
                 for name, value in metrics.items()])

    def finish(self, streams: list[tuple[int, int, int, int, int]],
               progress: list[tuple[int, int]]) -> None:
        self._cursor.executemany(
            "UPDATE report_streams SET last_seq = ? WHERE trial_id = ? AND run_id = ? AND "
            "requeue = ? AND rank = ?", [(s, t, r, q, k) for t, r, q, k, s in streams])
        self._cursor.executemany(
            "UPDATE trials SET steps_completed = ? WHERE id = ? AND steps_completed < ?",
            [(steps, trial_id, steps) for trial_id, steps in progress])

    def close(self) -> None:
        self._cursor.close()


def _key(key: StreamKey) -> tuple[int, int, int, int]:
    return (key.trial_id, key.run_id, key.requeue, key.rank)


def _sqlite_time(conn: Connection) -> Any:
    """Now, as SQLAlchemy stores a DateTime in SQLite (so the ORM reads it back)."""
    column_type = Metric.__table__.c.reported_at.type
    process = column_type.dialect_impl(conn.dialect).bind_processor(conn.dialect)
    now = utcnow()
    return process(now) if process else now


@functools.lru_cache(maxsize=4096)  # a trial reports the same few names again and again
def _copy_escape(value: str) -> str:
    # COPY's text format: backslash, tab, newline and carriage return must be escaped.
    return (value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
            .replace("\r", "\\r"))
