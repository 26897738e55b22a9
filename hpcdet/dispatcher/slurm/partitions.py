"""What Slurm's partitions hold: their nodes (CPUs, GPUs, state) and pending jobs.

Two commands, whatever the cluster's size: one ``sinfo --Node`` (one line per node and
partition, machine format) and one ``squeue`` counting the pending jobs per partition.
The master reads this on a timer and caches it (see :mod:`hpcdet.master.queue.pools`); nothing
here is called per API request.

Formats are Slurm 22.05's. ``Gres``/``GresUsed`` look like ``gpu:2``, ``gpu:a100:2(S:0-1)``
or ``gpu:a100:1(IDX:0),gpu:v100:0(IDX:N/A)``, and ``(null)`` for none.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from hpcdet.dispatcher.commands import Runner
from hpcdet.dispatcher.pools import NodeInfo, PartitionInfo

logger = logging.getLogger(__name__)

# "|" after every field, no padding; Partition marks Slurm's default partition with "*".
SINFO_FORMAT = "Partition:|,NodeList:|,StateLong:|,CPUs:|,CPUsState:|,Gres:|,GresUsed:|"
_SINFO_FIELDS = 7
_PARENTHESES = re.compile(r"\([^)]*\)")


def read_partitions(runner: Runner, *, sinfo: str = "sinfo",
                    squeue: str = "squeue") -> list[PartitionInfo]:
    """Every partition ``sinfo`` shows, sorted by name, with its nodes and pending jobs."""
    nodes = parse_sinfo(runner((sinfo, "--noheader", "--Node", f"--Format={SINFO_FORMAT}")))
    pending = parse_pending(runner((squeue, "--noheader", "--array", "--states=PENDING",
                                    "--format=%P")))
    return [PartitionInfo(name, is_default, tuple(members), pending.get(name, 0))
            for (name, is_default), members in sorted(nodes.items())]


def parse_sinfo(stdout: str) -> dict[tuple[str, bool], list[NodeInfo]]:
    """``{(partition, is_default): [node, ...]}`` from ``sinfo --Node --Format`` lines."""
    partitions: dict[tuple[str, bool], list[NodeInfo]] = {}
    for line in stdout.splitlines():
        if not line.strip():
            continue
        parsed = _parse_sinfo_line(line)
        if parsed is None:
            logger.warning("skipping an unexpected sinfo line: %r", line)
            continue
        partition, node = parsed
        partitions.setdefault(partition, []).append(node)
    return partitions


def _parse_sinfo_line(line: str) -> tuple[tuple[str, bool], NodeInfo] | None:
    """``batch*|node2|mixed|4|1/3/0/4|gpu:2|gpu:1|`` -> (("batch", True), node)."""
    fields = [field.strip() for field in line.strip().removesuffix("|").split("|")]
    if len(fields) != _SINFO_FIELDS or not fields[3].isdigit():
        return None
    partition, name, state, cpus, cpus_state, gres, gres_used = fields
    gpus, types = gpu_count(gres)
    node = NodeInfo(name=name, state=state, cpus=int(cpus),
                    cpus_allocated=_allocated_cpus(cpus_state), gpus=gpus,
                    gpus_used=gpu_count(gres_used)[0], gpu_types=types)
    return (partition.removesuffix("*"), partition.endswith("*")), node


def _allocated_cpus(cpus_state: str) -> int:
    """The ``A`` of sinfo's ``A/I/O/T`` CPU counts."""
    allocated = cpus_state.split("/", 1)[0]
    return int(allocated) if allocated.isdigit() else 0


def gpu_count(gres: str) -> tuple[int, tuple[str, ...]]:
    """(GPUs, GPU types) in a ``Gres``/``GresUsed`` value; ``(0, ())`` for ``(null)``."""
    total, types = 0, []
    for item in _gres_items(gres):
        parts = item.split(":")
        if parts[0] != "gpu" or len(parts) < 2 or not parts[-1].isdigit():
            continue
        total += int(parts[-1])
        if len(parts) >= 3 and parts[1] not in ("", "(null)"):
            types.append(parts[1])
    return total, tuple(dict.fromkeys(types))


def _gres_items(gres: str) -> Iterable[str]:
    """The comma-separated items, with ``(S:0-1)``/``(IDX:0,1)`` (which hold commas) cut."""
    return (item.strip() for item in _PARENTHESES.sub("", gres).split(",") if item.strip())


def parse_pending(stdout: str) -> Counter[str]:
    """Pending jobs per partition from ``squeue --format=%P`` lines (``a,b`` counts for both)."""
    counts: Counter[str] = Counter()
    for line in stdout.splitlines():
        counts.update(_names(line.strip().split(",")))
    return counts


def _names(parts: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(part.strip() for part in parts if part.strip()))
