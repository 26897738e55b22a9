"""The controller's queue read through pyslurm (``resource_manager.slurm_api: pyslurm``).

One ``pyslurm.Jobs.load()`` per poll cycle (Slurm's ``slurm_load_jobs``, what ``squeue``
itself calls) in place of the ``squeue`` child process; the statuses are the CLI's for the
same jobs, built by the same function (:func:`~hpcdet.dispatcher.slurm.status.queue_status`):
a job array's pending tasks, which the controller keeps as one record, are spread into one
status per task (``123_4``), as ``squeue --array`` prints them. Accounting stays ``sacct``'s
(the ``accounting`` it is given): ``pyslurm.db.Job.exit_code`` folds exit statuses above 128
(143 reads as 15), which sacct's ``ExitCode`` keeps apart, and it was no faster for the few
jobs a cycle asks accounting about (docs/performance.md, "pyslurm or the CLI").

pyslurm is optional and compiled for one Slurm major (``scripts/build-pyslurm``); it is
imported on the first poll, never at the master's import. :meth:`PyslurmStatusReader.problem`
checks, in a child process (a libslurm that cannot read its configuration ends the process
that loaded it), that it imports and matches ``scontrol version``.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from hpcdet.dispatcher.base import JobStatus
from hpcdet.dispatcher.slurm.status import SlurmCommands, displayed_ids, queue_status
from hpcdet.errors import SchedulerError

logger = logging.getLogger(__name__)

# What the child process of problem() prints: pyslurm's version and the Slurm headers'.
_PROBE = ("import json, pyslurm; "
          "print(json.dumps([pyslurm.__version__, list(pyslurm.slurm_api_version())]))")
_REMEDY = ("run scripts/build-pyslurm on this host (it builds pyslurm against the Slurm in "
           "$HPCDET_SLURM_PREFIX and installs it into the master's virtual environment), or "
           "set resource_manager.slurm_api: cli")


class PyslurmStatusReader:
    """``pyslurm.Jobs.load()`` for the queue; ``accounting`` (sacct) for the rest."""

    name = "pyslurm"

    def __init__(self, *, accounting: Callable[[Sequence[str]], dict[str, JobStatus]],
                 commands: SlurmCommands) -> None:
        self._accounting = accounting
        self._commands = commands
        self._pyslurm: ModuleType | None = None

    def in_queue(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        pyslurm = self._module()
        try:
            jobs = pyslurm.Jobs.load()
        except pyslurm.RPCError as exc:
            raise SchedulerError(["pyslurm.Jobs.load"], int(exc.errno or 1), "",
                                 str(exc)) from exc
        wanted = set(job_ids)
        found: dict[str, JobStatus] = {}
        for job in jobs.values():
            for job_id in _displayed_ids(job):
                if job_id in wanted:
                    found[job_id] = queue_status(
                        job_id, job.state, restarts=job.requeue_count,
                        nodes=job.allocated_nodes, reason=job.state_reason)
        return found

    def in_accounting(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        return self._accounting(job_ids)

    def problem(self) -> str | None:
        """pyslurm imports in a child process and is built for ``scontrol version``'s major."""
        runner, scontrol = self._commands.runner, self._commands.scontrol
        try:
            probe = json.loads(runner((sys.executable, "-c", _PROBE), timeout=60))
            version, headers = str(probe[0]), tuple(int(n) for n in probe[1])
        except SchedulerError as exc:
            detail = (exc.stderr.strip().splitlines() or [f"exit status {exc.returncode}"])[-1]
            if "Error" not in detail:  # libslurm's own fatal(): it ends the process
                return (f"resource_manager.slurm_api: pyslurm, but loading pyslurm failed "
                        f"({detail}): SLURM_CONF must name this cluster's slurm.conf, or set "
                        "resource_manager.slurm_api: cli")
            return (f"resource_manager.slurm_api: pyslurm, but {sys.executable} cannot import "
                    f"pyslurm ({detail}): {_REMEDY}")
        except (ValueError, IndexError, TypeError) as exc:
            return (f"resource_manager.slurm_api: pyslurm, but pyslurm's version could not "
                    f"be read ({exc}): {_REMEDY}")
        try:
            said = runner((scontrol, "version"), timeout=60).strip()
        except SchedulerError as exc:
            return (f"resource_manager.slurm_api: pyslurm, but `{scontrol} version` "
                    f"failed ({exc}): the master's PATH and SLURM_CONF must reach this "
                    "host's Slurm")
        here = slurm_version(said)
        if here is None or headers[:2] != here[:2]:
            return (f"resource_manager.slurm_api: pyslurm, but pyslurm {version} is built for "
                    f"Slurm {'.'.join(map(str, headers))} and `{scontrol} version` says "
                    f"{said!r} (pyslurm works only with the Slurm major it was built for): "
                    f"{_REMEDY}")
        return None

    def _module(self) -> ModuleType:
        if self._pyslurm is None:
            # pyslurm's import turns on RTLD_GLOBAL | RTLD_DEEPBIND for every later extension
            # module of the process (for its own modules to share libslurm): put them back.
            flags = sys.getdlopenflags()
            try:
                import pyslurm  # optional: scripts/build-pyslurm
            finally:
                sys.setdlopenflags(flags)
            logger.info("job statuses: the queue through pyslurm %s (Slurm %s), accounting "
                        "through sacct", pyslurm.__version__,
                        ".".join(map(str, pyslurm.slurm_api_version())))
            self._pyslurm = pyslurm
        return self._pyslurm


def slurm_version(text: str) -> tuple[int, ...] | None:
    """``(25, 11, 7)`` from ``scontrol version``'s ``slurm 25.11.7``; None if unreadable."""
    words = text.split()
    parts = words[-1].split(".") if words else []
    if len(parts) < 2 or not all(part.isdigit() for part in parts):
        return None
    return tuple(int(part) for part in parts)


def _displayed_ids(job: Any) -> list[str]:
    """:func:`~hpcdet.dispatcher.slurm.status.displayed_ids` of one pyslurm record (its
    ``array_tasks_waiting`` has the ``%limit`` taken off by pyslurm)."""
    return displayed_ids(job.id, array_id=job.array_id, task_id=job.array_task_id,
                         pending_tasks=job.array_tasks_waiting, het_id=job.heterogeneous_id,
                         het_offset=job.heterogeneous_offset)
