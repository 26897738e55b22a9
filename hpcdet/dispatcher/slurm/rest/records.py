"""slurmrestd's JSON records (data_parser v0.0.44) as the values the CLI parsers give.

Each reader here mirrors one CLI parser of the Slurm package so that the master cannot tell
the paths apart: a controller record (``GET /slurm/.../jobs``) reads as a ``squeue`` line
(:func:`job_statuses` ~ ``_parse_squeue_line`` with ``--array``; :func:`queue_entry` ~
``queue.parse_queue_line``), an accounting record (``GET /slurmdb/.../jobs``) as an ``sacct``
line (:func:`accounting_statuses`), nodes and partitions as ``sinfo --Node`` lines.

Shapes (seen on 25.11.7): ``job_state`` is a list, the base state and its flags
(``["PENDING"]``, ``["RUNNING", "COMPLETING"]``); numbers are ``{"set", "infinite",
"number"}`` objects; an array's tasks not started yet are one record whose
``array_task_string`` is ``2-3%2``; a running or finished task is its own record.
"""

from __future__ import annotations

import datetime as dt
import logging
import pwd
from collections.abc import Iterable, Mapping
from typing import Any

from hpcdet.dispatcher.base import JobPhase, JobStatus
from hpcdet.dispatcher.pools import NodeInfo, PartitionInfo
from hpcdet.dispatcher.queue import QueueEntry
from hpcdet.dispatcher.slurm.partitions import gpu_count
from hpcdet.dispatcher.slurm.queue import QUEUE_STATES, parse_tres
from hpcdet.dispatcher.slurm.states import phase_of
from hpcdet.dispatcher.slurm.status import displayed_ids, queue_status
from hpcdet.hostlist import expand_nodelist

logger = logging.getLogger(__name__)

Record = Mapping[str, Any]

# The order in which Slurm's job_state_string() names a state with flags
# (src/common/slurm_protocol_defs.c): the first flag present wins, else the base state.
_FLAG_ORDER = ("COMPLETING", "STAGE_OUT", "CONFIGURING", "EXPEDITING", "RESIZING", "REQUEUED",
               "REQUEUE_FED", "REQUEUE_HOLD", "SPECIAL_EXIT", "STOPPED", "REVOKED",
               "RESV_DEL_HOLD", "SIGNALING")


def number(value: Any) -> int | None:
    """``{"set": true, "number": 5}`` (or a plain int) as 5; None when not set."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Mapping) and value.get("set") and not value.get("infinite"):
        found = value.get("number")
        return found if isinstance(found, int) and not isinstance(found, bool) else None
    return None


def state_word(states: Any) -> str:
    """``["RUNNING", "COMPLETING"]`` as squeue prints it: ``COMPLETING``."""
    words = [str(word) for word in states] if isinstance(states, list) else [str(states)]
    for flag in _FLAG_ORDER:
        if flag in words:
            return flag
    return words[0] if words else "?"


def _text(value: Any, *placeholders: str) -> str | None:
    text = str(value).strip() if value is not None else ""
    return None if text in ("", *placeholders) else text


def job_ids(record: Record) -> list[str]:
    """The ids ``squeue --array`` prints for one controller record
    (:func:`~hpcdet.dispatcher.slurm.status.displayed_ids`)."""
    job_id = number(record.get("job_id"))
    if job_id is None:
        return []
    return displayed_ids(job_id, array_id=number(record.get("array_job_id")),
                         task_id=number(record.get("array_task_id")),
                         pending_tasks=str(record.get("array_task_string") or ""),
                         het_id=number(record.get("het_job_id")),
                         het_offset=number(record.get("het_job_offset")))


def job_statuses(records: Iterable[Record]) -> dict[str, JobStatus]:
    """Every controller record's statuses, by the ids squeue would print (later wins)."""
    found: dict[str, JobStatus] = {}
    for record in records:
        state = state_word(record.get("job_state"))
        for job_id in job_ids(record):
            # The CLI reader's own constructor: the same rules (a requeue counted once the
            # ended execution is over), so the two paths cannot drift apart.
            found[job_id] = queue_status(job_id, state,
                                         restarts=number(record.get("restart_cnt")) or 0,
                                         nodes=_text(record.get("nodes")),
                                         reason=squeue_reason(record))
    return found


def squeue_reason(record: Record) -> str | None:
    """The reason as squeue prints it: slurmctld's description where it wrote one ("job
    requeued in held state"), else the reason's code (``JobHeldUser``)."""
    return (_text(record.get("state_description"))
            or _text(record.get("state_reason"), "None"))


def accounting_statuses(records: Iterable[Record]) -> dict[str, JobStatus]:
    """Accounting records as ``sacct -X`` lines: by ``JobID`` (``5_0``) and ``JobIDRaw``."""
    found: dict[str, JobStatus] = {}
    for record in records:
        raw = number(record.get("job_id"))
        if raw is None:
            continue
        array = record.get("array") or {}
        array_id, task = number(array.get("job_id")) or 0, number(array.get("task_id"))
        if array_id and task is None:
            continue  # an array's tasks that never started: sacct prints 5_[2-3]
        job_id = f"{array_id}_{task}" if array_id else str(raw)
        state_doc = record.get("state") or {}
        state = _sacct_state(state_word(state_doc.get("current")), record)
        status = JobStatus(job_id, phase_of(state), state,
                           reason=_text(state_doc.get("reason"), "None"),
                           exit_code=_exit_code(record.get("exit_code")),
                           nodes=_text(record.get("nodes"), "None assigned"), source="sacct")
        found[job_id] = status
        found.setdefault(str(raw), status)
    return found


def _sacct_state(state: str, record: Record) -> str:
    """sacct prints who cancelled a job: ``CANCELLED by 0`` (a uid)."""
    if state != "CANCELLED":
        return state
    user = _text(record.get("kill_request_user"))
    if user is None:
        return state
    try:
        return f"{state} by {pwd.getpwnam(user).pw_uid}"
    except KeyError:
        return f"{state} by {user}"


def _exit_code(value: Any) -> int | None:
    """sacct's ``rc:signal`` rule: death by a signal reads as 128+signal, as in a shell."""
    if not isinstance(value, Mapping):
        return None
    signal = number((value.get("signal") or {}).get("id"))
    if signal:
        return 128 + signal
    return number(value.get("return_code"))


# ---- the queue and the pools ------------------------------------------------------------


def queue_entries(records: Iterable[Record]) -> list[QueueEntry]:
    """Pending and running jobs as ``read_queue``'s squeue (no ``--array``: an array's
    pending tasks are one entry ``5_[2-3%2]``)."""
    entries = []
    for record in records:
        state = state_word(record.get("job_state"))
        if state not in QUEUE_STATES:
            continue
        try:
            entries.append(queue_entry(record, state))
        except (TypeError, ValueError):
            logger.warning("skipping an unexpected slurmrestd job record: %r",
                           record.get("job_id"))
    return entries


def queue_entry(record: Record, state: str) -> QueueEntry:
    """One controller record as a :class:`QueueEntry`."""
    priority = number(record.get("priority")) or 0
    pending = phase_of(state) is JobPhase.PENDING
    tres = _text(record.get("tres_alloc_str")) or _text(record.get("tres_req_str")) or ""
    return QueueEntry(
        job_id=_queue_id(record), partition=str(record.get("partition") or ""),
        name=str(record.get("name") or ""), user=str(record.get("user_name") or ""),
        state=state, reason=squeue_reason(record), priority=priority,
        nice=int(record.get("nice") or 0), qos=_text(record.get("qos")),
        account=_text(record.get("account")), submit_time=_time(record.get("submit_time")),
        tasks=number(record.get("tasks")) or 0, cpus=number(record.get("cpus")) or 0,
        nodes=number(record.get("node_count")) or 0, tres=parse_tres(tres),
        comment=_text(record.get("comment")), pending=pending,
        held=pending and priority == 0, node_names=_node_names(record.get("nodes")),
        time_used=_time_used(record, pending), time_limit=_time_limit(record),
        expected_start=_time(record.get("start_time")) if pending else None,
    )  # fmt: skip


def _time_used(record: Record, pending: bool) -> int:
    """squeue's TimeUsed: 0 while pending, else the seconds since the start less the time
    suspended."""
    start = number(record.get("start_time"))
    if pending or not start:
        return 0
    suspended = number(record.get("suspend_time")) or 0
    return max(0, int(dt.datetime.now().timestamp()) - start - suspended)


def _time_limit(record: Record) -> int | None:
    """The limit in seconds (slurmrestd gives minutes); None for UNLIMITED or unset."""
    minutes = number(record.get("time_limit"))
    return minutes * 60 if minutes is not None else None


def _queue_id(record: Record) -> str:
    """squeue's JobArrayID: ``7``, ``5_0``, or ``5_[2-3%2]`` for an array's pending tasks."""
    array_id = number(record.get("array_job_id")) or 0
    task = number(record.get("array_task_id"))
    pending = str(record.get("array_task_string") or "")
    if array_id and task is None and pending:
        return f"{array_id}_[{pending}]"
    return job_ids(record)[0]


def _time(value: Any) -> str | None:
    seconds = number(value)
    if not seconds:
        return None
    return dt.datetime.fromtimestamp(seconds).astimezone().isoformat()


def _node_names(value: Any) -> tuple[str, ...]:
    text = _text(value, "(null)", "N/A")
    if text is None:
        return ()
    try:
        return tuple(expand_nodelist(text))
    except ValueError:
        return ()


def partitions(partition_records: Iterable[Record], node_records: Iterable[Record],
               pending: Mapping[str, int]) -> list[PartitionInfo]:
    """Every partition with its nodes, as ``read_partitions`` gives them. slurmrestd
    v0.0.44 does not report which partition is the default (its data_parser skips the
    partition flags), so none is marked: set ``default_compute_resource_pool``."""
    nodes = {str(node.get("name")): _node(node) for node in node_records}
    found = []
    for partition in partition_records:
        name = str(partition.get("name") or "")
        members = _node_names((partition.get("nodes") or {}).get("configured"))
        found.append(PartitionInfo(name, False, tuple(nodes[n] for n in members if n in nodes),
                                   pending.get(name, 0)))
    return sorted(found, key=lambda info: info.name)


def _node(record: Record) -> NodeInfo:
    gpus, types = gpu_count(str(record.get("gres") or ""))
    return NodeInfo(name=str(record.get("name")), state=node_state(record.get("state")),
                    cpus=int(record.get("cpus") or 0),
                    cpus_allocated=int(record.get("alloc_cpus") or 0), gpus=gpus,
                    gpus_used=gpu_count(str(record.get("gres_used") or ""))[0],
                    gpu_types=types)


def node_state(states: Any) -> str:
    """``["IDLE"]``, ``["MIXED", "DRAIN"]`` as sinfo's StateLong: ``idle``, ``draining``."""
    words = [str(word).upper() for word in states] if isinstance(states, list) else []
    base = words[0].lower() if words else "unknown"
    if "DRAIN" in words:
        return "draining" if base in ("allocated", "mixed") else "drained"
    for flag in ("MAINTENANCE", "RESERVED", "COMPLETING", "NOT_RESPONDING"):
        if flag in words:
            return base + ("*" if flag == "NOT_RESPONDING" else "")
    return base


def pending_by_partition(records: Iterable[Record]) -> dict[str, int]:
    """Pending jobs per partition, each array task counted (``squeue --array``)."""
    counts: dict[str, int] = {}
    for record in records:
        if state_word(record.get("job_state")) != "PENDING":
            continue
        for name in dict.fromkeys(str(record.get("partition") or "").split(",")):
            if name:
                counts[name] = counts.get(name, 0) + len(job_ids(record))
    return counts


def node_hosts(records: Iterable[Record], wanted: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """``{name: (name, hostname, address)}`` of the ``wanted`` nodes."""
    names = set(wanted)
    found: dict[str, tuple[str, ...]] = {}
    for record in records:
        name = str(record.get("name") or "")
        if name in names:
            hosts = (name, str(record.get("hostname") or ""), str(record.get("address") or ""))
            found[name] = tuple(dict.fromkeys(h for h in hosts if h))
    return found
