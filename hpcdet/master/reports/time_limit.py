"""The time limit a job asked Slurm for, in words (``1 minute``, ``2 hours 30 minutes``),
for the failure summary's "hit its time limit of ...".

The limit is read from the config's ``slurm.sbatch_args`` (``--time=1``, ``--time 1``,
``-t 1``, ``-t1``), in Slurm's forms: ``minutes``, ``minutes:seconds``,
``hours:minutes:seconds``, ``days-hours``, ``days-hours:minutes`` and
``days-hours:minutes:seconds``. A limit that came from elsewhere (a partition's default or
MaxTime, a site template) is not known here: the summary then names no limit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_OPTION = re.compile(r"^(?:--time(?:=|\s+)|-t\s*)(\S+)$")
_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def config_time_limit(config: Mapping[str, Any] | None) -> str | None:
    """The last ``--time`` of ``slurm.sbatch_args`` in words, None when none (or odd)."""
    slurm = (config or {}).get("slurm")
    args = slurm.get("sbatch_args") if isinstance(slurm, Mapping) else None
    seconds = None
    for item in args if isinstance(args, list) else []:
        found = _OPTION.match(str(item).strip())
        if found:
            seconds = slurm_seconds(found.group(1))
    return None if seconds is None else duration_words(seconds)


def slurm_seconds(text: str) -> int | None:
    """Seconds of a Slurm ``--time`` value; None for ``infinite`` or anything unreadable."""
    days, _, rest = text.rpartition("-") if "-" in text else ("", "", text)
    if not (days == "" or days.isdigit()) or not all(p.isdigit() for p in rest.split(":")):
        return None
    parts = [int(p) for p in rest.split(":")]
    if len(parts) > 3:
        return None
    if days:  # days-hours[:minutes[:seconds]]
        hours, minutes, seconds = (parts + [0, 0])[:3]
        return int(days) * 86400 + hours * 3600 + minutes * 60 + seconds
    hms = {1: (0, parts[0], 0), 2: (0, *parts), 3: tuple(parts)}[len(parts)]
    return hms[0] * 3600 + hms[1] * 60 + hms[2]


def duration_words(seconds: int) -> str:
    """``1 minute``, ``1 hour 30 minutes``, ``2 days``: the non-zero units, largest first."""
    words = []
    for name, size in _UNITS:
        count, seconds = divmod(seconds, size)
        if count:
            words.append(f"{count} {name}" + ("s" if count != 1 else ""))
    return " ".join(words) or "0 seconds"
