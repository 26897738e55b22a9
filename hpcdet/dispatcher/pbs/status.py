"""PBS job states and ``qstat`` output, as hpcdet's :class:`JobStatus`.

Measured on OpenPBS 23.06.06 (``scripts/dev-pbs``; recordings in ``tests/data/pbs``):

* ``qstat -f -F json ID1 ID2 ...`` prints **only the first job** (openpbs/openpbs#2672),
  so polling many jobs with one command uses ``qstat -x -f -F dsv -D <US> ID...``: one line
  per job, ``Job Id: <id><US>key=value<US>...``, a delimiter inside a value escaped with a
  backslash. With ``-x`` finished jobs (job history) are listed too.
* Ids qstat does not know: ``qstat: Unknown Job Id <id>`` on stderr, exit status 153, and the
  known jobs still on stdout.
* Finished jobs (``F``; ``X`` for array subjobs) carry ``substate`` 92 (finished), 93
  (failed) or 91 (terminated: qdel) and ``Exit_status``: the script's status, ``-29`` when
  the walltime was exceeded, ``256 + signal`` when PBS killed it (``271`` SIGTERM, ``265``
  SIGKILL after ``kill_delay``), none for a job deleted while queued.
* ``run_count`` counts the executions started so far; ``qrerun`` puts a job back with it.
* Array subjobs (``qstat -t``): ``123[4].server``, their own records. A subjob deleted while
  queued reads ``X``, substate 70 and ``Exit_status`` 1 while its array runs (``F``, 91 and 0
  once the array ended), and has no ``run_count``: it never started, so it was cancelled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from hpcdet.dispatcher.base import JobPhase, JobStatus

DELIMITER = "\x1f"
# Every PBS job state letter.
STATES: Mapping[str, JobPhase] = MappingProxyType({
    "Q": JobPhase.PENDING, "H": JobPhase.PENDING, "W": JobPhase.PENDING,
    "T": JobPhase.PENDING,  # in transit between queues
    "M": JobPhase.PENDING,  # moved to another server
    "R": JobPhase.RUNNING, "E": JobPhase.RUNNING,  # exiting: its result is not final yet
    "B": JobPhase.RUNNING,  # an array job with subjobs running
    "S": JobPhase.RUNNING, "U": JobPhase.RUNNING,  # suspended (keeps its nodes)
})  # fmt: skip
FINISHED_STATES = ("F", "X")
SUBSTATE_TERMINATED = 91
EXIT_WALLTIME = -29  # JOB_EXEC_KILL_WALLTIME
SIGNAL_BASE = 256  # Exit_status of a job PBS killed: 256 + signal
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)
_UNKNOWN_ID = re.compile(r"^qstat: Unknown Job Id \S+$")


def phase_of(record: Mapping[str, Any]) -> JobPhase:
    """The phase of one job from its ``job_state``, ``substate`` and ``Exit_status``."""
    state = record.get("job_state", "")
    if state not in FINISHED_STATES:
        return STATES.get(state, JobPhase.UNKNOWN)
    exit_status = _int(record.get("Exit_status"))
    comment = str(record.get("comment", ""))
    if exit_status == EXIT_WALLTIME or "exceeded resource walltime" in comment:
        return JobPhase.TIMEOUT
    if "exceeded resource mem" in comment:
        return JobPhase.OUT_OF_MEMORY
    never_ran = state == "X" and record.get("run_count") is None  # a subjob deleted queued
    if _int(record.get("substate")) == SUBSTATE_TERMINATED or exit_status is None or never_ran:
        return JobPhase.CANCELLED  # qdel while running (91), or while queued (no status)
    return JobPhase.COMPLETED if exit_status == 0 else JobPhase.FAILED


def exit_code(record: Mapping[str, Any]) -> int | None:
    """``Exit_status`` as a shell reports it: ``256+N`` (killed by PBS) reads ``128+N``;
    PBS's own negative codes (walltime, ...) are not an exit status of the script."""
    status = _int(record.get("Exit_status"))
    if status is None or status < 0:
        return None
    return status - SIGNAL_BASE + 128 if status >= SIGNAL_BASE else status


def restarts(record: Mapping[str, Any]) -> int | None:
    """Requeues so far: executions started, less the current or last one. A job waiting
    again after a requeue has started as many executions as it has been requeued."""
    runs = _int(record.get("run_count"))
    if runs is None:
        return 0 if record.get("job_state") in STATES else None
    waiting = STATES.get(record.get("job_state", "")) is JobPhase.PENDING
    return runs if waiting else max(runs - 1, 0)


def nodes_of(exec_host: str | None) -> str | None:
    """``pbsn1/0*2+pbsn2/0*2`` as ``pbsn1,pbsn2`` (hosts in order, once each)."""
    if not exec_host:
        return None
    hosts = [part.split("/", 1)[0] for part in exec_host.split("+") if part]
    return ",".join(dict.fromkeys(hosts)) or None


def job_status(job_id: str, record: Mapping[str, Any]) -> JobStatus:
    """One job's :class:`JobStatus` from its qstat attributes (``source`` "qstat")."""
    phase = phase_of(record)
    state = record.get("job_state", "")
    return JobStatus(job_id, phase, state, reason=record.get("comment") or None,
                     exit_code=exit_code(record) if phase.is_terminal else None,
                     nodes=nodes_of(record.get("exec_host")), source="qstat",
                     restarts=restarts(record))  # fmt: skip


def parse_dsv(stdout: str) -> dict[str, dict[str, str]]:
    """``qstat -f -F dsv -D <US>`` output as ``{job id: {attribute: value}}``.

    A line that does not start a job continues the previous one (a value holding a
    newline); nested attributes keep their dotted names (``Resource_List.ncpus``).
    """
    jobs: dict[str, dict[str, str]] = {}
    lines: list[str] = []
    for line in stdout.splitlines():
        if line.startswith("Job Id: ") or not lines:
            lines.append(line)
        else:
            lines[-1] += "\n" + line
    for line in lines:
        fields = _split(line)
        head = fields[0]
        if not head.startswith("Job Id: "):
            continue
        record = dict(field.partition("=")[::2] for field in fields[1:] if "=" in field)
        jobs[head.removeprefix("Job Id: ").strip()] = record
    return jobs


def _split(line: str) -> list[str]:
    """Split at unescaped delimiters and drop the escapes (``\\x`` is ``x``)."""
    fields, current, escaped = [], [], False
    for char in line:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            current.append(char)
            escaped = True
        elif char == DELIMITER:
            fields.append(_ESCAPED.sub(r"\1", "".join(current)))
            current = []
        else:
            current.append(char)
    fields.append(_ESCAPED.sub(r"\1", "".join(current)))
    return fields


def only_unknown_ids(stderr: str) -> bool:
    """True if every stderr line says ``Unknown Job Id`` (qstat still printed the rest)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return bool(lines) and all(_UNKNOWN_ID.match(line) for line in lines)


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    return None
