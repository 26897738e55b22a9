"""Fast, durable report ingestion with group commit, each report stored exactly once.

Trials report metrics far more often than anything else reaches the master, so this path
skips the ORM. Request threads validate their batch and hand it to one writer thread per
process, which applies everything waiting in one transaction (``COPY`` on PostgreSQL, one
``executemany`` INSERT on SQLite), commits, and only then releases the requests: an answer of 200
still means the reports are stored, while the per-statement and per-commit costs are shared
by every request that arrived meanwhile.

Exactly once. A reporter (one rank of one *execution* of a trial: its run and Slurm requeue
count) numbers its reports ``seq`` 0, 1, 2, ... and resends a batch until it is answered.
In the writer's transaction each stream's ``report_streams`` row is created if missing
(INSERT .. ON CONFLICT DO NOTHING) and locked (SELECT .. FOR UPDATE on PostgreSQL; on
SQLite that first INSERT takes the database's write lock), reports with ``seq <=
last_seq`` are dropped as duplicates and ``last_seq`` moves to the highest stored. Two
processes handed the same batch therefore store it once. On PostgreSQL the common case
(each stream's batch follows its ``last_seq``) takes a shorter path, one conditional UPDATE
that moves and locks ``last_seq`` (:meth:`_Postgres.claim_fast`); anything else rolls it
back and takes the careful one. Validation progress, searcher
events and checkpoint registrations (:mod:`hpcdet.master.reports.report_effects`) commit in the
same transaction as the rows, so a master killed at any moment neither loses nor repeats
one. Batches without a stream (old clients) are stored as before, without dedup, as run 0.

Executions. The first stream of a newer execution rolls the trial back to the checkpoint
that execution resumed from: rows of earlier executions after that step are archived. A
batch from an execution older than the trial's newest is refused (:class:`StaleRunError`),
unless it carries the resume points of the newer executions (spooled reports collected
after the fact, :mod:`hpcdet.master.reports.spool_ingest`): then what the newer execution rolled
back is stored archived.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from hpcdet.master.monitoring import instruments
from hpcdet.master.reports import report_effects
from hpcdet.master.reports.ingest_sql import CarefulPath as _CarefulPath
from hpcdet.master.reports.ingest_sql import Execution, StreamKey
from hpcdet.master.reports.ingest_sql import Postgres as _Postgres
from hpcdet.master.reports.ingest_sql import Row as _Row
from hpcdet.master.reports.ingest_sql import Sqlite as _Sqlite
from hpcdet.master.reports.report_effects import Report

__all__ = ["Applied", "Execution", "MetricWriter", "Report", "ReportBatch", "StaleRunError",
           "Stream", "StreamKey"]

WRITE_TIMEOUT = 60.0
# A trial's token hash is re-read after this long (a resubmission gets a new token).
TOKEN_CACHE_SECONDS = 30.0
CHECKPOINT = report_effects.CHECKPOINT
_DEADLOCK_ATTEMPTS = 3


@dataclass(frozen=True)
class Stream:
    """A batch's stream and where its execution resumed from.

    ``resume_points`` (spooled reports only) maps executions to the ``steps_completed`` they
    resumed from; with it, reports of an execution that is no longer the newest are stored,
    archived past the earliest point a newer execution resumed from, instead of refused.
    """

    key: StreamKey
    resumed_steps: int | None = 0  # None: unknown, so the stream rolls nothing back
    resume_points: Mapping[Execution, int] | None = None


@dataclass(frozen=True)
class ReportBatch:
    """Reports of one trial, in ``seq`` order when ``stream`` is set."""

    trial_id: int
    reports: Sequence[Report]
    stream: Stream | None = None


@dataclass
class Applied:
    """What a batch did: the reports stored (not duplicates), in order, and their effects."""

    stored: list[Report] = field(default_factory=list)
    duplicates: int = 0
    rows: int = 0
    created_checkpoints: set[str] = field(default_factory=set)


class StaleRunError(Exception):
    """The batch's execution is older than the newest execution of its trial."""

    def __init__(self, key: StreamKey, newest: Execution) -> None:
        super().__init__(
            f"trial {key.trial_id}: run {key.run_id} (requeue {key.requeue}) is stale; "
            f"run {newest[0]} (requeue {newest[1]}) has started since")
        self.key, self.newest = key, newest


@dataclass
class _Pending:
    batch: ReportBatch
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    result: Applied | None = None
    on_done: Callable[[], None] | None = None  # called in the writer's thread, after done


class MetricWriter:
    """Writes report batches for many concurrent requests in shared transactions."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._waiting: list[_Pending] = []
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._tokens: dict[int, tuple[str, float]] = {}
        # Streams known to exist: PostgreSQL skips their INSERT .. ON CONFLICT (rows are
        # only ever deleted with their trial).
        self._known: set[StreamKey] = set()

    @property
    def engine(self) -> Engine:
        return self._engine

    def token_of(self, trial_id: int, *, fresh: bool = False) -> str | None:
        """The hash of the trial's token; None if there is no such trial. Cached for
        :data:`TOKEN_CACHE_SECONDS` unless ``fresh``: each submission of the trial gets a
        new token, so a token that does not match the cached hash is checked again fresh."""
        cached = self._tokens.get(trial_id)
        if not fresh and cached is not None \
                and time.monotonic() - cached[1] < TOKEN_CACHE_SECONDS:
            return cached[0]
        with self._engine.connect() as conn:
            token = conn.execute(text("SELECT token FROM trials WHERE id = :id"),
                                 {"id": trial_id}).scalar()
        if token is not None:
            self._tokens[trial_id] = (token, time.monotonic())
        return token

    def cached_token(self, trial_id: int) -> str | None:
        """:meth:`token_of` from the cache only: None when it would read the database."""
        cached = self._tokens.get(trial_id)
        if cached is None or time.monotonic() - cached[1] >= TOKEN_CACHE_SECONDS:
            return None
        return cached[0]

    def write(self, trial_id: int, group: str, reports: Sequence[tuple[int, dict[str, float]]],
              *, stream: Stream | None = None, first_seq: int | None = None) -> Applied:
        """Store ``(steps_completed, metrics)`` reports of one group (seq ``first_seq``, +1...)."""
        seqs: Iterable[int | None] = (
            range(first_seq, first_seq + len(reports)) if first_seq is not None
            else [None] * len(reports))
        batch = ReportBatch(trial_id, [Report(group, steps, metrics, seq=seq)
                                       for (steps, metrics), seq in zip(reports, seqs,
                                                                        strict=True)], stream)
        return self.apply(batch)

    def apply(self, batch: ReportBatch) -> Applied:
        """Apply ``batch`` in the next group commit; return once it is committed.

        Raises :class:`StaleRunError` (nothing stored) for an execution that is not the newest.
        """
        pending = self._enqueue(_Pending(batch))
        if not pending.done.wait(WRITE_TIMEOUT):
            raise TimeoutError("the metric writer did not commit in time")
        return _outcome(pending)

    async def apply_async(self, batch: ReportBatch) -> Applied:
        """:meth:`apply` for a coroutine: it waits on the event loop, holding no thread."""
        loop = asyncio.get_running_loop()
        committed: asyncio.Future[None] = loop.create_future()

        def wake() -> None:  # in the writer's thread
            loop.call_soon_threadsafe(_resolve, committed)

        pending = self._enqueue(_Pending(batch, on_done=wake))
        try:
            await asyncio.wait_for(committed, WRITE_TIMEOUT)
        except TimeoutError:
            raise TimeoutError("the metric writer did not commit in time") from None
        return _outcome(pending)

    def _enqueue(self, pending: _Pending) -> _Pending:
        with self._wake:
            self._ensure_thread()
            self._waiting.append(pending)
            self._wake.notify()
        return pending

    def apply_now(self, batch: ReportBatch) -> Applied:
        """Apply ``batch`` in a transaction of its own, in the calling thread."""
        pending = _Pending(batch)
        self._flush([pending])
        return _outcome(pending)

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
        started, ok = time.monotonic(), False
        try:
            self._write_with_retry(batch)
            ok = True
        except Exception as exc:  # every request of the batch learns it failed
            for pending in batch:
                pending.error = exc
        finally:
            rows = sum(p.result.rows for p in batch if p.result is not None) if ok else 0
            instruments.observe_ingest(rows, time.monotonic() - started, ok)
            for pending in batch:
                pending.done.set()
                if pending.on_done is not None:
                    _call_quietly(pending.on_done)

    def _write_with_retry(self, batch: list[_Pending]) -> None:
        # Writers of two worker processes may lock the same trials' rows in different
        # orders; PostgreSQL then aborts one of them as a deadlock. A retry is enough.
        # SQLite (WAL) answers "database is locked" at once, without waiting, when this
        # transaction read before another process committed a write: a retry reads anew.
        # (The hot path's statements run on the driver's cursor: its errors are the
        # driver's, not SQLAlchemy's, hence the test on the message.)
        attempt, careful = 1, False
        while True:
            try:
                with self._engine.begin() as conn:
                    claimed = _apply_all(conn, batch, self._known, careful=careful)
                self._known.update(claimed)
                return
            except _CarefulPath:
                careful = True  # rolled back: once more, the careful way
            except Exception as exc:
                if attempt == _DEADLOCK_ATTEMPTS or not _retryable(exc):
                    raise
                attempt += 1


def _retryable(exc: Exception) -> bool:
    """A deadlock (PostgreSQL) or a stale SQLite snapshot: the same batch may well succeed."""
    message = str(exc).lower()
    return "deadlock" in message or "database is locked" in message


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():  # not given up on (cancelled) meanwhile
        future.set_result(None)


def _call_quietly(callback: Callable[[], None]) -> None:
    """Run a waiter's callback; one whose event loop has closed must not stop the others'."""
    try:
        callback()
    except RuntimeError:  # "Event loop is closed"
        pass


def _outcome(pending: _Pending) -> Applied:
    if pending.error is not None:
        raise pending.error
    assert pending.result is not None
    return pending.result


# ---- one transaction ------------------------------------------------------------------


@dataclass
class _Admitted:
    """A batch after dedup: its new reports, and from which step they are stored archived."""

    pending: _Pending
    new: list[Report]
    execution: Execution = (0, 0)
    archive_above: int | None = None  # stale spooled execution: rolled back past this step

    def archived(self, report: Report) -> bool:
        return self.archive_above is not None and report.steps_completed > self.archive_above


def _apply_all(conn: Connection, batch: list[_Pending], known: set[StreamKey], *,
               careful: bool = False) -> set[StreamKey]:
    """Dedup, roll back, insert rows, advance progress, apply effects; returns the streams.

    The hot path is a few hand-written statements on the driver's cursor (SQLAlchemy's
    per-statement overhead would cost more than the statements); the rare effects use Core.
    """
    sql = _Postgres(conn) if conn.dialect.name == "postgresql" else _Sqlite(conn)
    try:
        streams = _Streams.claim(sql, batch, known, careful=careful)
        admitted = []
        for pending in batch:
            pending.error, pending.result = None, None  # a retried transaction starts afresh
            try:
                admitted.append(_admit(pending, streams))
            except StaleRunError as exc:
                pending.error = exc
        if streams.fast and any(p.error for p in batch):
            raise _CarefulPath  # the fast path has moved that stale stream's last_seq
        streams.roll_back(conn)
        sql.insert_rows(list(_rows(admitted)))
        if not streams.fast:
            sql.finish(streams.saved(), _progress(admitted))
    finally:
        sql.close()
    for item in admitted:
        item.pending.result = _effects(conn, item)
    return set(streams.last_seq)


def _admit(pending: _Pending, streams: _Streams) -> _Admitted:
    """The batch's new reports (raises StaleRunError for a stale execution over HTTP)."""
    stream = pending.batch.stream
    if stream is None:
        return _Admitted(pending, list(pending.batch.reports))
    newer = streams.newer_than(stream.key)
    if newer and stream.resume_points is None:
        raise StaleRunError(stream.key, max(newer))
    new = streams.take(stream.key, pending.batch.reports)
    above = None
    if newer:
        points = stream.resume_points or {}
        above = min(points.get(execution, -1) for execution in newer)
    return _Admitted(pending, new, stream.key.execution, above)


def _effects(conn: Connection, item: _Admitted) -> Applied:
    batch = item.pending.batch
    kept = [r for r in item.new if not item.archived(r)]
    created = report_effects.apply(conn, batch.trial_id, kept,
                                   [r for r in item.new if item.archived(r)],
                                   stale=item.archive_above is not None)
    rows = sum(len(r.metrics) for r in item.new if r.group != CHECKPOINT)
    return Applied(item.new, len(batch.reports) - len(item.new), rows, created)


def _spans(batch: list[_Pending]) -> dict[StreamKey, tuple[int, int]] | None:
    """Each stream's (lowest, highest) seq in the batch; None if a stream batch has none."""
    spans: dict[StreamKey, tuple[int, int]] = {}
    for pending in batch:
        stream = pending.batch.stream
        if stream is None:
            continue
        seqs = [r.seq for r in pending.batch.reports if r.seq is not None]
        if not seqs or len(seqs) < len(pending.batch.reports):
            return None
        low, high = spans.get(stream.key, (seqs[0], seqs[0]))
        spans[stream.key] = (min(low, *seqs), max(high, *seqs))
    return spans


def _progress_of_all(batch: list[_Pending]) -> list[tuple[int, int]]:
    """:func:`_progress` before dedup (duplicates only repeat steps that are stored)."""
    return _progress([_Admitted(p, list(p.batch.reports)) for p in batch])


class _Streams:
    """The transaction's report streams: locked, their ``last_seq``, their trials' executions."""

    def __init__(self, streams: Sequence[Stream]) -> None:
        self.last_seq: dict[StreamKey, int] = {}
        self.created: dict[StreamKey, Stream] = {}
        self.executions: dict[int, set[Execution]] = defaultdict(set)
        self.fast = False  # last_seq and progress were moved by the claim itself
        self._saved: dict[StreamKey, int] = {}
        self._first = {s.key: s for s in reversed(streams)}

    @classmethod
    def claim(cls, sql: _Postgres | _Sqlite, batch: list[_Pending], known: set[StreamKey], *,
              careful: bool) -> _Streams:
        """Create missing stream rows, lock the batch's, read every stream of its trials."""
        claimed = cls([p.batch.stream for p in batch if p.batch.stream])
        keys = sorted(claimed._first)
        careful = careful or any(s.resume_points is not None for s in claimed._first.values())
        spans = None if careful or not isinstance(sql, _Postgres) else _spans(batch)
        if spans is not None and isinstance(sql, _Postgres) and set(spans) <= known:
            rows = sql.claim_fast(spans, _progress_of_all(batch))
            claimed.fast = True
        elif keys:
            created, rows = sql.claim(keys, known)
            claimed.created = {key: claimed._first[key] for key in created}
        else:
            rows = []
        wanted = set(keys)
        for trial_id, run_id, requeue, rank, last_seq in rows:
            key = StreamKey(trial_id, run_id, requeue, rank)
            claimed.executions[trial_id].add(key.execution)
            if key in wanted:
                # Fast: every seq of the batch follows last_seq, which is now the highest.
                claimed.last_seq[key] = spans[key][0] - 1 if spans and claimed.fast else last_seq
        return claimed

    def newer_than(self, key: StreamKey) -> list[Execution]:
        return [e for e in self.executions[key.trial_id] if e > key.execution]

    def take(self, key: StreamKey, reports: Sequence[Report]) -> list[Report]:
        """The reports after the stream's ``last_seq`` (in seq order); advances it."""
        last = self.last_seq[key]
        new = []
        for report in reports:
            if report.seq is None or report.seq > last:
                new.append(report)
                last = report.seq if report.seq is not None else last
        if last != self.last_seq[key]:
            self.last_seq[key] = self._saved[key] = last
        return new

    def roll_back(self, conn: Connection) -> None:
        """A newest execution's first stream archives what earlier ones reported after its start."""
        for key, stream in sorted(self.created.items()):
            if not self.newer_than(key) and stream.resumed_steps is not None:
                report_effects.roll_back(conn, key.trial_id, key.execution, stream.resumed_steps)

    def saved(self) -> list[tuple[int, int, int, int, int]]:
        """(trial_id, run_id, requeue, rank, last_seq) of the streams that moved."""
        return [(k.trial_id, k.run_id, k.requeue, k.rank, s)
                for k, s in sorted(self._saved.items())]


# ---- rows -------------------------------------------------------------------------------



def _rows(admitted: list[_Admitted]) -> Iterable[_Row]:
    for item in admitted:
        trial_id, (run_id, requeue) = item.pending.batch.trial_id, item.execution
        for r in item.new:
            if r.group != CHECKPOINT:
                yield (trial_id, r.group, r.steps_completed, r.metrics, run_id, requeue,
                       item.archived(r))


def _progress(admitted: list[_Admitted]) -> list[tuple[int, int]]:
    """(trial_id, steps_completed) each trial's new rows reach (archived ones excepted)."""
    latest: dict[int, int] = defaultdict(int)
    for item in admitted:
        trial_id = item.pending.batch.trial_id
        for r in item.new:
            if r.group != CHECKPOINT and not item.archived(r):
                latest[trial_id] = max(latest[trial_id], r.steps_completed)
    return sorted(latest.items())
