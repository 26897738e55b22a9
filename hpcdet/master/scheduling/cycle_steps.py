"""The steps of a reconcile cycle that belong to rooms above scheduling.

The searchers, the experiments' ending, the unmanaged runs and the proxy's service
registration live above this room; the composition root (:mod:`hpcdet.master.composition`)
hands them to the reconciler as a :class:`CycleSteps`, so that scheduling imports none of
them. A test may hand in steps of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from hpcdet.dispatcher import JobRef, JobStatus
from hpcdet.master.scheduling.tally import Tally

# A running unmanaged trial's id and the scheduler job its script runs in.
LinkedJob = tuple[int, JobRef]


@dataclass
class SearchReport(Tally):
    """What one pass over the experiments' searchers did."""

    experiments_started: int = 0  # searches begun (their first trials created)
    events_consumed: int = 0  # validations and exits fed to searchers
    trials_created: int = 0
    trials_stopped: int = 0  # stopped by their searcher
    experiments_finished: int = 0  # their searcher has nothing left to do


@dataclass(frozen=True)
class CycleSteps:
    """What the reconciler calls on rooms above it, each in a transaction it opens."""

    # The searchers act: start searches, consume events, create and stop trials.
    search: Callable[[Session], SearchReport]
    # Experiments being stopped end once none of their trials runs.
    end_experiments: Callable[[Session], object]
    # The jobs of running unmanaged trials, polled with the master's own jobs.
    linked_jobs: Callable[[Session], Sequence[LinkedJob]]
    # Unmanaged trials whose job ended, or whose script went silent, end.
    end_lost_runs: Callable[[Session, Sequence[LinkedJob], Mapping[str, JobStatus]], object]
    # Proxied tasks' service addresses are read, pinned and stored.
    register_services: Callable[[], object]
