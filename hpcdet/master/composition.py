"""The composition root of the reconciler: the one place its steps from higher rooms are wired.

The reconciler lives in the scheduling room and imports nothing above it; the searchers and
the experiments' ending (experiments), the unmanaged runs (experiments) and the registration
of proxied services (proxy) are handed to it here, as a :class:`CycleSteps`.
"""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend
from hpcdet.master.experiments import unmanaged
from hpcdet.master.experiments.ending import end_stopped_experiments
from hpcdet.master.experiments.searching import SearchDriver
from hpcdet.master.proxy.pinning import protected_ports
from hpcdet.master.proxy.registration import register_services
from hpcdet.master.scheduling.cycle_steps import CycleSteps
from hpcdet.master.scheduling.reconciler import Reconciler
from hpcdet.master.settings.core import MasterSettings


def cycle_steps(settings: MasterSettings, sessions: sessionmaker[Session],
                backend: Backend) -> CycleSteps:
    """The real steps: a search driver of its own (its searchers stay in memory between
    cycles), the experiments' ending, the unmanaged runs, and the proxy's registration."""
    searches = SearchDriver(settings)
    # The master's own ports are never a service's (settings do not change while it runs).
    ports = protected_ports(settings)
    return CycleSteps(
        search=searches.step,
        end_experiments=end_stopped_experiments,
        linked_jobs=unmanaged.linked_job_refs,
        end_lost_runs=unmanaged.end_lost_runs,
        register_services=lambda: register_services(sessions, backend, protected_ports=ports),
    )


def make_reconciler(settings: MasterSettings, sessions: sessionmaker[Session],
                    backend: Backend, steps: CycleSteps | None = None) -> Reconciler:
    """The master's reconciler with its real steps (``steps``: a test's own instead)."""
    return Reconciler(settings, sessions, backend,
                      steps or cycle_steps(settings, sessions, backend))
