"""One scrape's answer: every process's counters, then the database's gauges."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client import multiprocess as mp
from sqlalchemy.orm import Session

# Imported for its side effect too: the counters exist (at zero) before anything counts.
from hpcdet.master.monitoring import instruments  # noqa: F401
from hpcdet.master.monitoring.database import DatabaseCollector
from hpcdet.master.monitoring.multiproc import enabled

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def render(session: Session) -> bytes:
    """The Prometheus text format of every metric (docs/admin/metrics.md)."""
    return generate_latest(_process_registry()) + generate_latest(_database_registry(session))


def _process_registry() -> CollectorRegistry:
    """The counters: summed over the master's processes' files when it runs as a master
    (multiprocess mode), this process's own otherwise (a test's app)."""
    if not enabled():
        return REGISTRY
    registry = CollectorRegistry()
    mp.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return registry


def _database_registry(session: Session) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector(session))
    return registry
