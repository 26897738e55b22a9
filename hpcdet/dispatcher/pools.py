"""Resource pools in scheduler-neutral terms: a pool is a Slurm partition or a PBS queue.

Each backend reads its pools with a bounded number of commands (:meth:`Backend.read_pools`):
their nodes (CPUs, GPUs, what is in use, whether a node can take a job) and how many jobs wait.
"""

from __future__ import annotations

from dataclasses import dataclass

# Node states (Slurm's StateLong; PBS's are mapped onto these words) that take no new job.
_NOT_UP = ("down", "drain", "fail", "inval", "future", "offline", "unknown")
# Slurm appends these to a state (``idle*``: not responding, ``mixed~``: powered off, ...).
_STATE_SUFFIXES = "*~#!%$@^-+"


@dataclass(frozen=True)
class NodeInfo:
    """One node as one partition sees it."""

    name: str
    state: str  # StateLong as sinfo prints it, e.g. "idle", "mixed", "down*", "drained"
    cpus: int
    cpus_allocated: int
    gpus: int
    gpus_used: int
    gpu_types: tuple[str, ...] = ()

    @property
    def up(self) -> bool:
        """True unless the node is down, drained/draining, failing, invalid or not
        responding: a node that can take a new job."""
        base = self.state.rstrip(_STATE_SUFFIXES).lower()
        not_responding = self.state.endswith("*")
        return not not_responding and not base.startswith(_NOT_UP)


@dataclass(frozen=True)
class PartitionInfo:
    """One pool (a Slurm partition, a PBS queue): its nodes and how many jobs wait for it."""

    name: str
    is_default: bool
    nodes: tuple[NodeInfo, ...]
    jobs_pending: int = 0


