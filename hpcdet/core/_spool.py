"""A reporter's spool: reports kept on disk, in order, while the master cannot take them.

The training loop must never wait for the master. When more than ``max_pending`` reports
are waiting, the reporter appends the next ones here instead of holding them in memory,
and it reads them back, oldest first, once the master answers again. When it closes, it
writes whatever is still undelivered here for the master to collect from the job
directory (``hpcdet/master/reports/spool_ingest.py``). The layout (documented in
``docs/job-directory.md``)::

    <job_dir>/spool/r<run_id>.q<requeue>.k<rank>/
        stream.json                      who reports here and where the execution resumed
        seg-<seq of first report>.jsonl  one report per line, appended in seq order

A segment holds at most ``segment_reports`` reports. While the reporter runs, lines are
handed to the OS as they are written (a killed process loses none); :meth:`Spool.sync`
and :meth:`Spool.write_durably` make them survive a crash of the node. Not thread-safe:
the reporter calls it under its lock.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from hpcdet.jobfiles import write_atomically

SPOOL_DIR = "spool"
STREAM_FILE = "stream.json"


def spool_dir(job_dir: str | os.PathLike[str], run_id: int, requeue: int, rank: int) -> Path:
    """Where the reporter of ``rank`` in execution (``run_id``, ``requeue``) spools."""
    return Path(job_dir) / SPOOL_DIR / f"r{run_id}.q{requeue}.k{rank}"


def segment_name(first_seq: int) -> str:
    return f"seg-{first_seq:012d}.jsonl"


@dataclass
class _Segment:
    path: Path
    count: int = 0  # reports written
    consumed: int = 0  # reports delivered (from the front)
    offset: int = 0  # bytes of the delivered reports
    ends: list[int] = field(default_factory=list)  # end offsets of the peeked reports


class Spool:
    """Append-only segment files of JSON lines in one directory, read back oldest first."""

    def __init__(self, path: Path, meta: dict[str, Any], *, segment_reports: int = 1000) -> None:
        """Create the directory and write ``stream.json`` (raises OSError if it cannot)."""
        self.path = path
        self._segment_reports = max(1, segment_reports)
        self._segments: list[_Segment] = []
        self._tail: IO[bytes] | None = None
        path.mkdir(parents=True, exist_ok=True)
        self.write_durably(STREAM_FILE, [meta])

    def __len__(self) -> int:
        """Reports on disk not delivered yet."""
        return sum(s.count - s.consumed for s in self._segments)

    def append(self, item: dict[str, Any]) -> None:
        """Add one report (a JSON object with its ``seq``) at the end."""
        if self._tail is None or self._segments[-1].count >= self._segment_reports:
            self._open_tail(int(item["seq"]))
        assert self._tail is not None
        self._tail.write(json.dumps(item, separators=(",", ":")).encode() + b"\n")
        self._tail.flush()  # to the OS: the reader below, and a killed process, see it
        self._segments[-1].count += 1

    def peek(self, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` of the oldest undelivered reports (all from one segment)."""
        if not len(self):
            return []
        head = self._segments[0]
        items, head.ends = [], []
        with head.path.open("rb") as f:
            f.seek(head.offset)
            for _ in range(min(limit, head.count - head.consumed)):
                items.append(json.loads(f.readline()))
                head.ends.append(f.tell())
        return items

    def consume(self, count: int) -> None:
        """The first ``count`` peeked reports were delivered: drop them (and emptied files)."""
        head = self._segments[0]
        head.consumed += count
        head.offset = head.ends[count - 1]
        head.ends = []
        if head.consumed == head.count:
            self._drop_head()

    def write_durably(self, name: str, items: list[dict[str, Any]]) -> Path:
        """Write ``items`` as the file ``name``: a temporary file, fsync, rename, fsync."""
        data = b"".join(json.dumps(i, separators=(",", ":")).encode() + b"\n" for i in items)
        write_atomically(self.path / name, data)
        return self.path / name

    def sync(self) -> None:
        """Flush the open segment to disk and close it."""
        if self._tail is not None:
            os.fsync(self._tail.fileno())
            self._tail.close()
            self._tail = None
            _fsync_dir(self.path)

    def _open_tail(self, first_seq: int) -> None:
        if self._tail is not None:
            self._tail.close()
        segment = _Segment(self.path / segment_name(first_seq))
        self._tail = segment.path.open("ab")
        self._segments.append(segment)

    def _drop_head(self) -> None:
        head = self._segments.pop(0)
        if not self._segments and self._tail is not None:  # the next report opens a new one
            self._tail.close()
            self._tail = None
        head.path.unlink(missing_ok=True)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
