"""Filters of the job queue that ``GET /api/v1/jobs`` and the ``/queue`` page share:
one user's jobs (``user``) and a case-insensitive search (``q``) over a row's id, name,
type, user, pool, partition, QOS and pending reason. A search that is a job id (``1234``,
an array task ``1234_5``) finds that job alone, so the pages can link to one job's row.

Rows keep their ``position`` in the (pool's) whole queue, so a filtered row still says how
many jobs are ahead of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hpcdet.dispatcher import registry

# Longer searches are cut: nothing in a row is this long, and the page repeats the value.
MAX_SEARCH = 200
JOB_ID = re.compile(r"\d+(_\d+)?")
_SEARCHED = ("job_id", "name", "type", "user", "slurm_user", "pool", "partition", "qos",
             "reason")


@dataclass(frozen=True)
class JobFilter:
    """Which rows to keep; empty values keep every row."""

    user: str | None = None
    search: str | None = None
    # Whose words the search also finds a pending reason by: the master's scheduler.
    scheduler: str = registry.names()[0]

    @classmethod
    def of(cls, user: str | None, search: str | None,
           scheduler: str | None = None) -> JobFilter:
        """A filter from query values (stripped; empty means none; search cut to
        :data:`MAX_SEARCH` characters), for ``scheduler``'s queue (default: the default
        resource manager's)."""
        user = (user or "").strip() or None
        search = (search or "").strip()[:MAX_SEARCH] or None
        return cls(user, search, scheduler or registry.names()[0])

    @property
    def empty(self) -> bool:
        return self.user is None and self.search is None

    def keeps(self, row: Mapping[str, Any]) -> bool:
        """Whether ``row`` (a ``det job list`` row) passes."""
        if self.user is not None and self.user not in (row.get("user"), row.get("slurm_user")):
            return False
        if self.search is None:
            return True
        if JOB_ID.fullmatch(self.search):
            return str(row.get("job_id")) == self.search
        return self.search.casefold() in _haystack(row, self.scheduler)

    def apply(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows that pass, in their order."""
        return [row for row in rows if self.keeps(row)]


def _haystack(row: Mapping[str, Any], scheduler: str) -> str:
    values = [row.get(key) for key in _SEARCHED]
    values.append(registry.scheduler(scheduler).reason_words(row.get("reason")))
    return " ".join(str(value) for value in values if value is not None).casefold()
