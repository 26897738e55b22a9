"""PBS's queue and pools as hpcdet shows them, and ``qmove``/``qalter -p`` of a queued job.

* :func:`parse_queue`: ``qstat -t -f -F json`` (every user's unfinished jobs; without ``-x``
  finished ones stay out) as :class:`QueueEntry` rows. ``-t`` lists each subjob of a job
  array (``12[3].server``) beside the array itself (``12[].server``, state ``B`` once one
  has begun): the subjobs are the rows, the array's own record is left out. A job's queue
  is its ``partition``; hpcdet's tag is the job variable ``HPCDET_JOB_TAG`` in
  ``Variable_List``; ``Priority`` is the job's ``-p`` and ``nice`` the nice that maps to it
  (:func:`render.nice_of`). Time used and the limit are ``resources_used.walltime`` and
  ``Resource_List.walltime``; a waiting job's expected start is ``estimated.start_time``,
  present only where the scheduler computes estimates (not on the dev server's defaults).
* :func:`queue_order`: running jobs first, then waiting ones by ``Priority`` (highest
  first), then ``qtime`` and id: the order PBS's default FIFO scheduler considers them in
  within a queue.
* :func:`parse_pools`: ``qstat -B -f -F json`` (the default queue), ``qstat -Q -f -F json``
  (queues; ``state_count`` says how many jobs wait) and ``pbsnodes -a -F json`` (nodes).
  A node whose ``queue`` attribute names a queue serves that queue only; every queue
  without such nodes gets all unassociated nodes.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hpcdet.dispatcher.pbs import reasons
from hpcdet.dispatcher.pbs.render import TAG_VARIABLE, nice_of
from hpcdet.dispatcher.pbs.status import STATES, nodes_of
from hpcdet.dispatcher.pools import NodeInfo, PartitionInfo
from hpcdet.dispatcher.queue import QueueEntry
from hpcdet.errors import SchedulerError

_WAITING = ("Queued", "Held", "Waiting", "Transit")
# PBS node states (a node may have several: "down,offline") as the words NodeInfo.up reads.
_NODE_STATES = (("state-unknown", "unknown"), ("unresolvable", "unknown"), ("stale", "down"),
                ("down", "down"), ("offline", "drained"), ("job-exclusive", "allocated"),
                ("resv-exclusive", "allocated"), ("job-busy", "allocated"), ("busy", "allocated"),
                ("provisioning", "future"))


class UnparseableJsonError(SchedulerError):
    """qstat/pbsnodes printed JSON hpcdet cannot read (openpbs/openpbs#2541: job variables
    holding shell functions are not escaped)."""

    def __init__(self, argv: Sequence[str], stdout: str, error: ValueError) -> None:
        super().__init__(argv, 0, stdout[:2000], "")
        self.args = (f"could not read {argv[0]} JSON: {error}",)


def load_json(argv: Sequence[str], stdout: str, key: str) -> dict[str, Any]:
    """``stdout``'s object under ``key`` (absent when there is nothing to list)."""
    try:
        data = json.loads(stdout, strict=False)  # control characters in free text are kept
    except ValueError as exc:
        raise UnparseableJsonError(argv, stdout, exc) from exc
    section = data.get(key, {}) if isinstance(data, dict) else {}
    return section if isinstance(section, dict) else {}


def parse_queue(jobs: Mapping[str, Mapping[str, Any]]) -> list[QueueEntry]:
    """The ``Jobs`` object of ``qstat -f -F json`` as entries, in :func:`queue_order`."""
    return queue_order([_entry(job_id, record) for job_id, record in jobs.items()
                        if record.get("job_state") in STATES and "[]" not in job_id])


def _entry(job_id: str, record: Mapping[str, Any]) -> QueueEntry:
    resources = record.get("Resource_List") or {}
    variables = record.get("Variable_List") or {}
    priority = _count(record.get("Priority"))
    pending = record.get("job_state") in ("Q", "H", "W", "T", "M")
    ngpus = _count(resources.get("ngpus"))
    return QueueEntry(
        job_id=job_id, partition=str(record.get("queue", "")),
        name=str(record.get("Job_Name", "")),
        user=str(record.get("Job_Owner", "")).partition("@")[0],
        state=str(record.get("job_state", "")),
        reason=(str(record["comment"]) if pending and record.get("comment") else None),
        priority=priority, nice=nice_of(priority), qos=None,
        account=_text(record.get("Account_Name")), submit_time=_time(record.get("qtime")),
        tasks=_tasks(resources), cpus=_count(resources.get("ncpus")),
        nodes=_count(resources.get("nodect")),
        tres={"gres/gpu": str(ngpus)} if ngpus else {},
        comment=_text(variables.get(TAG_VARIABLE) if isinstance(variables, dict) else None),
        pending=pending,
        node_names=() if pending else _hosts(record.get("exec_host")),
        time_used=_walltime((record.get("resources_used") or {}).get("walltime")),
        time_limit=_walltime(resources.get("walltime")),
        expected_start=_expected_start(record) if pending else None,
    )  # fmt: skip


def _walltime(value: object) -> int | None:
    """PBS's ``HH:MM:SS`` (hours may pass 24) or plain seconds, in seconds; None if unset."""
    parts = str(value).split(":") if value is not None else []
    if not parts or len(parts) > 3 or not all(part.isdigit() for part in parts):
        return None
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + int(part)
    return seconds


def _expected_start(record: Mapping[str, Any]) -> str | None:
    """``estimated.start_time`` (the scheduler computes it when the server asks for
    estimates, e.g. with ``strict_ordering`` and backfill): a ctime string or seconds
    since the epoch; None when absent or 0."""
    estimated = record.get("estimated")
    value = estimated.get("start_time") if isinstance(estimated, dict) else None
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return dt.datetime.fromtimestamp(int(value), dt.UTC).astimezone().isoformat() \
            if int(value) > 0 else None
    start = _time(value)
    return start if start and start[:1].isdigit() else None  # "N/A", "Unknown": none


def queue_order(entries: Sequence[QueueEntry]) -> list[QueueEntry]:
    """Running first, then waiting jobs by priority (highest first), qtime and id."""
    def key(entry: QueueEntry) -> tuple[int, int, str, int]:
        return (int(entry.pending), -entry.priority if entry.pending else 0,
                entry.submit_time or "", _id_number(entry.job_id))
    return sorted(entries, key=key)


def _tasks(resources: Mapping[str, Any]) -> int:
    """MPI ranks: the sum over ``select`` chunks of count x ``mpiprocs`` (1 if unset)."""
    total = 0
    for chunk in str(resources.get("select", "")).split("+"):
        words = chunk.split(":")
        count = int(words[0]) if words[0].isdigit() else 1
        values = dict(w.partition("=")[::2] for w in words if "=" in w)
        procs = values.get("mpiprocs", "1")
        total += count * (int(procs) if procs.isdigit() else 1)
    return total or _count(resources.get("nodect"))


def nice_to_pass(entry: QueueEntry, other: QueueEntry, *, ahead: bool) -> int:
    """The nice (``-p`` = -nice) that puts ``entry`` just ahead of or behind ``other``:
    one priority step past it; equal priorities fall back to qtime, so a step is needed."""
    return nice_of(other.priority + (1 if ahead else -1))


def reason_words(reason: str | None) -> str | None:
    """See :func:`hpcdet.dispatcher.pbs.reasons.reason_words`."""
    return reasons.reason_words(reason)


def parse_pools(server: Mapping[str, Any], queues: Mapping[str, Mapping[str, Any]],
                nodes: Mapping[str, Mapping[str, Any]]) -> list[PartitionInfo]:
    """One :class:`PartitionInfo` per queue, with its nodes and waiting jobs."""
    default = next((str(s.get("default_queue", "")) for s in server.values()
                    if isinstance(s, dict)), "")
    infos = {name: _node(name, record) for name, record in nodes.items()}
    owners = {name: str(record.get("queue", "")) for name, record in nodes.items()}
    free = tuple(info for name, info in infos.items() if not owners[name])
    pools = []
    for name, record in queues.items():
        own = tuple(info for node, info in infos.items() if owners[node] == name)
        pools.append(PartitionInfo(name, name == default, own or free,
                                   jobs_pending=_waiting(record.get("state_count"))))
    return pools


def _node(name: str, record: Mapping[str, Any]) -> NodeInfo:
    available = record.get("resources_available") or {}
    assigned = record.get("resources_assigned") or {}
    cpus_used = _count(assigned.get("ncpus"))
    model = available.get("gpu_model")
    return NodeInfo(name, _node_state(str(record.get("state", "")), cpus_used),
                    cpus=_count(available.get("ncpus")), cpus_allocated=cpus_used,
                    gpus=_count(available.get("ngpus")), gpus_used=_count(assigned.get("ngpus")),
                    gpu_types=(str(model),) if model else ())


def _node_state(state: str, cpus_used: int) -> str:
    """PBS's node state as the Slurm word :class:`NodeInfo` knows."""
    for pbs_word, word in _NODE_STATES:
        if pbs_word in state.split(","):
            return word
    if state == "free":
        return "mixed" if cpus_used else "idle"
    return state or "unknown"


def _waiting(state_count: object) -> int:
    """``Transit:0 Queued:3 Held:1 Waiting:0 Running:2 ...`` -> 4 waiting."""
    counts = dict(item.partition(":")[::2] for item in str(state_count or "").split())
    return sum(int(counts[k]) for k in _WAITING if counts.get(k, "").isdigit())


def _count(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.lstrip("-").isdigit() else 0


def _hosts(exec_host: object) -> tuple[str, ...]:
    """The hosts of a running job's ``exec_host`` (``pbsn1/0*2+pbsn2/0*2``), once each."""
    hosts = nodes_of(_text(exec_host))
    return tuple(hosts.split(",")) if hosts else ()


def _text(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def _time(value: object) -> str | None:
    """qstat's ``Wed Nov 25 20:29:36 2026`` (local time) as ISO 8601 with the zone."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return dt.datetime.strptime(value, "%a %b %d %H:%M:%S %Y").astimezone().isoformat()
    except ValueError:
        return value


def _id_number(job_id: str) -> int:
    digits = re.match(r"\d+", job_id)
    return int(digits.group()) if digits else 0
