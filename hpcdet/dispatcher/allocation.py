"""Allocation mode's batch job in scheduler-neutral terms (docs/allocation-mode.md).

An allocation is one batch job that holds ``slots`` ranks for ``time_limit`` and runs an
agent (:mod:`hpcdet.launch.allocation_agent`) in its batch step; the agent starts the
experiment's trials as steps inside it. Rendering is pure, like :meth:`Backend.render`;
the master submits the result with the backend's own ``submit``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hpcdet.dispatcher import registry
from hpcdet.dispatcher.base import UnsupportedError

if TYPE_CHECKING:
    from hpcdet.dispatcher.base import Backend, Submission


@dataclass(frozen=True)
class AllocationSpec:
    """Everything needed to render one allocation job; values are checked at render time."""

    name: str
    job_dir: str
    slots: int
    time_limit: str
    # The agent's argv, run in the batch step.
    command: tuple[str, ...]
    cpus_per_slot: int = 1
    gpus_per_slot: int = 0
    gpu_type: str | None = None
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    wckey: str | None = None
    comment: str | None = None
    nice: int | None = None
    exclude: str | None = None
    sbatch_args: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    script_name: str = "allocation.sh"


def render_allocation(backend: Backend, spec: AllocationSpec) -> Submission:
    """The allocation job of ``spec`` for ``backend``'s scheduler; no side effects."""
    plugin = registry.scheduler(backend.name)
    module = plugin.module("allocation") if plugin.capabilities.allocation.supported else None
    if module is None:
        raise UnsupportedError(f"the {backend.name} backend cannot run allocation mode")
    submission: Submission = module.render_allocation(backend, spec)
    return submission
