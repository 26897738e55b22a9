"""Why a trial or task failed: the one classifier behind the API's ``failure`` object,
``det trial describe`` and the failure summary at the top of the web pages.

:func:`classify` takes what the master knows of the last job (the scheduler's end state,
who cancelled it, its exit code) and the tail of its log, and answers a :class:`Failure`:
a cause from :data:`CAUSES`, the words people read, and the last error line of the log
(with its log id, the anchor the trial page links to). The scheduler's own end state wins
over the log (a TIMEOUT is a time limit whatever the log says); the log then tells what
the scheduler cannot (a CUDA OOM is a plain exit 1 to Slurm).

Only the tail is read (:data:`TAIL_LINES` lines, each cut to :data:`MAX_LINE`): bounded
work on a trial that wrote millions of lines.
"""

from __future__ import annotations

import pwd
import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hpcdet.master.models import Experiment, Job, StateChange, Trial, TrialLog
from hpcdet.master.reports.time_limit import config_time_limit

TAIL_LINES = 400
MAX_LINE = 1000  # 400 lines of at most 1000 characters: at most ~400 KB read

CAUSES = ("oom_host", "oom_gpu", "time_limit", "node_failure", "preempted", "cancelled",
          "signal", "exit_code", "unknown")

# The HPC failure lines, as Slurm, PBS, the kernel and PyTorch write them. The web log
# highlighter marks the same lines (static/records.js keeps a copy: a test compares them).
GPU_OOM = re.compile(r"torch\.cuda\.OutOfMemoryError:|CUDA out of memory")
HOST_OOM = re.compile(r"\boom[-_]kill\b|Out Of Memory")
# bash's report of a child killed by SIGKILL (the kernel's OOM killer): "Killed" alone, or
# "script: line 5: 32636 Killed    python train.py".
KILLED = re.compile(r"(?:^|\d )Killed(?:\s{2,}|\s*$)")
TIME_LIMIT = re.compile(r"\*\*\* JOB \S+ ON \S+ CANCELLED AT \S+ DUE TO TIME LIMIT \*\*\*"
                        r"|=>> PBS: job killed: walltime")
FAILURE_LINE = re.compile(
    "|".join((GPU_OOM.pattern, HOST_OOM.pattern, KILLED.pattern, TIME_LIMIT.pattern))
    + r"|^(?:srun|slurmstepd): error:|\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT "
    + r"|Segmentation fault|=>> PBS: job killed")
_ERRORISH = re.compile(r"\b(?:CRITICAL|FATAL|ERROR)\b|^\w*(?:Error|Exception)(?::|$)")
_CANCELLED_BY = re.compile(r"^CANCELLED by (\d+)$")


@dataclass(frozen=True)
class LogLine:
    """One log line: its id (the page's ``#log-<id>`` anchor) and its text."""

    log_id: int
    text: str


@dataclass(frozen=True)
class JobEnd:
    """What the scheduler said of a job's end (the ``jobs`` row's columns)."""

    phase: str | None
    native_state: str | None = None
    exit_code: int | None = None
    cancelled_by: str | None = None  # a user name, when known (hpcdet's own history)


@dataclass(frozen=True)
class Failure:
    """A classified failure: the cause, the words for it and the last error line."""

    cause: str
    words: str
    exit_code: int | None
    signal: str | None
    cancelled_by: str | None
    last_error: LogLine | None
    line_number: int | None = None

    def as_json(self) -> dict[str, Any]:
        """The API's ``failure`` object."""
        last = self.last_error
        return {"cause": self.cause, "words": self.words, "exit_code": self.exit_code,
                "signal": self.signal, "cancelled_by": self.cancelled_by,
                "last_error_line": None if last is None else {
                    "log_id": last.log_id, "line_number": self.line_number,
                    "text": last.text}}


def is_failure_line(text: str) -> bool:
    """Whether the line is one of the HPC failure lines (OOM, time limit, srun error...)."""
    return bool(FAILURE_LINE.search(text))


def classify(end: JobEnd, tail: Sequence[LogLine]) -> Failure:
    """The cause of a failed (or cancelled) job from its end and its log's tail."""
    tail = [LogLine(line.log_id, line.text[:MAX_LINE]) for line in tail[-TAIL_LINES:]]
    cause, words = _cause(end, tail)
    last = _last_error(tail, cause)
    by = end.cancelled_by or _cancelled_by(end.native_state)
    if cause == "cancelled" and by:
        words = f"cancelled by {by}"
    return Failure(cause=cause, words=words, exit_code=end.exit_code,
                   signal=_signal_name(end.exit_code),
                   cancelled_by=by if cause == "cancelled" else None, last_error=last)


def _cause(end: JobEnd, tail: Sequence[LogLine]) -> tuple[str, str]:
    """(cause, words): the scheduler's end state first, then the log, then the exit code."""
    phase = (end.phase or "").upper()
    text = [line.text for line in tail]
    by_phase = {"OUT_OF_MEMORY": ("oom_host", "ran out of host memory"),
                "TIMEOUT": ("time_limit", "hit its time limit"),
                "NODE_FAIL": ("node_failure", "its node failed"),
                "BOOT_FAIL": ("node_failure", "its node failed to boot"),
                "PREEMPTED": ("preempted", "was preempted by the scheduler")}
    if phase in by_phase:
        return by_phase[phase]
    if any(GPU_OOM.search(t) for t in text):
        return "oom_gpu", "ran out of GPU memory"
    # A cancelled job's processes are SIGKILLed after KillWait: its "Killed" is no OOM.
    if any(HOST_OOM.search(t) for t in text) or (
            end.exit_code == 137 and phase != "CANCELLED" and any(KILLED.search(t) for t in text)):
        return "oom_host", "ran out of host memory"
    if any(TIME_LIMIT.search(t) for t in text):
        return "time_limit", "hit its time limit"
    if phase == "CANCELLED":
        return "cancelled", "was cancelled"
    return _exit_cause(end.exit_code, phase)


def _exit_cause(code: int | None, phase: str) -> tuple[str, str]:
    """The cause an exit code alone tells (128+N: killed by signal N, as a shell says)."""
    name = _signal_name(code)
    if name:
        return "signal", f"was killed by {name}" + (
            " (segmentation fault)" if name == "SIGSEGV" else "")
    if code:
        return "exit_code", f"exited with code {code}"
    if phase == "MISSING":
        return "unknown", "the scheduler lost track of its job"
    return "unknown", "failed; the scheduler gave no exit code"


def _signal_name(code: int | None) -> str | None:
    if code is None or not 128 < code < 128 + 65:
        return None
    try:
        return signal.Signals(code - 128).name
    except ValueError:
        return f"signal {code - 128}"


def _cancelled_by(native: str | None) -> str | None:
    """The user name in Slurm's ``CANCELLED by <uid>`` (the uid when it names no one)."""
    found = _CANCELLED_BY.match(native or "")
    if not found:
        return None
    uid = int(found.group(1))
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


# The line that tells the cause, linked before any later failure line (srun's "Exited with
# exit code 1" follows PyTorch's OOM message in a real job's log).
_CAUSE_LINES = {"oom_gpu": GPU_OOM, "oom_host": HOST_OOM, "time_limit": TIME_LIMIT,
                "cancelled": re.compile(r"\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT ")}


def _last_error(tail: Sequence[LogLine], cause: str) -> LogLine | None:
    """The tail's last line that tells the ``cause``, else its last failure line, else its
    last line that reads as an error."""
    told = [_CAUSE_LINES[cause]] if cause in _CAUSE_LINES else []
    for pattern in (*told, FAILURE_LINE, _ERRORISH):
        for line in reversed(tail):
            if pattern.search(line.text):
                return line
    return None


def trial_failure(session: Session, trial: Trial) -> Failure | None:
    """The failure summary of an ERROR or CANCELED trial (None for any other state)."""
    if trial.state not in ("ERROR", "CANCELED"):
        return None
    job = session.scalars(select(Job).where(Job.trial_id == trial.id, Job.job_id.is_not(None))
                          .order_by(Job.id.desc()).limit(1)).first()
    rows = session.execute(select(TrialLog.id, func.substr(TrialLog.line, 1, MAX_LINE))
                           .where(TrialLog.trial_id == trial.id)
                           .order_by(TrialLog.id.desc()).limit(TAIL_LINES)).all()
    tail = [LogLine(int(i), str(t)) for i, t in reversed(rows)]
    actor = _killed_by(session, trial) if trial.state == "CANCELED" else None
    end = JobEnd(phase="CANCELLED" if actor else (job.phase if job else None),
                 native_state=job.native_state if job else None,
                 exit_code=job.exit_code if job else None, cancelled_by=actor)
    exp = session.get(Experiment, trial.experiment_id)
    found = with_time_limit(classify(end, tail), exp.config if exp else None)
    if found.last_error is None:
        return found
    number = session.scalar(select(func.count()).select_from(TrialLog).where(
        TrialLog.trial_id == trial.id, TrialLog.id <= found.last_error.log_id))
    return Failure(**{**found.__dict__, "line_number": int(number or 0)})


def with_time_limit(found: Failure, config: dict[str, Any] | None) -> Failure:
    """``found``, its words naming the limit (``hit its time limit of 1 minute``) when the
    cause is a time limit and the config's ``slurm.sbatch_args`` set one."""
    limit = config_time_limit(config) if found.cause == "time_limit" else None
    if limit is None:
        return found
    return Failure(**{**found.__dict__, "words": f"{found.words} of {limit}"})


def _killed_by(session: Session, trial: Trial) -> str | None:
    """Who moved the trial toward CANCELED (a kill or cancel by a user), when recorded."""
    actor = session.scalars(select(StateChange.actor).where(
        StateChange.entity_kind == "trial", StateChange.entity_id == trial.id,
        StateChange.actor != "system").order_by(StateChange.id.desc()).limit(1)).first()
    return str(actor) if actor else None


EXPERIMENT_TRIALS = 5  # errored trials an experiment's summary classifies (newest ended)


def experiment_failures(session: Session, exp_id: int) -> list[dict[str, Any]]:
    """The causes of the experiment's most recently ended ERROR trials (at most
    :data:`EXPERIMENT_TRIALS`), one entry per cause: ``{"cause", "words", "trial_ids"}``."""
    trials = session.scalars(select(Trial).where(Trial.experiment_id == exp_id,
                                                 Trial.state == "ERROR")
                             .order_by(Trial.ended_at.desc(), Trial.id.desc())
                             .limit(EXPERIMENT_TRIALS)).all()
    causes: dict[str, dict[str, Any]] = {}
    for trial in trials:
        found = trial_failure(session, trial)
        if found is not None:
            entry = causes.setdefault(found.words, {"cause": found.cause, "words": found.words,
                                                    "trial_ids": []})
            entry["trial_ids"].append(trial.id)
    return list(causes.values())


def tail_lines(text: str, start: int) -> list[LogLine]:
    """A log file's tail, read from byte ``start``, as lines whose ids are their byte
    offsets in the file (where ``GET /tasks/<id>/logs?offset=`` reads from)."""
    found, offset = [], start
    for line in text.splitlines(keepends=True):
        found.append(LogLine(offset, line.rstrip("\n")))
        offset += len(line.encode("utf-8"))
    return found


def task_failure(state: str, native_state: str | None, exit_code: int | None,
                 tail: Sequence[LogLine], cancelled_by: str | None = None) -> Failure | None:
    """The failure summary of an ERROR or CANCELED task from its job's end and log tail."""
    if state not in ("ERROR", "CANCELED"):
        return None
    word = (native_state or "").split(" ")[0]
    phase = "CANCELLED" if cancelled_by else (word if word.isupper() and len(word) > 1
                                               else "FAILED")
    return classify(JobEnd(phase, native_state, exit_code, cancelled_by), tail)
