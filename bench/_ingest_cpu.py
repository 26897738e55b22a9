"""CPU accounting for bench/ingest.py: /proc readings of the master, PostgreSQL and the host."""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")

def proc_stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds user+system) of ``pid``, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / CLK_TCK


def descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (st := proc_stat(int(entry.name))) is not None:
            parents[int(entry.name)] = st[0]
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, ppid in parents.items() if ppid in frontier]
        found += frontier
    return found


def role_of(pid: int, master_pid: int) -> str:
    if pid == master_pid:
        return "gunicorn arbiter"
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "master, other children"
    if "resource_tracker" in cmdline:
        return "master, other children"
    return "reconciler" if "multiprocessing" in cmdline else "gunicorn workers"


def connections_per_worker(port: int, workers: Sequence[int]) -> dict[int, int]:
    """Established client connections each gunicorn worker holds on ``port``.

    Keep-alive connections stay with the worker that accepted them, so this shows how evenly
    the load was spread.
    """
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                cols = line.split()
                if cols[3] == "01" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{cols[9]}]")
    counts: dict[int, int] = {}
    for pid in workers:
        fds = Path(f"/proc/{pid}/fd")
        with contextlib.suppress(OSError):
            counts[pid] = sum(1 for fd in fds.iterdir() if _readlink(fd) in inodes)
    return counts


def _readlink(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def host_busy_seconds() -> float:
    """CPU seconds (all cores) the host spent not idle, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / CLK_TCK


@dataclass
class CpuSnapshot:
    client_s: float
    host_busy_s: float
    by_role: dict[str, float]


def cpu_snapshot(groups: dict[str, list[int]]) -> CpuSnapshot:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    by_role: dict[str, float] = {}
    for role, pids in groups.items():
        by_role[role] = sum(st[1] for pid in pids if (st := proc_stat(pid)) is not None)
    return CpuSnapshot(usage.ru_utime + usage.ru_stime, host_busy_seconds(), by_role)



def postgres_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == "postgres":
                pids.append(int(entry.name))
    return pids


def cpu_breakdown(start: CpuSnapshot, end: CpuSnapshot, seconds: float) -> dict[str, float]:
    """Cores used per role during the window; 'rest of host' is whatever nobody above used."""
    cores = {"bench client (this process)": (end.client_s - start.client_s) / seconds}
    for role in end.by_role:
        cores[role] = (end.by_role[role] - start.by_role.get(role, 0.0)) / seconds
    host = (end.host_busy_s - start.host_busy_s) / seconds
    cores["rest of host (other users' processes, kernel)"] = host - sum(cores.values())
    cores["host total busy"] = host
    return cores
