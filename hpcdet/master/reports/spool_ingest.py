"""Collect the reports a trial left in its job directory because the master did not take them.

When the master is down, a trial's reporters keep their reports on disk instead of waiting
(``hpcdet/core/_spool.py``); whatever is still undelivered when a reporter closes is
written there too. Each reporter has its own directory::

    <job_dir>/spool/r<run_id>.q<requeue>.k<rank>/
        stream.json                 {"trial_id", "run_id", "requeue", "rank",
                                     "resumed_from": {"uuid", "steps_completed"}}
        seg-<seq of its first report, 12 digits>.jsonl
                                    one report per line: {"seq", "group", "steps_completed",
                                    "metrics"}, or {"seq", "group": "checkpoint",
                                    "checkpoint": <the registration body>}

:func:`ingest_spooled_reports` applies them through
:func:`hpcdet.master.reports.reports.apply_reports`,
the path of the HTTP routes, so dedup, rollback, validation effects and checkpoint
registration are the same: a report that was also delivered over HTTP, or collected
before, is stored once. Streams are applied oldest execution first. Reports of an execution
that a newer one superseded are stored too, archived past the step the newer execution
resumed from (read from its ``stream.json``). The segment files are removed once applied;
``stream.json`` stays, as later collections need the resume points.
"""

from __future__ import annotations

import heapq
import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher.transport import Transport
from hpcdet.master.errors import DomainError
from hpcdet.master.reports.ingest import (
    Execution,
    MetricWriter,
    Report,
    ReportBatch,
    Stream,
    StreamKey,
)
from hpcdet.master.reports.reports import (
    apply_reports,
    foreign_checkpoints,
    resumed_steps,
    spooled_report,
)

SPOOL_DIR = "spool"
STREAM_FILE = "stream.json"
CHUNK = 1000  # reports per transaction
_STREAM_DIR = re.compile(r"^r(\d+)\.q(\d+)\.k(\d+)$")
_SEGMENT = re.compile(r"^seg-\d+\.jsonl$")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SpooledStream:
    """One reporter's spool directory."""

    path: Path
    run_id: int
    requeue: int
    rank: int
    resumed_steps: int | None  # None: its stream.json is missing or unreadable

    @property
    def execution(self) -> Execution:
        return (self.run_id, self.requeue)

    def segments(self, files: Transport) -> list[Path]:
        return sorted(self.path / e.name for e in files.list_dir(str(self.path))
                      if _SEGMENT.match(e.name) and not e.is_dir and not e.is_link)


def ingest_spooled_reports(sessions: sessionmaker[Session], writer: MetricWriter | None,
                           trial_id: int, job_dir: str, *, files: Transport) -> int:
    """Apply every report spooled under ``<job_dir>/spool/`` and remove the files applied.

    Call it when none of the trial's jobs is running (a running reporter may still be
    appending). ``writer`` is the process's :class:`MetricWriter` if it has one; without,
    one is made on ``sessions``' engine. Returns how many reports were stored (reports the
    master already had are not counted). Lines that cannot be read are logged and skipped;
    a database error propagates and leaves the files for the next call. ``files`` reaches
    the job directory (the backend's transport).
    """
    streams = spooled_streams(Path(job_dir) / SPOOL_DIR, files)
    if not streams:
        return 0
    writer = writer or MetricWriter(_engine(sessions))
    points = {s.execution: s.resumed_steps for s in streams if s.resumed_steps is not None}
    return sum(_ingest_stream(writer, trial_id, s, points, files) for s in streams)


def spooled_streams(root: Path, files: Transport) -> list[SpooledStream]:
    """The spool directories under ``root``, oldest execution first."""
    if not files.is_dir(str(root)):  # a link would lead the master (which deletes what it
        return []                    # applied) into another directory
    found = []
    for entry in files.list_dir(str(root)):
        match = _STREAM_DIR.match(entry.name)
        if match and entry.is_dir and not entry.is_link:
            path = root / entry.name
            run_id, requeue, rank = (int(g) for g in match.groups())
            found.append(SpooledStream(path, run_id, requeue, rank, _resumed(path, files)))
    return sorted(found, key=lambda s: (s.run_id, s.requeue, s.rank))


def _resumed(path: Path, files: Transport) -> int | None:
    try:
        meta = json.loads(files.read_file(str(path / STREAM_FILE)).decode("utf-8"))
        return resumed_steps(meta.get("resumed_from") if isinstance(meta, dict) else None)
    except (OSError, ValueError, DomainError) as exc:
        log.warning("%s: no readable %s (%s); its stream rolls nothing back", path,
                    STREAM_FILE, exc)
        return None


def _ingest_stream(writer: MetricWriter, trial_id: int, spooled: SpooledStream,
                   points: dict[Execution, int], files: Transport) -> int:
    segments = spooled.segments(files)
    if not segments:
        return 0
    key = StreamKey(trial_id, spooled.run_id, spooled.requeue, spooled.rank)
    stream = Stream(key, spooled.resumed_steps, resume_points=points)
    stored = 0
    for chunk in _chunks(_in_seq_order(segments, files), CHUNK):
        batch = _without_foreign_checkpoints(writer, ReportBatch(trial_id, chunk, stream))
        stored += len(apply_reports(writer, batch, now=True).stored)
    for segment in segments:
        files.remove_tree(str(segment))
    log.info("trial %d: applied %d spooled report(s) from %s", trial_id, stored, spooled.path)
    return stored


def _in_seq_order(segments: list[Path], files: Transport) -> Iterator[Report]:
    """Every report of the segments by seq, each seq once (segments may overlap)."""
    last = -1
    for report in heapq.merge(*(_read_segment(s, files) for s in segments),
                              key=lambda r: r.seq or 0):
        if report.seq is not None and report.seq > last:
            last = report.seq
            yield report


def _read_segment(path: Path, files: Transport) -> Iterator[Report]:
    lines = files.read_file(str(path)).decode("utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield spooled_report(json.loads(line))
        except (ValueError, DomainError) as exc:  # a torn last line, or a bad report
            log.warning("%s:%d: skipped an unreadable report: %s", path, number, exc)


def _chunks(reports: Iterable[Report], size: int) -> Iterator[list[Report]]:
    chunk: list[Report] = []
    for report in reports:
        chunk.append(report)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _without_foreign_checkpoints(writer: MetricWriter, batch: ReportBatch) -> ReportBatch:
    foreign = foreign_checkpoints(writer.engine, batch)
    if not foreign:
        return batch
    log.warning("trial %d: spooled checkpoint(s) %s belong to another trial; skipped",
                batch.trial_id, ", ".join(sorted(foreign)))
    kept = [r for r in batch.reports
            if r.checkpoint is None or r.checkpoint["uuid"] not in foreign]
    return ReportBatch(batch.trial_id, kept, batch.stream)


def _engine(sessions: sessionmaker[Session]) -> Engine:
    bind = sessions.kw.get("bind")
    if not isinstance(bind, Engine):
        raise ValueError("ingest_spooled_reports: the session factory has no engine bound")
    return bind
