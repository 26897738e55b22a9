"""Ships metrics to the master from a background thread, in batches, without losing any.

The training loop must not wait on the network for every report, and the master should
not get one request per batch of training. Reports go into a bounded queue; a thread
posts them every ``flush_interval`` seconds, or as soon as ``batch_size`` are waiting,
one ``POST /trials/<id>/metrics`` per group. Transient failures (no connection, 5xx,
408, 429) are retried with exponential backoff, holding on to the data; when the queue
is full the *caller blocks* rather than dropping reports. A permanent failure (any other
4xx, e.g. a bad token) is raised from the next :meth:`MetricsReporter.report` call.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from hpcdet.client import MasterClient
from hpcdet.errors import MasterError

_TRANSIENT_STATUSES = frozenset({408, 429})


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: ``initial`` seconds, doubling up to ``maximum``."""

    initial: float = 0.5
    maximum: float = 30.0
    attempts: int | None = None  # None: until it works, or until aborted


def is_transient(exc: MasterError) -> bool:
    """Worth retrying: unreachable master (no status), 5xx, 408 or 429."""
    return exc.status is None or exc.status >= 500 or exc.status in _TRANSIENT_STATUSES


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


@dataclass
class _Report:
    group: str
    steps_completed: int
    metrics: dict[str, float]


@dataclass
class _Marker:
    """Asks the thread to ship everything queued before it, then set ``done``."""

    close: bool = False
    done: threading.Event = field(default_factory=threading.Event)


class MetricsReporter:
    """Batches metric reports of one trial and posts them from a daemon thread."""

    def __init__(
        self,
        client: MasterClient,
        trial_id: int,
        *,
        flush_interval: float = 1.0,
        batch_size: int = 100,
        max_pending: int = 1000,
        backoff: Backoff | None = None,
        close_timeout: float = 300.0,
    ) -> None:
        self._client = client
        self._path = f"/trials/{trial_id}/metrics"
        self._interval = flush_interval
        self._batch_size = batch_size
        self._backoff = backoff or Backoff()
        self._close_timeout = close_timeout
        self._queue: queue.Queue[_Report | _Marker] = queue.Queue(maxsize=max_pending)
        self._abort = threading.Event()
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="hpcdet-metrics", daemon=True)
        self._thread.start()

    def report(self, group: str, steps_completed: int, metrics: dict[str, float]) -> None:
        """Queue one report; blocks while the queue is full. Raises an earlier failure."""
        if self._closed:
            raise RuntimeError("the metrics reporter is closed")
        self._raise_if_failed()
        self._put(_Report(group, steps_completed, dict(metrics)))

    def flush(self, timeout: float | None = None) -> None:
        """Wait until everything reported so far has been shipped; raise if some failed."""
        if self._closed:
            return
        marker = _Marker()
        self._put(marker)
        marker.done.wait(timeout)
        self._raise_if_failed()

    def close(self, timeout: float | None = None) -> None:
        """Ship everything, stop the thread; raise if reports were lost.

        After ``timeout`` (default ``close_timeout``) of a master that keeps failing,
        the rest is dropped, with a message saying how many reports were lost.
        """
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + (self._close_timeout if timeout is None else timeout)
        if not self._try_put(_Marker(close=True), deadline):
            self._abort.set()  # stop retrying: the thread drops what is left and drains
            self._try_put(_Marker(close=True), None)
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            self._abort.set()
            self._thread.join()
        self._raise_if_failed()

    def _put(self, item: _Report | _Marker) -> None:
        if not self._try_put(item, None):
            self._raise_if_failed()
            raise RuntimeError("the metrics reporter thread has stopped")

    def _try_put(self, item: _Report | _Marker, deadline: float | None) -> bool:
        """Queue ``item``, blocking while full; False if the thread died or time ran out."""
        # A short timeout in a loop, so a dead thread cannot leave the caller blocked.
        while self._thread.is_alive():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            try:
                self._queue.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise MasterError(f"reporting metrics to the master failed: {self._error}")

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # surfaced to the caller by report()/close()
            self._error = exc

    def _loop(self) -> None:
        pending: list[_Report] = []
        deadline: float | None = None
        while True:
            item = self._next(deadline)
            if isinstance(item, _Report):
                pending.append(item)
                deadline = deadline or time.monotonic() + self._interval
                if len(pending) < self._batch_size:
                    continue
            self._ship(pending)
            pending, deadline = [], None
            if isinstance(item, _Marker):
                item.done.set()
                if item.close:
                    return

    def _next(self, deadline: float | None) -> _Report | _Marker | None:
        """The next queued item; None once ``deadline`` passes with nothing new."""
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def _ship(self, reports: list[_Report]) -> None:
        for group in dict.fromkeys(r.group for r in reports):
            rows = [r for r in reports if r.group == group]
            self._post_group(group, rows)

    def _post_group(self, group: str, rows: list[_Report]) -> None:
        body = {
            "group": group,
            "reports": [{"steps_completed": r.steps_completed, "metrics": r.metrics} for r in rows],
        }
        if self._error is not None or self._abort.is_set():
            _log(f"dropped {len(rows)} {group} metric report(s) after an earlier failure")
            return
        try:
            post_with_retry(
                self._client, self._path, body, backoff=self._backoff, abort=self._abort
            )
        except MasterError as exc:
            self._error = exc
            _log(f"dropped {len(rows)} {group} metric report(s): {exc}")


def _log(message: str) -> None:
    print(f"hpcdet core: {message}", file=sys.stderr, flush=True)
