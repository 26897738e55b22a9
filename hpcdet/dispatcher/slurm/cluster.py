"""The Slurm backend's cluster-wide side: the queue, the partitions, updates of queued jobs.

Kept apart from job rendering and polling (:mod:`.backend`): :class:`SlurmClusterMixin`
gives :class:`~hpcdet.dispatcher.slurm.backend.SlurmBackend` the queue and pool methods of
:class:`~hpcdet.dispatcher.base.Backend`.
"""

from __future__ import annotations

from collections.abc import Sequence

from hpcdet.dispatcher.commands import Runner
from hpcdet.dispatcher.pools import PartitionInfo
from hpcdet.dispatcher.queue import (
    JobUpdate,
    OrderImpossibleError,
    QueueEntry,
    split_operator_nice,
)
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.slurm import reasons
from hpcdet.dispatcher.slurm.partitions import read_partitions
from hpcdet.dispatcher.slurm.queue import NICE_LIMIT, read_queue, update_job, update_job_as
from hpcdet.dispatcher.slurm.sbatch_args import check_args

# How far above (below) the other job's priority ahead_of (behind_of) puts a job. Slurm
# truncates each job's priority to an integer when it recomputes them (every
# PriorityCalcPeriod), so a gap of 1 can shrink to a tie (and a tie goes to the lower job
# id); a gap of 2 stays at least 1 while both jobs' factors move alike.
ORDER_MARGIN = 2


class SlurmClusterMixin:
    """``squeue``, ``sinfo`` and ``scontrol update`` for the master's queue and pool views."""

    runner: Runner
    runas: RunAs | None
    squeue: str
    sinfo: str = "sinfo"
    scontrol: str = "scontrol"

    def read_queue(self) -> list[QueueEntry]:
        """Every pending and running job of every user: one ``squeue``, Slurm's order."""
        return read_queue(self.runner, squeue=self.squeue)

    def read_pools(self) -> list[PartitionInfo]:
        """Every partition with its nodes and pending jobs: one ``sinfo``, one ``squeue``."""
        return read_partitions(self.runner, sinfo=self.sinfo, squeue=self.squeue)

    def update_job(self, job_id: str, update: JobUpdate, owner: str | None = None) -> None:
        """One ``scontrol update`` (as ``owner`` through the run-as helper when given).

        A negative nice (raising the job above others) only Slurm operators may set, so the
        service account (a Slurm operator, docs/admin/security.md) sets that part itself.
        """
        if self.runas is None or not owner:
            update_job(self.runner, job_id, update, scontrol=self.scontrol)
            return
        own, operator = split_operator_nice(update)
        if not own.empty:
            update_job_as(self.runas, owner, job_id, own)
        if operator is not None:
            update_job(self.runner, job_id, operator, scontrol=self.scontrol)

    def nice_to_pass(self, entry: QueueEntry, other: QueueEntry, *, ahead: bool) -> int:
        """The nice that puts ``entry``'s priority :data:`ORDER_MARGIN` above (``ahead``) or
        below ``other``'s: priority = factors - nice, so each point of nice is one point."""
        target = other.priority + ORDER_MARGIN if ahead else other.priority - ORDER_MARGIN
        if target < 1:
            raise OrderImpossibleError(
                f"job {other.job_id} has Slurm priority {other.priority}: a job behind it "
                "would need a priority below 1, which Slurm does not give a pending job")
        nice = entry.nice + entry.priority - target
        if abs(nice) > NICE_LIMIT:
            raise OrderImpossibleError(f"job {entry.job_id} would need nice {nice}, beyond "
                                       f"Slurm's limit of +-{NICE_LIMIT}")
        return nice

    def reason_words(self, reason: str | None) -> str | None:
        """Slurm's pending reason in words (:mod:`hpcdet.dispatcher.slurm.reasons`)."""
        return reasons.reason_words(reason)

    def check_job_args(self, args: Sequence[str], path: str) -> tuple[str, ...]:
        """``slurm.sbatch_args`` checked (:mod:`hpcdet.dispatcher.slurm.sbatch_args`)."""
        return check_args(args, path)
