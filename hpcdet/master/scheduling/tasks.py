"""Tracking command tasks (``det sbatch``): statuses, kills, logs and queue positions.

The reconciler asks Slurm about the jobs of active tasks in the same single
``Backend.poll`` as the trials' jobs (:func:`active_task_refs`, then
:func:`apply_task_statuses`), and cancels the jobs of killed tasks with one
``Backend.cancel`` per cycle (:func:`cancel_killed_tasks`). API requests never run a Slurm
command: logs are read from the task's job directory, queue positions from the ``queue``
snapshot.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend, JobPhase, JobRef, JobStatus
from hpcdet.dispatcher.jobdir import TASK_ERROR_LOG, TASK_OUTPUT_LOG
from hpcdet.dispatcher.transport import Transport
from hpcdet.errors import SchedulerError
from hpcdet.jobfiles import UnsafeFileError
from hpcdet.master.db import session_scope
from hpcdet.master.errors import Conflict, Invalid
from hpcdet.master.models import CommandTask, utcnow
from hpcdet.master.queue.job_queue import entries_of
from hpcdet.master.queue.snapshots import QUEUE, load_snapshot
from hpcdet.master.scheduling.job_outcomes import Ending, job_ending
from hpcdet.master.transitions import transition
from hpcdet.states import State

log = logging.getLogger(__name__)

ACTIVE_STATES = (State.QUEUED.value, State.RUNNING.value, State.STOPPING_KILLED.value)
# How a job that left Slurm's queue ends its task.
# A task ends as sbatch users expect: a cancelled job is CANCELED, whoever cancelled it.
_END_STATES: Mapping[Ending, State] = {Ending.COMPLETED: State.COMPLETED,
                                       Ending.CANCELLED: State.CANCELED}
LOG_STREAMS = {"output": TASK_OUTPUT_LOG, "error": TASK_ERROR_LOG}
MAX_LOG_CHUNK = 1024 * 1024


# ---- polling -------------------------------------------------------------------------------


def active_task_refs(session: Session) -> list[tuple[int, JobRef]]:
    """``(task id, job)`` for every task whose job Slurm may still be running."""
    rows = session.execute(select(CommandTask.id, CommandTask.job_id, CommandTask.job_dir)
                           .where(CommandTask.state.in_(ACTIVE_STATES),
                                  CommandTask.job_id.is_not(None))).all()
    return [(task_id, JobRef(str(job_id), job_dir)) for task_id, job_id, job_dir in rows]


def apply_task_statuses(sessions: sessionmaker[Session], refs: Sequence[tuple[int, JobRef]],
                        statuses: Mapping[str, JobStatus]) -> None:
    """Apply one poll's statuses to the tasks of ``refs``, in one transaction."""
    if not refs:
        return
    with session_scope(sessions) as session:
        tasks = session.scalars(select(CommandTask).where(
            CommandTask.id.in_([task_id for task_id, _ in refs]),
            CommandTask.state.in_(ACTIVE_STATES))).all()
        for task in tasks:
            status = statuses.get(str(task.job_id))
            if status is not None:
                apply_status(session, task, status)


def apply_status(session: Session, task: CommandTask, status: JobStatus) -> None:
    """Record what the scheduler says of the task's job and move the task's state along."""
    task.native_state, task.reason = status.native_state or None, status.reason
    task.nodes = status.nodes or task.nodes
    if status.exit_code is not None:
        task.exit_code = status.exit_code
    job = f"job {task.job_id}"
    if status.phase.is_terminal:
        end = _END_STATES.get(job_ending(status), State.ERROR)
        transition(session, task, end, cause=f"{job} ended {_ending(status)}")
    elif status.phase is JobPhase.RUNNING and task.state == State.QUEUED.value:
        task.started_at = task.started_at or utcnow()
        transition(session, task, State.RUNNING, cause=f"{job} running on {status.nodes}")
    elif status.phase is JobPhase.PENDING and task.state == State.RUNNING.value:
        transition(session, task, State.QUEUED, cause=f"{job} requeued ({status.reason})")


def _ending(status: JobStatus) -> str:
    words = status.native_state or status.phase.value
    if status.phase is JobPhase.MISSING:
        words = "unknown to the scheduler (no longer in its queue, history or accounting)"
    return words if status.exit_code is None else f"{words}, exit code {status.exit_code}"


# ---- killing -------------------------------------------------------------------------------


def request_kill(session: Session, task: CommandTask, actor: str) -> None:
    """Mark the task killed; the reconciler cancels its job within a cycle."""
    state = State(task.state)
    if state is State.STOPPING_KILLED:
        return
    if state.is_terminal:
        raise Conflict("conflict", f"task {task.id} already ended {task.state}")
    transition(session, task, State.STOPPING_KILLED, cause="kill requested", actor=actor)
    task.cancel_requested = True


def _cancel_groups(backend: Backend, tasks: Sequence[CommandTask]) -> dict[str | None, list[str]]:
    """Job ids by the user that cancels them: each owner in run-as-owner mode, else one."""
    if getattr(backend, "runas", None) is None:
        return {None: [str(task.job_id) for task in tasks]}
    groups: dict[str | None, list[str]] = {}
    for task in tasks:
        groups.setdefault(task.owner, []).append(str(task.job_id))
    return groups


def cancel_killed_tasks(sessions: sessionmaker[Session], backend: Backend) -> int:
    """``scancel`` the jobs of killed tasks not cancelled yet, with one command for all."""
    with session_scope(sessions) as session:
        tasks = session.scalars(select(CommandTask).where(
            CommandTask.cancel_requested, CommandTask.cancel_sent_at.is_(None),
            CommandTask.state == State.STOPPING_KILLED.value,
            CommandTask.job_id.is_not(None))).all()
        if not tasks:
            return 0
        try:
            for owner, ids in _cancel_groups(backend, tasks).items():
                backend.cancel(ids, owner=owner)
        except SchedulerError:  # the next cycle tries again
            log.exception("cancelling the jobs of killed tasks failed")
            return 0
        for task in tasks:
            task.cancel_sent_at = utcnow()
        return len(tasks)


# ---- reading -------------------------------------------------------------------------------


def queue_positions(session: Session, tasks: Iterable[CommandTask]) -> dict[int, int]:
    """Each active task's place in its partition's queue (1 = next; running jobs first),
    from the ``queue`` snapshot; tasks it does not show are left out."""
    found = load_snapshot(session, QUEUE)
    if found is None:
        return {}
    entries = entries_of(found[0])
    by_job = {entry.job_id: entry for entry in entries}
    positions: dict[int, int] = {}
    for task in tasks:
        mine = by_job.get(str(task.job_id))
        if mine is None or task.state not in ACTIVE_STATES:
            continue
        parts = set(mine.partitions)
        line = [e.job_id for e in entries if parts & set(e.partitions)]
        positions[task.id] = line.index(mine.job_id) + 1
    return positions


def task_json(task: CommandTask, position: int | None = None) -> dict[str, Any]:
    """The task as the API shows it (docs/api.md)."""
    return {
        "id": task.id, "name": task.name, "owner": task.owner, "state": task.state,
        "workspace_id": task.workspace_id,
        "job_id": task.job_id, "pool": task.pool, "partition": task.partition,
        "account": task.account, "queue_position": position,
        "native_state": task.native_state, "reason": task.reason,
        "exit_code": task.exit_code, "nodes": task.nodes,
        "options": task.options, "args": task.args, "cwd": task.cwd, "workdir": task.workdir,
        "output": task.output_pattern, "error": task.error_pattern, "job_dir": task.job_dir,
        "log_streams": ["output", "error"] if task.error_pattern else ["output"],
        "cancel_requested": task.cancel_requested,
        "kind": task.kind, "config": task.config,
        "submitted_at": _time(task.submitted_at), "started_at": _time(task.started_at),
        "ended_at": _time(task.ended_at),
    }  # fmt: skip


def _time(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)).isoformat()


def read_log(task: CommandTask, stream: str, *, offset: int = 0,
             limit: int = MAX_LOG_CHUNK, tail_lines: int | None = None,
             files: Transport) -> dict[str, Any]:
    """Bytes ``offset..offset+limit`` of one of the task's log files, as text.

    With ``tail_lines`` the read starts at the beginning of the last ``tail_lines`` lines.
    The text never ends inside a UTF-8 character: ``next_offset`` is where to go on from.
    ``files`` reaches the job directory (the backend's transport).
    """
    name = LOG_STREAMS.get(stream)
    if name is None:
        raise Invalid("bad_request", f"stream: must be one of {', '.join(LOG_STREAMS)}")
    path = Path(task.job_dir) / name
    size = _size(path, files)
    if tail_lines is not None:
        offset = tail_offset(path, size, tail_lines, files=files)
    offset = min(offset, size)
    data = (_read_bytes(path, offset, min(limit, MAX_LOG_CHUNK), files) if size > offset
            else b"")
    data = _whole_characters(data) if offset + len(data) < size else data
    return {"task_id": task.id, "stream": stream, "offset": offset,
            "next_offset": offset + len(data), "size": size,
            "text": data.decode("utf-8", errors="replace"), "state": task.state}


def _size(path: Path, files: Transport) -> int:
    """The log's size; 0 before the job wrote it; 409 if it is a link or not a file."""
    try:
        return files.file_size(str(path)) or 0
    except UnsafeFileError as exc:
        raise Conflict("conflict", f"the task's log {exc.filename} {exc.strerror}") from None


def _read_bytes(path: Path, offset: int, limit: int, files: Transport) -> bytes:
    return files.read_file(str(path), offset, limit)  # never a link the job put there


def _whole_characters(data: bytes) -> bytes:
    """``data`` without a UTF-8 sequence cut at its end (the next read starts there)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data
        if byte >= 0xC0:  # a lead byte: keep it only if its sequence is complete
            length = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if back >= length else data[:-back]
    return data


def tail_offset(path: Path, size: int, lines: int, window: int = MAX_LOG_CHUNK, *,
                files: Transport) -> int:
    """Where the last ``lines`` lines of the file start (looking back at most ``window``)."""
    if lines <= 0 or size == 0:
        return size
    start = max(0, size - window)
    data = _read_bytes(path, start, size - start, files)
    end = len(data) - 1 if data.endswith(b"\n") else len(data)
    cut = end
    for _ in range(lines):
        cut = data.rfind(b"\n", 0, cut)
        if cut < 0:
            return start
    return start + cut + 1
