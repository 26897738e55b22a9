"""Fast, durable metric ingestion with group commit.

Trials report metrics far more often than anything else reaches the master, so this path
skips the ORM. Request threads validate their batch and hand the rows to one writer thread
per process, which writes everything waiting in one transaction (``COPY`` on PostgreSQL,
one multi-row INSERT on SQLite), commits, and only then releases the requests: an answer of
200 still means the rows are stored, while the per-statement and per-commit costs are shared
by every request that arrived meanwhile.
"""

from __future__ import annotations

import io
import threading
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError

from hpcdet.master.models import Metric, utcnow

Report = tuple[int, dict[str, float]]
WRITE_TIMEOUT = 60.0


@dataclass
class _Pending:
    trial_id: int
    group: str
    reports: Sequence[Report]
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class MetricWriter:
    """Writes metric batches for many concurrent requests in shared transactions."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._waiting: list[_Pending] = []
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._tokens: dict[int, str] = {}

    def token_of(self, trial_id: int) -> str | None:
        """The trial's token (cached: tokens never change); None if there is no such trial."""
        token = self._tokens.get(trial_id)
        if token is None:
            with self._engine.connect() as conn:
                token = conn.execute(text("SELECT token FROM trials WHERE id = :id"),
                                     {"id": trial_id}).scalar()
            if token is not None:
                self._tokens[trial_id] = token
        return token

    def write(self, trial_id: int, group: str, reports: Sequence[Report]) -> int:
        """Store ``reports``; return once they are committed. Returns the row count."""
        pending = _Pending(trial_id, group, reports)
        with self._wake:
            self._ensure_thread()
            self._waiting.append(pending)
            self._wake.notify()
        if not pending.done.wait(WRITE_TIMEOUT):
            raise TimeoutError("the metric writer did not commit in time")
        if pending.error is not None:
            raise pending.error
        return sum(len(metrics) for _, metrics in reports)

    def _ensure_thread(self) -> None:
        # Started lazily, in the process that serves requests (gunicorn forks workers).
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="hpcdet-metric-writer",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._waiting:
                    self._wake.wait()
                batch, self._waiting = self._waiting, []
            self._flush(batch)

    def _flush(self, batch: list[_Pending]) -> None:
        try:
            self._write_with_retry(batch)
        except Exception as exc:  # every request of the batch learns it failed
            for pending in batch:
                pending.error = exc
        finally:
            for pending in batch:
                pending.done.set()

    def _write_with_retry(self, batch: list[_Pending]) -> None:
        # Writers of two worker processes may update the same trials' progress in different
        # orders; PostgreSQL then aborts one of them as a deadlock. Once more is enough.
        for attempt in (1, 2):
            try:
                with self._engine.begin() as conn:
                    _insert_rows(conn, batch)
                    _advance_steps(conn, batch)
                return
            except OperationalError as exc:
                if attempt == 2 or "deadlock" not in str(exc).lower():
                    raise


def _insert_rows(conn: Connection, batch: list[_Pending]) -> None:
    now = utcnow()
    if conn.dialect.name == "postgresql":
        _copy_rows(conn, batch, now.isoformat())
        return
    rows = [{"trial_id": p.trial_id, "group": p.group, "steps_completed": steps, "name": name,
             "value": value, "reported_at": now}
            for p in batch for steps, metrics in p.reports for name, value in metrics.items()]
    if rows:
        conn.execute(insert(Metric), rows)


def _copy_rows(conn: Connection, batch: list[_Pending], now: str) -> None:
    buffer = io.StringIO()
    for p in batch:
        prefix = f"{p.trial_id}\t{p.group}\t"
        for steps, metrics in p.reports:
            for name, value in metrics.items():
                buffer.write(f"{prefix}{steps}\t{_copy_escape(name)}\t{value!r}\t{now}\n")
    buffer.seek(0)
    cursor: Any = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    cursor.copy_expert('COPY metrics (trial_id, "group", steps_completed, name, value, '
                       "reported_at) FROM STDIN", buffer)
    cursor.close()


def _copy_escape(value: str) -> str:
    # COPY's text format: backslash, tab, newline and carriage return must be escaped.
    return (value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
            .replace("\r", "\\r"))


def _advance_steps(conn: Connection, batch: list[_Pending]) -> None:
    latest: dict[int, int] = defaultdict(int)
    for p in batch:
        for steps, _ in p.reports:
            latest[p.trial_id] = max(latest[p.trial_id], steps)
    # Only ever forward: a retried or reordered request must not move progress back.
    if conn.dialect.name == "postgresql":
        # One statement for every trial of the batch (an executemany would be one round
        # trip per trial).
        from psycopg2.extras import execute_values

        cursor: Any = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        execute_values(cursor, "UPDATE trials AS t SET steps_completed = v.s FROM (VALUES %s) "
                       "AS v(id, s) WHERE t.id = v.id AND t.steps_completed < v.s",
                       sorted(latest.items()), page_size=10_000)
        cursor.close()
        return
    conn.execute(text("UPDATE trials SET steps_completed = :s WHERE id = :id "
                      "AND steps_completed < :s"),
                 [{"id": trial_id, "s": steps} for trial_id, steps in sorted(latest.items())])
