"""Scheduler backends: render a job script (pure), submit it, poll many jobs at once, cancel.

The dispatcher knows schedulers, not the database: it never imports ``hpcdet.master``.
The master builds a :class:`~hpcdet.dispatcher.base.JobSpec`, asks a backend to render and
submit it, and applies what :meth:`~hpcdet.dispatcher.base.Backend.poll` reports.
"""

from hpcdet.dispatcher.base import (
    ArrayLimits,
    ArraySpec,
    Backend,
    BindMount,
    ContainerSpec,
    JobPhase,
    JobRef,
    JobSpec,
    JobStatus,
    Submission,
    UnsupportedError,
    backend_class,
    get_backend,
)

__all__ = [
    "ArrayLimits",
    "ArraySpec",
    "Backend",
    "BindMount",
    "ContainerSpec",
    "JobPhase",
    "JobRef",
    "JobSpec",
    "JobStatus",
    "Submission",
    "UnsupportedError",
    "backend_class",
    "get_backend",
]
