"""How the Slurm backend reads its jobs' statuses once per poll cycle: the seam.

A :class:`StatusReader` answers for the controller's queue (running, queued, and ended
within ``MinJobAge``) and for accounting (older jobs); the backend asks the queue for all
active jobs, then accounting for those the queue no longer knows
(:meth:`~hpcdet.dispatcher.slurm.backend.SlurmBackend._statuses`). Two readers, chosen by
master.yaml's ``resource_manager.slurm_api``:

* ``cli`` (:class:`CliStatusReader`, the default): one ``squeue``, then one ``sacct``;
* ``pyslurm`` (:class:`~hpcdet.dispatcher.slurm.pyslurm_status.PyslurmStatusReader`): the
  controller's job table through pyslurm's C API, where a matching pyslurm is installed
  (``scripts/build-pyslurm``); the same statuses as ``cli`` for the same jobs.

Both build their statuses with :func:`queue_status` so that they cannot drift apart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from hpcdet.dispatcher.base import JobPhase, JobStatus
from hpcdet.dispatcher.commands import Runner
from hpcdet.dispatcher.slurm import PLUGIN
from hpcdet.dispatcher.slurm.arrays import task_indices
from hpcdet.dispatcher.slurm.states import phase_of
from hpcdet.errors import SchedulerError

logger = logging.getLogger(__name__)

# resource_manager.slurm_api's values, the default first.
SLURM_APIS = PLUGIN.status_apis

# --Format with "|" after each field (no padding); the reason last, as the only field
# that could hold a "|".
# JobArrayID: an array task as <array id>_<index> (JobID would print its raw id), a plain
# job as its id.
SQUEUE_FORMAT = "JobArrayID:|,State:|,RestartCnt:|,NodeList:|,Reason:|"
SACCT_FORMAT = "JobID,JobIDRaw,State,ExitCode,NodeList,Reason"
# How squeue shows a job Slurm requeued and held after its execution failed (see
# held_after_failure); the reason is slurmctld's description, which squeue prints in place
# of the reason's code (JobHeldUser).
HELD_STATE, HELD_REASON = "REQUEUE_HOLD", "job requeued in held state"
# States in which the execution Slurm counted a requeue for is not settled yet.
_UNSETTLED = frozenset({"COMPLETING", "EXPEDITING"})

# Parses one output line into (id, status) pairs, or None for a line it cannot read.
_LineParser = Callable[[str], "list[tuple[str, JobStatus]] | None"]


class StatusReader(Protocol):
    """Where a poll cycle's statuses come from (ids a source knows nothing of left out)."""

    name: str

    def in_queue(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """What the controller's queue says of ``job_ids``: one request."""

    def in_accounting(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """What accounting says of ``job_ids`` (empty where it is off): one request."""

    def problem(self) -> str | None:
        """Why this reader cannot work on this host (one line saying what to do); None
        when it can. The master checks it before it starts."""


class SlurmCommands(Protocol):
    """The backend's side the CLI reader uses (read at each call: tests swap the runner)."""

    runner: Runner
    squeue: str
    sacct: str
    scontrol: str

    def only_already_gone(self, stderr: str) -> bool: ...


class CliStatusReader:
    """``squeue`` for the queue, ``sacct`` for accounting: Slurm's text commands."""

    name = "cli"

    def __init__(self, commands: SlurmCommands) -> None:
        self.commands = commands

    def in_queue(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        cmd = self.commands
        # --array: one line per array task (pending tasks otherwise share one line).
        argv = (cmd.squeue, "--noheader", "--states=all", f"--jobs={','.join(job_ids)}",
                f"--Format={SQUEUE_FORMAT}", "--array")  # fmt: skip
        try:
            stdout = cmd.runner(argv)
        except SchedulerError as exc:
            # When it knows none of the ids, squeue fails instead of printing nothing.
            if cmd.only_already_gone(exc.stderr):
                return {}
            raise
        return _rows(stdout, _parse_squeue_line, set(job_ids))

    def in_accounting(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        cmd = self.commands
        argv = (cmd.sacct, "--noheader", "--parsable2", "-X", f"--jobs={','.join(job_ids)}",
                f"--format={SACCT_FORMAT}")  # fmt: skip
        try:
            stdout = cmd.runner(argv)
        except SchedulerError as exc:
            # Accounting is optional (e.g. "Slurm accounting storage is disabled").
            logger.info("sacct unavailable, falling back to exit files: %s", exc)
            return {}
        return _rows(stdout, _parse_sacct_line, set(job_ids))

    def problem(self) -> str | None:
        return None


def displayed_ids(job_id: int, *, array_id: int | None, task_id: int | None,
                  pending_tasks: str | None, het_id: int | None,
                  het_offset: int | None) -> list[str]:
    """The ids ``squeue --array`` prints for one controller record (its JobArrayID field):
    ``5_0`` for an array task, one per task of a record of pending tasks (``5_[2-3%2]``:
    ``5_2``, ``5_3``), ``12+0`` for a het job's component, else the job id. The pyslurm and
    slurmrestd readers name their records with it, as the CLI reader's squeue does."""
    if array_id and task_id is not None:
        return [f"{array_id}_{task_id}"]
    if array_id and pending_tasks:
        return [f"{array_id}_{index}" for index in task_indices(pending_tasks)]
    if het_id:
        return [f"{het_id}+{het_offset or 0}"]
    return [str(job_id)]


def queue_status(job_id: str, state: str, *, restarts: int, nodes: str | None,
                 reason: str | None) -> JobStatus:
    """A job as the controller's queue shows it (squeue's fields, or pyslurm's same ones)."""
    if held_after_failure(state, reason):
        # The hold is how this execution ended, not a requeue: the restart Slurm counted for
        # it is the end the master reads, and the held job is left for it to cancel.
        return JobStatus(job_id, JobPhase.FAILED, state, reason=reason, nodes=nodes or None,
                         source="squeue", restarts=max(restarts - 1, 0), lingering=True)
    return JobStatus(job_id, phase_of(state), state, reason=_none_if(reason or "", "None"),
                     nodes=nodes or None, source="squeue",
                     restarts=_finished_executions(state, restarts))  # fmt: skip


def held_after_failure(state: str, reason: str | None) -> bool:
    """Whether Slurm holds the job because its execution failed: with ``--requeue=expedite``
    (25.11) a non-zero exit requeues the job, and, no epilog having failed, slurmctld holds
    it for ever (state ``REQUEUE_HOLD``, reason "job requeued in held state", priority 0;
    ``batch_requeue_fini`` in src/slurmctld/job_mgr.c) where a plain job ends FAILED. A node
    failure requeues such a job to run at once (``EXPEDITING``), read as any requeue, and an
    administrator's ``scontrol requeuehold`` gives the same reason in state ``PENDING``: a
    requeue, held."""
    return state == HELD_STATE and reason == HELD_REASON


def _rows(stdout: str, parse: _LineParser, wanted: set[str]) -> dict[str, JobStatus]:
    """Parse each output line; keep the statuses of ``wanted`` ids (later lines win)."""
    found: dict[str, JobStatus] = {}
    for line in stdout.splitlines():
        if not line.strip():
            continue
        parsed = parse(line)
        if parsed is None:
            logger.warning("skipping an unexpected Slurm output line: %r", line)
            continue
        for key, status in parsed:
            if key in wanted:
                found[key] = replace(status, job_id=key)
    return found


def _parse_squeue_line(line: str) -> list[tuple[str, JobStatus]] | None:
    """``JobID|State|RestartCnt|NodeList|Reason|``, e.g. ``123|PENDING|0||Priority|``."""
    text = line.strip()
    fields = (text[:-1] if text.endswith("|") else text).split("|", 4)
    if len(fields) != 5 or not fields[2].strip().isdigit():
        return None
    job_id, state, restarts, nodes, reason = (field.strip() for field in fields)
    return [(job_id, queue_status(job_id, state, restarts=int(restarts), nodes=nodes,
                                  reason=reason))]


def _finished_executions(state: str, restarts: int) -> int:
    """Slurm counts a requeue at once, while the ended execution may still be COMPLETING
    (its code checkpointing after SIGTERM). Count it once it is over, so that whoever
    reads the count also sees what that execution left behind (its exit reason).

    EXPEDITING (25.11) is not over either: Slurm has not yet decided whether the job runs
    again (a node failure) or is held (a failed execution, see :func:`held_after_failure`),
    and a restart adopted now would be counted a second time as that failure."""
    return restarts - 1 if state in _UNSETTLED and restarts > 0 else restarts


def _parse_sacct_line(line: str) -> list[tuple[str, JobStatus]] | None:
    """``JobID|JobIDRaw|State|ExitCode|NodeList|Reason``, e.g. ``7|7|FAILED|1:0|n1|None``."""
    fields = line.strip().split("|", 5)
    if len(fields) != 6:
        return None
    job_id, raw_id, state, exit_code, nodes, reason = (field.strip() for field in fields)
    status = JobStatus(job_id, phase_of(state), state, reason=_none_if(reason, "None"),
                       exit_code=_exit_code(exit_code), nodes=_none_if(nodes, "None assigned"),
                       source="sacct")  # fmt: skip
    return [(job_id, status), (raw_id, status)]


def _exit_code(text: str) -> int | None:
    """sacct's ``rc:signal``; death by a signal reads as 128+signal, as in a shell."""
    code, _, signal = text.partition(":")
    if not code.isdigit():
        return None
    return 128 + int(signal) if signal.isdigit() and int(signal) else int(code)


def _none_if(value: str, placeholder: str) -> str | None:
    return None if value in ("", placeholder) else value
