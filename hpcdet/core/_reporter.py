"""Ships reports to the master from a background thread, in order, none lost nor stored twice.

The training loop must not wait on the network for every report, and the master should
not get one request per batch of training. A thread posts what is waiting every
``flush_interval`` seconds, or as soon as ``batch_size`` reports are waiting: consecutive
reports of one group in one ``POST /trials/<id>/metrics``, a checkpoint registration in
one ``POST /trials/<id>/checkpoints``, in the order they were made. Transient failures
(no connection, 5xx, 408, 409, 429) are retried with exponential backoff; a batch is
resent unchanged until the master answers.

In a managed trial the reporter is one *stream*: it says which execution it belongs to
(``run_id``, Slurm's ``requeue`` count, its ``rank``) and where that execution resumed
from, and numbers its reports ``seq`` 0, 1, 2, ... (a request gives the seq of its first
report; the others follow). The master stores each seq once, so resending is safe. Such
a reporter has a spool directory (:mod:`hpcdet.core._spool`): beyond ``max_pending``
reports in memory the next ones go to disk, so the caller never blocks, and
:meth:`MetricsReporter.close` leaves whatever the master did not take in time there, for
the master to collect. Without a stream (tests, old callers) there is no spool, no seq, and
the caller blocks while ``max_pending`` reports are waiting.

A permanent failure (any other 4xx, e.g. a bad token; or 409 ``stale_run``: a newer
execution of the trial has started, so this one must stop) is raised from the next
:meth:`MetricsReporter.report`, :meth:`~MetricsReporter.flush` or
:meth:`~MetricsReporter.close` call.
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpcdet.client import MasterClient
from hpcdet.core._spool import Spool, segment_name
from hpcdet.errors import MasterError, ValidationError

_TRANSIENT_STATUSES = frozenset({408, 429})
STALE_RUN = "stale_run"
CHECKPOINT = "checkpoint"
CLOSE_TIMEOUT_ENV = "HPCDET_REPORT_CLOSE_TIMEOUT"
DEFAULT_CLOSE_TIMEOUT = 30.0
# How long flush() waits on a master that answers with errors before it leaves the reports
# queued (a master that cannot be reached at all is not waited for).
FLUSH_PATIENCE = 10.0


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: ``initial`` seconds, doubling up to ``maximum``."""

    initial: float = 0.5
    maximum: float = 30.0
    attempts: int | None = None  # None: until it works, or until aborted


def is_transient(exc: MasterError) -> bool:
    """Worth retrying: unreachable master (no status), 5xx, 408 or 429."""
    return exc.status is None or exc.status >= 500 or exc.status in _TRANSIENT_STATUSES


def is_retryable_report_error(exc: MasterError) -> bool:
    """Worth resending a report batch: transient, or a 409 other than ``stale_run``."""
    return is_transient(exc) or (exc.status == 409 and exc.code != STALE_RUN)


def post_with_retry(
    client: MasterClient,
    path: str,
    body: Any,
    *,
    backoff: Backoff,
    abort: threading.Event | None = None,
) -> Any:
    """POST, retrying transient errors; raise the last error when giving up."""
    abort = abort or threading.Event()  # never set: waiting on it is a sleep
    delay, tries = backoff.initial, 0
    while True:
        try:
            return client.post(path, body)
        except MasterError as exc:
            tries += 1
            if not is_transient(exc) or (backoff.attempts and tries >= backoff.attempts):
                raise
            _log(f"POST {path} failed ({exc}); retrying in {delay:.1f}s")
            if abort.wait(delay):
                raise
            delay = min(delay * 2, backoff.maximum)


def close_timeout_from_environ(environ: Mapping[str, str] | None = None) -> float:
    """Seconds close() waits for the master: ``$HPCDET_REPORT_CLOSE_TIMEOUT``, default 30.

    Raises ValidationError for anything but a finite number >= 0.
    """
    raw = (os.environ if environ is None else environ).get(CLOSE_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_CLOSE_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise ValidationError(f"{CLOSE_TIMEOUT_ENV} must be a number of seconds >= 0, "
                              f"not {raw!r}")
    return seconds


@dataclass(frozen=True)
class StreamIdentity:
    """Who reports: a rank of one execution of a trial, and where the execution resumed."""

    run_id: int
    requeue: int
    rank: int
    resumed_uuid: str | None = None
    resumed_steps: int = 0

    def fields(self) -> dict[str, Any]:
        """What every request of the stream carries besides its ``seq``."""
        return {"stream": {"run_id": self.run_id, "requeue": self.requeue, "rank": self.rank},
                "resumed_from": {"uuid": self.resumed_uuid,
                                 "steps_completed": self.resumed_steps}}

    def meta(self, trial_id: int) -> dict[str, Any]:
        """The spool directory's ``stream.json``."""
        stream = self.fields()
        return {"trial_id": trial_id, **stream["stream"], "resumed_from": stream["resumed_from"]}


# The seq numbers of each stream in this process: a second reporter of the same stream (a
# script that calls hpcdet.core.init() twice) continues where the first stopped, as the
# master drops numbers it has already stored.
_SequenceKey = tuple[int, StreamIdentity, Path | None]
_SEQUENCES: dict[_SequenceKey, itertools.count[int]] = {}
_SEQUENCES_LOCK = threading.Lock()


def _sequence(trial_id: int, stream: StreamIdentity | None,
              spool: Path | None) -> itertools.count[int]:
    if stream is None:
        return itertools.count()
    with _SEQUENCES_LOCK:
        return _SEQUENCES.setdefault((trial_id, stream, spool), itertools.count())


@dataclass
class _Item:
    """One report: metrics of a group at a step, or (group ``checkpoint``) a registration."""

    seq: int
    group: str
    steps_completed: int
    metrics: dict[str, float] = field(default_factory=dict)
    checkpoint: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        if self.checkpoint is not None:
            return {"seq": self.seq, "group": CHECKPOINT, "checkpoint": self.checkpoint}
        return {"seq": self.seq, "group": self.group, "steps_completed": self.steps_completed,
                "metrics": self.metrics}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Item:
        checkpoint = data.get("checkpoint")
        if checkpoint is not None:
            return cls(data["seq"], CHECKPOINT, checkpoint["steps_completed"], {}, checkpoint)
        return cls(data["seq"], data["group"], data["steps_completed"], data["metrics"])


class MetricsReporter:
    """Ships one trial's reports (one stream of them) from a daemon thread."""

    def __init__(
        self,
        client: MasterClient,
        trial_id: int,
        *,
        flush_interval: float = 1.0,
        batch_size: int = 100,
        max_pending: int = 1000,
        backoff: Backoff | None = None,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
        stream: StreamIdentity | None = None,
        spool_dir: Path | None = None,
    ) -> None:
        self._client = client
        self._trial_id = trial_id
        self._interval = flush_interval
        self._batch_size = max(1, batch_size)
        self._max_pending = max(1, max_pending)
        self._backoff = backoff or Backoff()
        self._close_timeout = close_timeout
        self._stream = stream
        self._seqs = _sequence(trial_id, stream, spool_dir)
        self._lock = threading.Condition()
        self._memory: collections.deque[_Item] = collections.deque()
        self._inflight: list[_Item] = []
        self._inflight_on_disk = False
        self._last_seq: int | None = None  # the newest report's seq
        self._delivered: int | None = None  # every report up to this seq is delivered
        self._due: float | None = None  # when what is waiting must be sent
        self._urgent = 0  # flush() and close() calls waiting: send now
        self._failing_since: float | None = None
        self._last_failure: MasterError | None = None
        self._unreachable = False  # the last attempt could not reach the master
        self._closing = False
        self._closed = False
        self._abort = threading.Event()
        self._error: BaseException | None = None
        self._spool = self._open_spool(spool_dir) if stream is not None else None
        self._thread = threading.Thread(target=self._run, name="hpcdet-metrics", daemon=True)
        self._thread.start()

    @property
    def spool_dir(self) -> Path | None:
        """Where reports the master does not take are kept (None: nowhere, they wait)."""
        return self._spool.path if self._spool is not None else None

    def report(self, group: str, steps_completed: int, metrics: dict[str, float]) -> None:
        """Queue one report; raises an earlier failure.

        With a spool it never waits; without, it blocks while ``max_pending`` are queued.
        """
        self._check_open()
        with self._lock:
            self._add(_Item(next(self._seqs), group, steps_completed, dict(metrics)))

    def register_checkpoint(self, body: dict[str, Any]) -> None:
        """Queue a checkpoint registration behind the reports before it, then :meth:`flush`.

        ``body`` is what ``POST /trials/<id>/checkpoints`` takes (``uuid``,
        ``steps_completed``, ``metadata``, ``resources``).
        """
        self._check_open()
        with self._lock:
            self._add(_Item(next(self._seqs), CHECKPOINT, int(body["steps_completed"]),
                            checkpoint=dict(body)))
        self.flush()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until the master has every report made so far; raise if one failed for good.

        With a spool, reports stay queued (and nothing waits) when the master cannot be
        reached, or has answered with errors for ``FLUSH_PATIENCE`` seconds.
        """
        if self._closed:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            target, self._urgent = self._last_seq, self._urgent + 1
            self._lock.notify_all()
            try:
                while not self._flushed(target) and not self._gave_up_waiting():
                    if not self._wait(deadline):
                        break
            finally:
                self._urgent -= 1
        self._raise_if_failed()

    def close(self, timeout: float | None = None) -> None:
        """Ship everything, stop the thread; raise if a report failed for good.

        After ``timeout`` (default ``close_timeout``) of a master that does not take them,
        the reports left are written to the spool directory, with one line on stderr
        saying how many; without a spool they are dropped, with a message, and the last
        error is raised.
        """
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + (self._close_timeout if timeout is None else timeout)
        with self._lock:
            self._closing, self._urgent = True, self._urgent + 1
            self._lock.notify_all()
            while (not self._flushed(self._last_seq) and self._error is None
                   and self._thread.is_alive() and self._wait(deadline)):
                pass
            self._abort.set()
            self._lock.notify_all()
            self._leave_the_rest()
        self._thread.join(max(0.0, min(1.0, deadline - time.monotonic())))
        self._raise_if_failed()

    # ---- caller side ---------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the metrics reporter is closed")
        self._raise_if_failed()

    def _add(self, item: _Item) -> None:
        """Queue ``item`` in memory or, past ``max_pending`` (or behind spooled ones), on disk."""
        self._last_seq = item.seq
        if self._delivered is None:
            self._delivered = item.seq - 1
        self._due = self._due or time.monotonic() + self._interval
        if self._spool is not None and (len(self._spool) or self._memory_full()):
            if self._spill(item):
                return
        while self._spool is None and self._memory_full():
            if not self._thread.is_alive():
                self._raise_if_failed()
                raise RuntimeError("the metrics reporter thread has stopped")
            self._lock.wait(0.2)  # a short wait in a loop: a dead thread cannot hang us
        self._memory.append(item)
        self._lock.notify_all()

    def _memory_full(self) -> bool:
        in_memory = len(self._memory) + (0 if self._inflight_on_disk else len(self._inflight))
        return in_memory >= self._max_pending

    def _spill(self, item: _Item) -> bool:
        assert self._spool is not None
        try:
            self._spool.append(item.to_json())
        except OSError as exc:  # go on without a spool rather than stop the training
            _log(f"could not spool a report to {self._spool.path} ({exc}); from now on "
                 f"reports wait in memory (at most {self._max_pending}, then report() waits)")
            self._spool = None
            return False
        self._lock.notify_all()
        return True

    def _flushed(self, target: int | None) -> bool:
        return target is None or (self._delivered is not None and self._delivered >= target)

    def _gave_up_waiting(self) -> bool:
        if self._error is not None or not self._thread.is_alive():
            return True
        if self._spool is None or self._failing_since is None:
            return False
        return self._unreachable or time.monotonic() - self._failing_since >= FLUSH_PATIENCE

    def _wait(self, deadline: float | None) -> bool:
        """Wait for news from the thread; False once ``deadline`` has passed."""
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return False
        self._lock.wait(0.2 if left is None else min(0.2, left))
        return True

    def _leave_the_rest(self) -> None:
        """Spool (or drop, without a spool) what was not delivered; one line on stderr."""
        on_disk = len(self._spool) if self._spool is not None else 0
        in_memory = [i for i in self._inflight if not self._inflight_on_disk]
        in_memory += list(self._memory)
        self._memory.clear()
        if self._spool is None:
            self._drop(in_memory)
            return
        try:
            if in_memory:
                self._spool.write_durably(segment_name(in_memory[0].seq),
                                          [i.to_json() for i in in_memory])
            self._spool.sync()
        except OSError as exc:
            _log(f"lost {len(in_memory)} report(s): could not write them to "
                 f"{self._spool.path}: {exc}")
            raise MasterError(f"reports could not be spooled: {exc}") from exc
        if in_memory or on_disk:
            _log(f"the master did not take {len(in_memory) + on_disk} report(s) in time; "
                 f"left them in {self._spool.path} for the master to collect")

    def _drop(self, items: list[_Item]) -> None:
        for group in dict.fromkeys(i.group for i in items):
            count = sum(1 for i in items if i.group == group)
            _log(f"dropped {count} {group} metric report(s) after the master did not take "
                 "them in time")
        if items and self._error is None:
            self._error = self._last_failure or MasterError("the master did not answer in time")

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise MasterError(f"reporting metrics to the master failed: {self._error}")

    def _open_spool(self, path: Path | None) -> Spool | None:
        if path is None or self._stream is None:
            return None
        try:
            return Spool(path, self._stream.meta(self._trial_id),
                         segment_reports=self._max_pending)
        except OSError as exc:
            _log(f"cannot use the spool directory {path} ({exc}); reports wait in memory")
            return None

    # ---- the thread ----------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while (batch := self._next_batch()) is not None:
                if not self._deliver(batch):
                    return
        except BaseException as exc:  # surfaced to the caller by report()/flush()/close()
            with self._lock:
                self._error = self._error or exc
                self._lock.notify_all()

    def _next_batch(self) -> list[_Item] | None:
        """The next reports to send, once it is time; None when there is nothing more to do."""
        with self._lock:
            while not self._abort.is_set():
                waiting = len(self._memory) + (len(self._spool) if self._spool else 0)
                if waiting and (self._urgent or waiting >= self._batch_size
                                or time.monotonic() >= (self._due or 0)):
                    return self._take()
                if not waiting and self._closing:
                    return None
                if not waiting:
                    self._due = None
                # Woken by report(), flush() and close(); the bound is only a safety net.
                timeout = 1.0 if self._due is None else self._due - time.monotonic()
                self._lock.wait(max(0.0, min(1.0, timeout)))
            return None

    def _take(self) -> list[_Item]:
        """Consecutive reports of one group (a checkpoint alone), oldest first."""
        if self._memory:
            source = list(itertools.islice(self._memory, self._batch_size))
            self._inflight_on_disk = False
        else:
            assert self._spool is not None
            source = [_Item.from_json(i) for i in self._spool.peek(self._batch_size)]
            self._inflight_on_disk = True
        run = list(itertools.takewhile(lambda i: i.group == source[0].group, source))
        self._inflight = run[:1] if run[0].group == CHECKPOINT else run
        if not self._inflight_on_disk:
            for _ in self._inflight:
                self._memory.popleft()
        return self._inflight

    def _deliver(self, batch: list[_Item]) -> bool:
        """Post ``batch`` until the master takes it; False if closing gave up on it."""
        delay, tries = self._backoff.initial, 0
        while not self._abort.is_set():
            try:
                self._post(batch)
            except MasterError as exc:
                tries += 1
                if not is_retryable_report_error(exc) or (
                        self._backoff.attempts and tries >= self._backoff.attempts):
                    self._fail(batch, exc)
                    raise
                self._note_failure(exc, batch, delay)
                if self._abort.wait(delay):
                    return False
                delay = min(delay * 2, self._backoff.maximum)
                continue
            return self._delivered_now(batch)
        return False

    def _post(self, batch: list[_Item]) -> None:
        first = batch[0]
        stream = {} if self._stream is None else {**self._stream.fields(), "seq": first.seq}
        if first.checkpoint is not None:
            self._client.post(f"/trials/{self._trial_id}/checkpoints",
                              {**first.checkpoint, **stream})
            return
        reports = [{"steps_completed": i.steps_completed, "metrics": i.metrics} for i in batch]
        self._client.post(f"/trials/{self._trial_id}/metrics",
                          {"group": first.group, "reports": reports, **stream})

    def _note_failure(self, exc: MasterError, batch: list[_Item], delay: float) -> None:
        with self._lock:
            self._last_failure = exc
            self._unreachable = exc.status is None
            self._failing_since = self._failing_since or time.monotonic()
            self._lock.notify_all()
        what = "a checkpoint" if batch[0].checkpoint else f"{len(batch)} {batch[0].group} report(s)"
        _log(f"sending {what} failed ({exc}); retrying in {delay:.1f}s")

    def _delivered_now(self, batch: list[_Item]) -> bool:
        with self._lock:
            if self._abort.is_set():  # close() has spooled them already
                return False
            if self._inflight_on_disk and self._spool is not None:
                self._spool.consume(len(batch))
            self._delivered, self._inflight = batch[-1].seq, []
            self._failing_since, self._unreachable = None, False
            self._lock.notify_all()
        return True

    def _fail(self, batch: list[_Item], exc: MasterError) -> None:
        """A permanent failure: without a spool, what was in ``batch`` is lost (said so)."""
        with self._lock:
            self._error = exc
            if self._spool is None:
                self._inflight = []
            self._lock.notify_all()
        if self._spool is None:
            _log(f"dropped {len(batch)} {batch[0].group} metric report(s): {exc}")


def _log(message: str) -> None:
    print(f"hpcdet core: {message}", file=sys.stderr, flush=True)
