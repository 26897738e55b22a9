"""System metrics of this node for the profiler: CPU, memory, network, disk and GPUs.

Read from Linux's ``/proc`` (no new dependency; the clusters are Linux) and, when the
``pynvml`` module can be imported and initialised, from NVIDIA's management library.
Counters (CPU time, bytes sent, sectors read) become rates between two samples, so the
first sample of a :class:`SystemSampler` has no CPU, network or disk values.
"""

from __future__ import annotations

import importlib
import pathlib
import time
from dataclasses import dataclass
from typing import Any

# /proc/diskstats counts 512-byte sectors whatever the device's own sector size.
_SECTOR_BYTES = 512


@dataclass(frozen=True)
class _Counters:
    """Cumulative counters at one moment."""

    at: float
    cpu_busy: int
    cpu_total: int
    net_sent: int
    net_recv: int
    disk_read: int
    disk_write: int


class SystemSampler:
    """Takes samples of this node's metrics: ``{name: value}`` per call of :meth:`sample`.

    Names: ``system.cpu_util_pct`` (0-100, all CPUs of the node),
    ``system.memory_used_bytes``, ``system.memory_total_bytes``,
    ``system.net_{sent,recv}_bytes_per_s``, ``system.disk_{read,write}_bytes_per_s`` and,
    with NVML, ``gpu.<index>.util_pct`` and ``gpu.<index>.memory_used_bytes``.
    """

    def __init__(self, proc: pathlib.Path = pathlib.Path("/proc"),
                 sys_block: pathlib.Path = pathlib.Path("/sys/block")) -> None:
        self._proc = proc
        self._disks = _physical_disks(sys_block)
        self._previous: _Counters | None = None
        self._gpus = GpuSampler.open()

    def sample(self) -> dict[str, float]:
        """The metrics now; rates are since the previous call."""
        counters = self._counters()
        metrics = self._memory()
        if self._previous is not None:
            metrics.update(_rates(self._previous, counters))
        self._previous = counters
        if self._gpus is not None:
            metrics.update(self._gpus.sample())
        return metrics

    def close(self) -> None:
        """Release NVML, if it was opened."""
        if self._gpus is not None:
            self._gpus.close()
            self._gpus = None

    def _counters(self) -> _Counters:
        busy, total = _cpu_times(_read(self._proc / "stat"))
        sent, recv = _net_bytes(_read(self._proc / "net" / "dev"))
        read, write = _disk_bytes(_read(self._proc / "diskstats"), self._disks)
        return _Counters(time.monotonic(), busy, total, sent, recv, read, write)

    def _memory(self) -> dict[str, float]:
        info = _meminfo(_read(self._proc / "meminfo"))
        total = info.get("MemTotal", 0)
        available = info.get("MemAvailable", info.get("MemFree", 0))
        return {"system.memory_used_bytes": float(total - available),
                "system.memory_total_bytes": float(total)}


def _read(path: pathlib.Path) -> str:
    try:
        return path.read_text()
    except OSError:  # not Linux, or a restricted container: those metrics are left out
        return ""


def _rates(before: _Counters, after: _Counters) -> dict[str, float]:
    seconds = after.at - before.at
    if seconds <= 0:
        return {}
    cpu_total = after.cpu_total - before.cpu_total
    out = {} if cpu_total <= 0 else {
        "system.cpu_util_pct": 100.0 * (after.cpu_busy - before.cpu_busy) / cpu_total}
    for name, delta in (("net_sent", after.net_sent - before.net_sent),
                        ("net_recv", after.net_recv - before.net_recv),
                        ("disk_read", after.disk_read - before.disk_read),
                        ("disk_write", after.disk_write - before.disk_write)):
        # A counter that went back (a device removed, a wrap) gives no rate, not a negative.
        if delta >= 0:
            out[f"system.{name}_bytes_per_s"] = delta / seconds
    return out


def _cpu_times(stat: str) -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat's first line."""
    for line in stat.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [int(v) for v in fields[1:]]
            # user nice system idle iowait irq softirq steal [guest guest_nice]: guest
            # time is already counted in user and nice.
            total = sum(values[:8])
            idle = sum(values[3:5])
            return total - idle, total
    return 0, 0


def _meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo in bytes."""
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            scale = 1024 if fields[-1] == "kB" else 1
            out[name] = int(fields[0]) * scale
    return out


def _net_bytes(text: str) -> tuple[int, int]:
    """(sent, received) bytes of every interface but loopback."""
    sent = recv = 0
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if name.strip() == "lo" or len(fields) < 9:
            continue
        recv += int(fields[0])
        sent += int(fields[8])
    return sent, recv


def _disk_bytes(text: str, disks: frozenset[str] | None) -> tuple[int, int]:
    """(read, written) bytes of the physical disks (partitions would count twice)."""
    read = write = 0
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 10 or not _is_counted(fields[2], disks):
            continue
        read += int(fields[5]) * _SECTOR_BYTES
        write += int(fields[9]) * _SECTOR_BYTES
    return read, write


def _is_counted(name: str, disks: frozenset[str] | None) -> bool:
    if disks is not None:
        return name in disks
    return not name.startswith(("loop", "ram", "dm-", "zram", "md"))


def _physical_disks(sys_block: pathlib.Path) -> frozenset[str] | None:
    """Block devices backed by hardware (they have ``device``); None when unknown."""
    try:
        return frozenset(p.name for p in sys_block.iterdir() if (p / "device").exists())
    except OSError:
        return None


class GpuSampler:
    """Utilisation and memory of every GPU NVML sees on this node."""

    def __init__(self, nvml: Any) -> None:
        self._nvml = nvml
        count = nvml.nvmlDeviceGetCount()
        self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]

    @classmethod
    def open(cls) -> GpuSampler | None:
        """A sampler when ``pynvml`` imports and NVML starts (a driver is there); else None."""
        try:
            nvml = importlib.import_module("pynvml")
            nvml.nvmlInit()
        except Exception:  # no module, no driver, no GPU: GPU metrics are optional
            return None
        try:
            return cls(nvml)
        except Exception:
            nvml.nvmlShutdown()
            return None

    def sample(self) -> dict[str, float]:
        """``gpu.<index>.util_pct`` and ``gpu.<index>.memory_used_bytes`` of each GPU."""
        out: dict[str, float] = {}
        for index, handle in enumerate(self._handles):
            try:
                rates = self._nvml.nvmlDeviceGetUtilizationRates(handle)
                memory = self._nvml.nvmlDeviceGetMemoryInfo(handle)
            except Exception:  # a GPU fallen off the bus must not stop the others
                continue
            out[f"gpu.{index}.util_pct"] = float(rates.gpu)
            out[f"gpu.{index}.memory_used_bytes"] = float(memory.used)
        return out

    def close(self) -> None:
        """Shut NVML down."""
        try:
            self._nvml.nvmlShutdown()
        except Exception:  # closing is best effort
            pass
