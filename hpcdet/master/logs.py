"""Collect a job's stdout/stderr files from the job directory into ``trial_logs`` rows.

``srun --label`` prefixes each rank's lines with ``"<rank>: "``; lines the batch script
prints itself carry no rank.
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import insert
from sqlalchemy.orm import Session

from hpcdet.master.models import Job, TrialLog, utcnow

_LABEL = re.compile(r"^\s*(\d+): ?(.*)$", re.DOTALL)
_STREAMS = {"out": "stdout", "err": "stderr"}
MAX_BYTES_PER_CYCLE = 4 * 1024 * 1024


def log_path(job_dir: str, job_id: str, suffix: str) -> Path:
    return Path(job_dir) / f"slurm-{job_id}.{suffix}"


def ingest_job_logs(session: Session, job: Job, job_dir: str, *, final: bool) -> int:
    """Store the lines added to the job's log files since the last call; return how many.

    Without ``final`` an unterminated last line waits for its newline.
    """
    if not job.job_id:
        return 0
    offsets = dict(job.log_offsets or {})
    rows: list[dict[str, object]] = []
    for suffix, stream in _STREAMS.items():
        text, offsets[suffix] = _read_new(log_path(job_dir, job.job_id, suffix),
                                          int(offsets.get(suffix, 0)), final)
        rows += [_row(job, stream, line) for line in text.splitlines()]
    job.log_offsets = offsets
    if rows:
        session.execute(insert(TrialLog), rows)
    return len(rows)


def _read_new(path: Path, offset: int, final: bool) -> tuple[str, int]:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read(MAX_BYTES_PER_CYCLE)
    except FileNotFoundError:
        return "", offset
    if not final and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
    return data.decode("utf-8", errors="replace"), offset + len(data)


def _row(job: Job, stream: str, line: str) -> dict[str, object]:
    match = _LABEL.match(line)
    rank = int(match.group(1)) if match else None
    text = match.group(2) if match else line
    return {"trial_id": job.trial_id, "job_id": job.job_id, "rank": rank, "stream": stream,
            "line": text, "at": utcnow()}


def add_system_line(session: Session, trial_id: int, line: str) -> None:
    """A line from the master itself (e.g. why a submission failed) in the trial's log."""
    session.add(TrialLog(trial_id=trial_id, job_id=None, rank=None, stream="master", line=line))
