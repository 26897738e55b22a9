"""Slurm's job queue as hpcdet shows it, and ``scontrol update`` of a queued job.

:func:`read_queue` lists every pending and running job of every user (optionally of some
partitions) with ONE ``squeue`` call, in Slurm's scheduling order; :func:`update_job`
changes a job's partition, QOS and nice with ONE ``scontrol update``.

Slurm 22.05 on the dev cluster was checked for the formats parsed here:

* ``squeue --Format`` with a separator after each field. Job names, comments and
  pending reasons are free text, so the separator is the ASCII unit separator (``\\x1f``),
  which no one types into a job name; a line with the wrong number of fields is skipped
  with a warning rather than misread.
* ``PriorityLong`` is the job's priority as an integer (``%Q``); held jobs have 0.
* ``SubmitTime`` is local time without a zone (``2026-11-21T14:00:33``).
* ``tres-alloc`` lists what a running job holds and what a pending job asks for
  (``cpu=2,mem=2000M,node=1,billing=2,gres/gpu=1``).
* ``Comment`` prints ``(null)`` when a job has none.
* Slurm 25.11: ``TimeUsed`` ``0:31``, ``TimeLimit`` ``2:00`` or ``UNLIMITED``, and
  ``StartTime`` of a job pending on Resources ``2026-11-30T14:50:38`` (local, as
  SubmitTime), ``N/A`` when the scheduler has not computed one.
* ``scontrol update`` exits 1 with Slurm's reason on stderr (``Invalid qos specification
  for job 10``); changing ``Nice`` recomputes the job's priority at once.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from hpcdet.dispatcher.base import JobPhase
from hpcdet.dispatcher.commands import Runner
from hpcdet.dispatcher.queue import JobUpdate, JobUpdateRefusedError, QueueEntry
from hpcdet.dispatcher.runas import RunAs
from hpcdet.dispatcher.safety import check_safe
from hpcdet.dispatcher.slurm.states import phase_of
from hpcdet.errors import SchedulerError, ValidationError
from hpcdet.hostlist import expand_nodelist

logger = logging.getLogger(__name__)

SEPARATOR = "\x1f"
# squeue --Format field names, in the order QueueEntry is built from; Comment last.
# JobArrayID: a job's id, an array task's as 12_3, an array's pending tasks as one entry
# 12_[4-9%2] (JobID would give raw ids, unknown to the master).
FIELDS = ("JobArrayID", "Partition", "Name", "UserName", "State", "Reason", "PriorityLong", "Nice",
          "QOS", "Account", "SubmitTime", "NumTasks", "NumCPUs", "NumNodes", "tres-alloc",
          "Comment")
# Read after FIELDS: the nodes a running job holds (``node[1-2]``; empty while pending).
# Optional when parsing, so that lines in the older format still read.
NODE_FIELD = "NodeList"
# Read after NODE_FIELD (optional too): time used and the limit (``1-02:03:04``, ``5:00``,
# ``UNLIMITED``), and the start time: a pending job's expected start as the backfill
# scheduler computed it (what ``squeue --start`` prints; ``N/A`` until it has), a running
# job's actual start. One squeue for all jobs, as before.
TIME_FIELDS = ("TimeUsed", "TimeLimit", "StartTime")
# Every state of a job that is still waiting or holding resources (see slurm.SLURM_STATES).
QUEUE_STATES = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED",
                "REQUEUE_HOLD", "REQUEUE_FED", "SPECIAL_EXIT", "RESV_DEL_HOLD", "SIGNALING",
                "STAGE_OUT", "RESIZING", "STOPPED")
# Slurm keeps nice within +-(2**31 - 3) (NICE_OFFSET - 3 in slurm.h).
NICE_LIMIT = 2**31 - 3
# A job, one task of an array (scontrol update splits the task off its array), or an
# array's pending tasks as squeue lists them (12_[4-9%2]; scontrol takes them without %2).
_UPDATABLE_JOB_ID = re.compile(r"^\d+(?:_\d+|_\[[\d,\-]+(?P<throttle>%\d+)?\])?$")
_NAME = re.compile(r"^[^\s=]+$")
# [D-][H:]M:S or plain seconds, as squeue prints times.
_DURATION = re.compile(r"^(?:\d+-)?\d+(?::\d+){0,2}$")


def squeue_argv(partitions: Sequence[str] | None = None, *,
                squeue: str = "squeue") -> tuple[str, ...]:
    """The one ``squeue`` command :func:`read_queue` runs."""
    fmt = ",".join(f"{name}:{SEPARATOR}" for name in (*FIELDS, NODE_FIELD, *TIME_FIELDS))
    argv = [squeue, "--noheader", f"--states={','.join(QUEUE_STATES)}", f"--Format={fmt}"]
    if partitions:
        names = [check_safe(part, "partition") for part in partitions]
        argv.append(f"--partition={','.join(names)}")
    return tuple(argv)


def read_queue(runner: Runner, *, partitions: Sequence[str] | None = None,
               squeue: str = "squeue") -> list[QueueEntry]:
    """Every pending and running job (all users), in Slurm's scheduling order."""
    stdout = runner(squeue_argv(partitions, squeue=squeue))
    return queue_order(parse_queue(stdout))


def parse_queue(stdout: str) -> list[QueueEntry]:
    """The entries of ``squeue --Format`` output in :data:`FIELDS` order."""
    entries = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        entry = parse_queue_line(line)
        if entry is None:
            logger.warning("skipping an unexpected squeue line: %r", line)
        else:
            entries.append(entry)
    return entries


def parse_queue_line(line: str) -> QueueEntry | None:
    """One line of :func:`squeue_argv` output, or None when it cannot be read."""
    fields = line.rstrip("\n").split(SEPARATOR)
    if fields and fields[-1].strip() == "":
        fields.pop()  # the separator after the last field
    times = [fields.pop().strip() for _ in TIME_FIELDS][::-1] \
        if len(fields) == len(FIELDS) + 1 + len(TIME_FIELDS) else []
    nodelist = fields.pop().strip() if len(fields) == len(FIELDS) + 1 else ""
    if len(fields) != len(FIELDS):
        return None
    values = dict(zip(FIELDS, (value.strip() for value in fields), strict=True))
    try:
        entry = _entry(values)
        entry = replace(entry, node_names=_node_names(nodelist)) if nodelist else entry
        return _with_times(entry, *times) if times else entry
    except ValueError:
        return None


def _with_times(entry: QueueEntry, used: str, limit: str, start: str) -> QueueEntry:
    """``entry`` with squeue's TimeUsed, TimeLimit and (a pending job's) StartTime."""
    return replace(entry, time_used=duration_seconds(used), time_limit=duration_seconds(limit),
                   expected_start=_local_time(start) if entry.pending else None)


def duration_seconds(text: str) -> int | None:
    """squeue's elapsed-time form (``31``, ``0:31``, ``1:02:03``, ``1-02:03:04``) in seconds;
    None for ``UNLIMITED``, ``N/A``, ``INVALID`` or anything unreadable."""
    days, dash, rest = text.strip().rpartition("-")
    parts = rest.split(":")
    if not _DURATION.match(text.strip()) or len(parts) > 3:
        return None
    numbers = [int(part) for part in parts]
    if dash:  # D-H, D-H:M, D-H:M:S
        numbers = (numbers + [0, 0])[:3]
    seconds = 0
    for number in numbers:
        seconds = seconds * 60 + number
    return int(days or 0) * 86400 + seconds


def _entry(values: Mapping[str, str]) -> QueueEntry:
    return QueueEntry(
        job_id=values["JobArrayID"], partition=values["Partition"], name=values["Name"],
        user=values["UserName"], state=values["State"],
        reason=_text(values["Reason"], "None"), priority=int(values["PriorityLong"]),
        nice=int(values["Nice"]), qos=_text(values["QOS"]), account=_text(values["Account"]),
        submit_time=_local_time(values["SubmitTime"]), tasks=_count(values["NumTasks"]),
        cpus=_count(values["NumCPUs"]), nodes=_count(values["NumNodes"]),
        tres=parse_tres(values["tres-alloc"]), comment=_text(values["Comment"], "(null)"),
        pending=phase_of(values["State"]) is JobPhase.PENDING,
        held=phase_of(values["State"]) is JobPhase.PENDING and values["PriorityLong"] == "0",
    )  # fmt: skip


def _node_names(nodelist: str) -> tuple[str, ...]:
    """``node[1-2]`` as ``("node1", "node2")``; nothing for an unreadable list."""
    if nodelist in ("", "(null)", "N/A"):
        return ()
    try:
        return tuple(expand_nodelist(nodelist))
    except ValueError:
        return ()


def parse_tres(text: str) -> dict[str, str]:
    """``cpu=2,mem=2000M,gres/gpu=1`` as ``{"cpu": "2", "mem": "2000M", "gres/gpu": "1"}``."""
    pairs = (item.partition("=") for item in text.split(",") if "=" in item)
    return {key.strip(): value.strip() for key, _, value in pairs}


def queue_order(entries: Sequence[QueueEntry]) -> list[QueueEntry]:
    """Running jobs first, then pending ones by priority (highest first), submit time and id
    (the order ``squeue --sort=-p,i`` and ``sprio`` report)."""
    return sorted(entries, key=_order_key)


def _order_key(entry: QueueEntry) -> tuple[int, int, str, int, str]:
    priority = -entry.priority if entry.pending else 0
    return (int(entry.pending), priority, entry.submit_time or "", _id_number(entry.job_id),
            entry.job_id)


def _id_number(job_id: str) -> int:
    digits = re.match(r"\d+", job_id)
    return int(digits.group()) if digits else 0


def update_argv(job_id: str, update: JobUpdate, *, scontrol: str = "scontrol") -> tuple[str, ...]:
    """The one ``scontrol update`` command :func:`update_job` runs; every value checked."""
    match = _UPDATABLE_JOB_ID.match(job_id)
    if not match:
        raise ValidationError(f"invalid Slurm job id {job_id!r}: scontrol update takes a job "
                              "id or an array task's (123_4)")
    if match["throttle"]:
        job_id = job_id.replace(match["throttle"], "")
    if update.empty:
        raise ValidationError(f"nothing to update for job {job_id}")
    argv = [scontrol, "update", f"JobId={job_id}"]
    if update.partition is not None:
        argv.append(f"Partition={_name(update.partition, 'partition')}")
    if update.qos is not None:
        argv.append(f"QOS={_name(update.qos, 'QOS')}")
    if update.nice is not None:
        argv.append(f"Nice={_nice(update.nice)}")
    return tuple(argv)


def update_job(runner: Runner, job_id: str, update: JobUpdate, *,
               scontrol: str = "scontrol") -> None:
    """Change ``job_id``'s partition, QOS and nice at once; Slurm's refusal is raised as a
    :class:`JobUpdateRefusedError` carrying Slurm's reason."""
    argv = update_argv(job_id, update, scontrol=scontrol)
    try:
        runner(argv)
    except SchedulerError as exc:
        raise JobUpdateRefusedError(exc) from exc


def _name(value: str, what: str) -> str:
    check_safe(value, what)
    if not _NAME.match(value):
        raise ValidationError(f"invalid {what} name {value!r}: it must not be empty or hold "
                              "spaces or '='")
    return value


def _nice(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > NICE_LIMIT:
        raise ValidationError(f"nice must be an integer within +-{NICE_LIMIT}, not {value!r}")
    return value


def _text(value: str, *placeholders: str) -> str | None:
    return None if value in ("", "N/A", *placeholders) else value


def _count(value: str | None) -> int:
    """A count from squeue or tres (``"4"``; ``"N/A"`` or nothing is 0)."""
    return int(value) if value and value.isdigit() else 0


def _local_time(value: str) -> str | None:
    """squeue's zone-less local time as ISO 8601 with this host's zone."""
    if value in ("", "N/A", "Unknown", "None"):
        return None
    try:
        return dt.datetime.fromisoformat(value).astimezone().isoformat()
    except ValueError:
        return value


def update_job_as(runas: RunAs, user: str, job_id: str, update: JobUpdate) -> None:
    """:func:`update_job` through the run-as helper, as the job's owner ``user``.

    Only partition, QOS and nice reach the helper; values are checked as for
    :func:`update_argv`. Slurm's refusal is raised as a :class:`JobUpdateRefusedError`.
    """
    update_argv(job_id, update)  # the same checks as the service account's update
    values = {"partition": update.partition, "qos": update.qos,
              "nice": None if update.nice is None else str(update.nice)}
    try:
        runas.update(user, job_id, {k: v for k, v in values.items() if v is not None})
    except SchedulerError as exc:
        raise JobUpdateRefusedError(exc) from exc
