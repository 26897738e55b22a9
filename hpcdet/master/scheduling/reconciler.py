"""The master's one background loop: searcher -> create trials -> submit -> poll -> transitions.

Each step runs in its own transaction so that a crash between steps leaves a consistent
database. The scheduler is asked about all active jobs with one ``Backend.poll`` per cycle.
The steps that belong to rooms above scheduling (the searchers, the experiments' ending,
the unmanaged runs, the proxy's registration) come in as :class:`.CycleSteps`, wired by
the composition root (:func:`hpcdet.master.composition.make_reconciler`).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend
from hpcdet.dispatcher.transport import TransportUnavailableError
from hpcdet.errors import SchedulerError
from hpcdet.master.db import session_scope
from hpcdet.master.monitoring import instruments
from hpcdet.master.reports.checkpoint_gc import CheckpointCollector
from hpcdet.master.scheduling import allocations, tasks
from hpcdet.master.scheduling.cluster_view import ClusterView
from hpcdet.master.scheduling.cycle_steps import CycleSteps, SearchReport
from hpcdet.master.scheduling.health import HealthTracker
from hpcdet.master.scheduling.intents import recover_intents
from hpcdet.master.scheduling.polling import Poller
from hpcdet.master.scheduling.stopping import cancel_stopping
from hpcdet.master.scheduling.submitter import Submitter
from hpcdet.master.scheduling.tally import Tally
from hpcdet.master.scheduling.task_tokens import forget_ended_shell_keys
from hpcdet.master.settings.core import MasterSettings

log = logging.getLogger(__name__)


@dataclass
class CycleReport(Tally):
    """What one cycle did (for logs, tests and benchmarks)."""

    trials_created: int = 0
    jobs_submitted: int = 0  # trials' jobs, array tasks included
    jobs_polled: int = 0  # trials' and command tasks' jobs
    jobs_cancelled: int = 0  # trials' and command tasks' jobs
    intents_recovered: int = 0  # a previous master's intents, adopted or dropped
    search: SearchReport = field(default_factory=SearchReport)
    allocations: allocations.AllocationReport = field(
        default_factory=allocations.AllocationReport)


class Reconciler:
    """Drives experiments forward; exactly one runs per master."""

    def __init__(self, settings: MasterSettings, sessions: sessionmaker[Session],
                 backend: Backend, steps: CycleSteps) -> None:
        self.settings, self.sessions, self.backend = settings, sessions, backend
        self.steps = steps
        self.checkpoint_gc = CheckpointCollector(sessions, settings)
        self.health = HealthTracker(sessions, settings.reconcile_interval)
        self.cluster_view = ClusterView(settings, sessions, backend, health=self.health)
        self.submitter = Submitter(settings, sessions, backend, self.cluster_view)
        self.poller = Poller(settings, sessions, backend, self.health, steps)
        # Allocation mode (resources.allocation): trials as steps of one job per experiment.
        self.allocations = allocations.AllocationManager(settings, sessions, backend)

    def run_forever(self, stop: threading.Event) -> None:
        """Run cycles every ``reconcile_interval`` seconds until ``stop`` is set.

        Pools, the queue and the fair-share accounts are refreshed first, on their own
        (slower) timer, so that the first submissions already see the pools.
        """
        self.health.start()
        while not stop.is_set():
            started, failure = time.monotonic(), None
            try:
                self.cluster_view.maybe_refresh()
                self.cycle()
            except TransportUnavailableError as exc:  # the next cycle tries again
                failure = "unreachable"
                # A failed try is a warning; the same failure repeated within the backoff
                # (nothing tried) is not worth a line per cycle.
                log.log(logging.DEBUG if exc.retry_in else logging.WARNING,
                        "reconcile cycle skipped, the cluster is unreachable: %s", exc)
                self.health.scheduler_failed("the cluster is unreachable", exc,
                                             caller_logged=True)
            except (SchedulerError, OSError) as exc:  # a scheduler command failed
                failure = "scheduler"
                # The health tracker logs the traceback once, then one line a minute.
                self.health.scheduler_failed("a scheduler command failed", exc)
            except Exception as exc:  # one bad cycle must not kill the loop
                failure = "internal"
                self.health.scheduler_failed("reconcile cycle failed", exc, scheduler=False)
            seconds = time.monotonic() - started
            self.health.end_cycle(seconds)
            instruments.observe_cycle(seconds, failure)
            stop.wait(self.settings.reconcile_interval)

    def cycle(self) -> CycleReport:
        """Let the searchers act, submit, cancel what must stop, poll, and roll up.

        The searchers run again after the poll, so a trial's exit reaches its searcher (and
        ends a finished experiment) in the cycle that saw it; with nothing new, that second
        pass costs two small queries.
        """
        report = CycleReport()
        report.intents_recovered = recover_intents(self.sessions, self.backend)
        report.search = self.search()
        report.allocations = self.allocations.cycle()
        report.jobs_submitted = self.submitter.submit_queued()
        report.jobs_cancelled = cancel_stopping(self.settings, self.sessions, self.backend)
        report.jobs_cancelled += tasks.cancel_killed_tasks(self.sessions, self.backend)
        report.jobs_polled = self.poller.poll()
        self.steps.register_services()  # proxied tasks' addresses
        with session_scope(self.sessions) as session:
            forget_ended_shell_keys(session)
        report.search.add(self.search())
        report.trials_created = report.search.trials_created
        self._roll_up()
        self.checkpoint_gc.collect()  # cheap when no trial ended
        return report

    def search(self) -> SearchReport:
        """Let the searchers act once, in a transaction of their own."""
        with session_scope(self.sessions) as session:
            return self.steps.search(session)

    def _roll_up(self) -> None:
        with session_scope(self.sessions) as session:
            # Active experiments end when their searcher says so; this ends the ones being
            # stopped once nothing runs (the experiments room's step).
            self.steps.end_experiments(session)
