"""The reconciler's timer for what it reads of the cluster as a whole: pools and the queue.

Every ``pool_refresh_seconds`` it reads the pools (one ``sinfo`` plus one ``squeue``) and
the queue (one ``squeue``), stores both as snapshots for the API, and keeps the fair-share
accounts in step. A failure is logged (and noted in the master's health) and leaves the
previous snapshot in place.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend
from hpcdet.dispatcher.transport import TransportUnavailableError
from hpcdet.master.db import session_scope
from hpcdet.master.queue.fair_share import AccountSync
from hpcdet.master.queue.snapshots import POOLS, QUEUE, store_snapshot
from hpcdet.master.scheduling.health import HealthTracker
from hpcdet.master.settings.core import MasterSettings

log = logging.getLogger(__name__)

Reader = Callable[[Backend, MasterSettings], dict[str, Any]]


class ClusterView:
    """Refreshes the pools and queue snapshots, and syncs fair-share accounts, on a timer."""

    def __init__(self, settings: MasterSettings, sessions: sessionmaker[Session],
                 backend: Backend, *, clock: Callable[[], float] = time.monotonic,
                 health: HealthTracker | None = None) -> None:
        self.settings, self.sessions, self.backend, self.clock = settings, sessions, backend, clock
        self.health = health
        self._last: float | None = None
        self.accounts = AccountSync(settings, backend.runner)

    def maybe_refresh(self) -> bool:
        """Refresh when ``pool_refresh_seconds`` have passed since the last time."""
        now = self.clock()
        every = self.settings.resource_manager.pool_refresh_seconds
        due = self._last is None or now - self._last >= every
        if due:
            self._last = now
            self.refresh()
        return due

    def refresh(self) -> None:
        """Read and store both snapshots, then sync the accounts; each step on its own."""
        for kind, reader in _readers().items():
            self._store(kind, reader)
        self._sync_accounts()

    def _store(self, kind: str, reader: Reader) -> None:
        try:
            data = reader(self.backend, self.settings)
        except TransportUnavailableError as exc:  # a login node away: one line, no traceback
            log.log(logging.DEBUG if exc.retry_in else logging.WARNING,
                    "reading the %s failed, the cluster is unreachable: %s", kind, exc)
            if self.health is not None:
                self.health.scheduler_failed(f"reading the {kind}: the cluster is unreachable",
                                             exc, caller_logged=True)
            return
        except Exception as exc:  # the old snapshot stays; the next refresh tries again
            if self.health is None:
                log.exception("reading the %s from Slurm failed", kind)
            else:  # logs the traceback once, then a line now and then
                self.health.scheduler_failed(f"reading the {kind} from the scheduler", exc)
            return
        if self.health is not None:
            self.health.scheduler_ok()
        with session_scope(self.sessions) as session:
            store_snapshot(session, kind, data)

    def _sync_accounts(self) -> None:
        with session_scope(self.sessions) as session:
            self.accounts.refresh(session)  # logs its own failures

    def ensure_account(self, account: str | None) -> None:
        """Before a submission: create a new workspace's (or user's) account first."""
        if account is not None and self.settings.resource_manager.fair_share is not None:
            with session_scope(self.sessions) as session:
                self.accounts.ensure(session, account)


def _readers() -> dict[str, Reader]:
    from hpcdet.master.queue.job_queue import read_queue_snapshot
    from hpcdet.master.queue.pools import read_pools

    return {POOLS: read_pools, QUEUE: read_queue_snapshot}
