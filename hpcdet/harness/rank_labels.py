"""``<rank>: `` before every line a rank writes, when its launcher does not add it.

``srun --label`` prefixes each rank's lines with ``"<rank>: "``, and the master reads the
rank from that (``hpcdet.master.reports.logs``). ``mpiexec`` (PBS, or Slurm's ``mpiexec``
launcher) adds nothing usable: Open MPI's ``--tag-output`` tags each *write*, so a line
printed in two writes becomes two tagged fragments. So a rank started by an MPI launcher
labels its own output: file descriptors 1 and 2 become pipes, and one thread per stream
copies whole lines to the real stdout/stderr with the label in front. Child processes (a
subprocess entrypoint) inherit the pipes, so their lines are labelled too.
"""

from __future__ import annotations

import os
import sys
import threading

_CHUNK = 65536


class RankLabels:
    """Labels fds 1 and 2 of this process until :meth:`close`."""

    def __init__(self, rank: int) -> None:
        self.prefix = f"{rank}: ".encode()
        self._copies: list[tuple[int, int, threading.Thread]] = []
        for fd in (1, 2):
            self._label(fd)

    def _label(self, fd: int) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        original = os.dup(fd)
        read_end, write_end = os.pipe()
        os.dup2(write_end, fd)
        os.close(write_end)
        thread = threading.Thread(target=self._copy, args=(read_end, original),
                                  name=f"rank-labels-{fd}", daemon=True)
        thread.start()
        self._copies.append((fd, original, thread))

    def _copy(self, read_end: int, out: int) -> None:
        copy_lines(read_end, out, self.prefix)
        os.close(read_end)

    def close(self, timeout: float = 5.0) -> None:
        """Flush, put the real descriptors back and wait for the last lines to be copied."""
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, original, _ in self._copies:
            os.dup2(original, fd)  # the pipe's last write end here closes: its reader ends
        for _, original, thread in self._copies:
            thread.join(timeout)
            os.close(original)
        self._copies = []


def copy_lines(read_end: int, out: int, prefix: bytes) -> None:
    """Copy whole lines from ``read_end`` to ``out`` until end of file, ``prefix`` before
    each (a last line without its newline gets one)."""
    pending = b""
    while chunk := os.read(read_end, _CHUNK):
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        if lines:
            _write_all(out, b"".join(prefix + line + b"\n" for line in lines))
    if pending:
        _write_all(out, prefix + pending + b"\n")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def labels_needed(launcher: str) -> bool:
    """Whether ranks started by ``launcher`` must label their own lines: srun labels them
    (``--label``), one process needs no label, every MPI launcher does not label."""
    return launcher not in ("slurm", "single")
