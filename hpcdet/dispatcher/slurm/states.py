"""Slurm's job states (squeue %T, sacct State) and the neutral phase each one means."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from hpcdet.dispatcher.base import JobPhase

# Every native state Slurm 22.05 to 25.11 reports (squeue %T, sacct State; job_state_string in
# src/common/slurm_protocol_defs.c), mapped onto one phase.
SLURM_STATES: Mapping[str, JobPhase] = MappingProxyType({
    "PENDING": JobPhase.PENDING,
    "CONFIGURING": JobPhase.PENDING,  # nodes booting for the job; nothing runs yet
    "REQUEUED": JobPhase.PENDING,
    "REQUEUE_HOLD": JobPhase.PENDING,
    "EXPEDITING": JobPhase.PENDING,  # 25.11: an expedited requeue under way (--requeue=expedite)
    "REQUEUE_FED": JobPhase.PENDING,
    "RESV_DEL_HOLD": JobPhase.PENDING,
    "SPECIAL_EXIT": JobPhase.PENDING,  # requeued and held after an exit code asked for it
    "RUNNING": JobPhase.RUNNING,
    "SUSPENDED": JobPhase.RUNNING,  # keeps its allocation; resumes in place
    "STOPPED": JobPhase.RUNNING,
    "COMPLETING": JobPhase.RUNNING,  # still cleaning up; its result is not final yet
    "SIGNALING": JobPhase.RUNNING,
    "STAGE_OUT": JobPhase.RUNNING,
    "RESIZING": JobPhase.RUNNING,
    "COMPLETED": JobPhase.COMPLETED,
    "FAILED": JobPhase.FAILED,
    "CANCELLED": JobPhase.CANCELLED,
    "REVOKED": JobPhase.CANCELLED,  # a federation sibling ran it instead
    "TIMEOUT": JobPhase.TIMEOUT,
    "DEADLINE": JobPhase.TIMEOUT,
    "PREEMPTED": JobPhase.PREEMPTED,
    "NODE_FAIL": JobPhase.NODE_FAIL,
    "OUT_OF_MEMORY": JobPhase.OUT_OF_MEMORY,
    "BOOT_FAIL": JobPhase.BOOT_FAIL,
})  # fmt: skip


def phase_of(native_state: str) -> JobPhase:
    """The phase for a native state; ``"CANCELLED by 0"`` counts as ``CANCELLED``."""
    words = native_state.split()
    return SLURM_STATES.get(words[0], JobPhase.UNKNOWN) if words else JobPhase.UNKNOWN
