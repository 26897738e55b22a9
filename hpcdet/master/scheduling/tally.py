"""Counts of what one pass of the master's loop did, summed pass over pass.

The reports of the reconcile cycle, the search and allocation mode (for logs, tests and
benchmarks) are tallies: dataclasses of counts, nested tallies included.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Self


@dataclass
class Tally:
    """A dataclass of ``int`` counts (and nested tallies); subclasses name the counts."""

    def add(self, other: Self) -> None:
        """Add another pass's counts to these (nested tallies field by field)."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, Tally):
                mine.add(theirs)
            else:
                setattr(self, f.name, mine + theirs)
