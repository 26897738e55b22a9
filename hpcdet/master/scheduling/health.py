"""The master's own health: can it reach the scheduler, is its database slow, does the
reconciler still cycle.

The reconciler process keeps a :class:`HealthTracker`: every scheduler call that fails or
succeeds is noted, and at the end of every cycle the record (when the scheduler started
failing, its last error in one line, how long the cycle and a database round trip took,
when the cycle completed) is stored as the ``health`` snapshot. API workers (other
processes) read that record and judge it with :func:`assess` against the clock, so a
reconciler that stopped cycling is noticed although it writes nothing any more.

Logging: the first failure (and a failure with a new message) is logged with its
traceback; while the same failure repeats, one line per cycle at most once a minute; the
recovery is logged once.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.errors import SchedulerError
from hpcdet.master.db import session_scope
from hpcdet.master.models import as_utc, utcnow
from hpcdet.master.queue.snapshots import load_snapshot, store_snapshot

log = logging.getLogger(__name__)

HEALTH = "health"
# A database round trip (one SELECT 1 and the health write) slower than this is "slow".
SLOW_DB_SECONDS = 2.0
# The reconciler "does not cycle" when its last cycle completed more than this many
# intervals ago (and at least MIN_STALE_SECONDS: a 1 s interval must not flap).
STALE_INTERVALS = 5
MIN_STALE_SECONDS = 60.0
# While one failure repeats, its one-line reminder is logged at most this often.
REPEAT_LOG_SECONDS = 60.0
# The response header the API sets on the answers ``det`` warns about.
HEADER = "X-Hpcdet-Health"
MAX_ERROR_CHARS = 300


def one_line(exc: BaseException) -> str:
    """An exception as one line of at most :data:`MAX_ERROR_CHARS` characters; a failed
    scheduler command as its name, status and last line of output (Slurm's ``fatal:``)."""
    text = str(exc)
    if isinstance(exc, SchedulerError):
        lines = [line for line in (exc.stderr or exc.stdout).splitlines() if line.strip()]
        text = f"{exc.argv[0]} exited with {exc.returncode}: {lines[-1] if lines else 'no output'}"
    words = " ".join(text.split()) or type(exc).__name__
    return words if len(words) <= MAX_ERROR_CHARS else words[:MAX_ERROR_CHARS - 1] + "…"


@dataclass
class HealthTracker:
    """What the reconciler knows of its own health, written once per cycle."""

    sessions: sessionmaker[Session]
    interval: float
    clock: Callable[[], float] = time.monotonic
    now: Callable[[], dt.datetime] = utcnow
    failing_since: dt.datetime | None = None
    last_error: str | None = None
    last_scheduler_ok: dt.datetime | None = None
    cycle_seconds: float | None = None
    cycle_completed_at: dt.datetime | None = None
    started_at: dt.datetime | None = None
    _cycle_failure: str | None = None
    _cycle_error: str | None = None
    _cycle_ok: bool = False
    _logged: bool = False  # the traceback of this failing spell was logged
    _logged_at: float = field(default=-1e18)

    def start(self) -> None:
        """The reconciler starts: stored, so that a first cycle that never completes shows."""
        self.started_at = self.now()
        self._store(None)

    # ---- during a cycle ---------------------------------------------------------------
    def scheduler_ok(self) -> None:
        """A scheduler command answered."""
        self._cycle_ok = True

    def scheduler_failed(self, what: str, exc: BaseException, *, scheduler: bool = True,
                         caller_logged: bool = False) -> None:
        """A scheduler command failed (``scheduler``), or the cycle for another reason:
        remember it, and log it: the first failure of a spell with its traceback, then
        one line at most every :data:`REPEAT_LOG_SECONDS`. ``caller_logged``: the caller
        has said it in its own words (an unreachable login node: one line, no traceback),
        so it is only remembered."""
        message = f"{what}: {one_line(exc)}"
        if not caller_logged:
            self._log(message, exc)
        if not scheduler:
            self._cycle_error = message
            return
        self._cycle_failure = message
        if self.failing_since is None:  # say so now: one scheduler call may take a minute
            self.failing_since, self.last_error = self.now(), message
            self._store(None)

    def _log(self, message: str, exc: BaseException) -> None:
        if not self._logged:
            log.error("%s", message, exc_info=exc)
            self._logged, self._logged_at = True, self.clock()
        elif self.clock() - self._logged_at >= REPEAT_LOG_SECONDS:
            since = self.failing_since.isoformat() if self.failing_since else "now"
            log.warning("still failing since %s: %s", since, message)
            self._logged_at = self.clock()

    # ---- at the end of a cycle ---------------------------------------------------------
    def end_cycle(self, cycle_seconds: float) -> dict[str, Any]:
        """Fold this cycle's scheduler answers into the record and store it."""
        now = self.now()
        if self._cycle_failure is not None:
            self.failing_since = self.failing_since or now
            self.last_error = self._cycle_failure
        elif self._cycle_ok:
            if self.failing_since is not None:
                log.info("the scheduler answers again (it failed since %s)",
                         self.failing_since.isoformat())
            self.failing_since = None
            self.last_scheduler_ok = now
        if self._cycle_failure is None and self._cycle_error is None:
            self._logged = False  # a clean cycle ends the spell
        cycle_error, self._cycle_error = self._cycle_error, None
        self._cycle_failure, self._cycle_ok = None, False
        self.cycle_seconds, self.cycle_completed_at = round(cycle_seconds, 3), now
        return self._store(cycle_error)

    def _store(self, cycle_error: str | None) -> dict[str, Any]:
        record = {
            "scheduler_ok": self.failing_since is None,
            "scheduler_failing_since": _iso(self.failing_since),
            "scheduler_last_ok": _iso(self.last_scheduler_ok),
            "last_error": self.last_error, "cycle_error": cycle_error,
            "cycle_seconds": self.cycle_seconds,
            "cycle_completed_at": _iso(self.cycle_completed_at),
            "interval_seconds": self.interval, "started_at": _iso(self.started_at),
        }  # fmt: skip
        started = self.clock()
        try:
            with session_scope(self.sessions) as session:
                session.execute(text("SELECT 1"))
                record["db_seconds"] = round(self.clock() - started, 3)
                store_snapshot(session, HEALTH, record)
        except Exception as exc:  # a database that fails is reported by the API instead
            self.scheduler_failed("writing the health record", exc, scheduler=False)
        return record


def _iso(moment: dt.datetime | None) -> str | None:
    return None if moment is None else as_utc(moment).isoformat()


# ---- reading it (API workers) -----------------------------------------------------------


def load_health(session: Session, now: dt.datetime | None = None) -> dict[str, Any]:
    """The stored record judged now: ``{"status": "ok"|"degraded"|"starting",
    "problems": [one line each], ...the record}``."""
    found = load_snapshot(session, HEALTH)
    if found is None:
        return {"status": "starting", "problems": [],
                "note": "the reconciler has not completed a cycle yet"}
    return assess(found[0], now or utcnow())


def assess(record: Mapping[str, Any], now: dt.datetime) -> dict[str, Any]:
    """``record`` with its ``status`` and ``problems`` (in words, one line each)."""
    problems = []
    since = record.get("scheduler_failing_since")
    if since:
        problems.append(f"scheduler unreachable since {_utc_text(since)}: "
                        f"{record.get('last_error') or 'no message'}")
    if record.get("cycle_error"):
        problems.append(f"reconcile cycle failing: {record['cycle_error']}")
    db_seconds = record.get("db_seconds")
    if isinstance(db_seconds, int | float) and db_seconds > SLOW_DB_SECONDS:
        problems.append(f"database slow: a round trip took {db_seconds:.1f} s")
    completed = record.get("cycle_completed_at")
    interval = float(record.get("interval_seconds") or 5.0)
    limit = max(STALE_INTERVALS * interval, MIN_STALE_SECONDS)
    started = record.get("started_at")
    if not completed and started:
        age = (now - dt.datetime.fromisoformat(started)).total_seconds()
        if age > limit:
            problems.append(f"reconciler not cycling: no cycle completed since it started "
                            f"{_utc_text(started)} ({age:.0f} s ago)")
    if completed:
        age = (now - dt.datetime.fromisoformat(completed)).total_seconds()
        if age > limit:
            problems.append(f"reconciler not cycling: its last cycle completed "
                            f"{_utc_text(completed)} ({age:.0f} s ago, more than "
                            f"{limit:.0f} s)")
    return {**record, "status": "degraded" if problems else "ok", "problems": problems}


def header_value(health: Mapping[str, Any]) -> str | None:
    """The :data:`HEADER` value for a degraded master (``degraded; <problem>; ...``)."""
    if health.get("status") != "degraded":
        return None
    line = "; ".join(["degraded", *health.get("problems", [])])
    # Header values are Latin-1 and one line.
    return " ".join(line.split()).encode("latin-1", "replace").decode("latin-1")


def _utc_text(iso: str) -> str:
    return as_utc(dt.datetime.fromisoformat(iso)).strftime("%Y-%m-%d %H:%M:%S UTC")


# How long an API worker reuses the health it read for headers and banners (a database read
# per answer would cost every listing a statement; the reconciler writes once a cycle).
CACHE_SECONDS = 2.0


def cached_health(session: Session, cache: dict[str, Any], ttl: float = CACHE_SECONDS,
                  clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """:func:`load_health`, reused for ``ttl`` seconds from ``cache`` (one per app)."""
    now = clock()
    if cache.get("value") is None or now - cache.get("at", -1e18) >= ttl:
        cache["value"], cache["at"] = load_health(session), now
    value: dict[str, Any] = cache["value"]
    return value
