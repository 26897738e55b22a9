"""The requests of ``det job update``: one job's new priority, pool or place, checked for
shape (an Invalid naming where and the bad key) before anything reads Slurm's queue."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hpcdet.master.errors import Invalid

UPDATE_KEYS = ("priority", "ahead_of", "behind_of", "resource_pool")
# Slurm: digits, or an array task (12_3); PBS: digits and the server name (12.pbs01).
_JOB_ID = re.compile(r"^\d+(?:_\d+|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*)?$")


@dataclass(frozen=True)
class UpdateRequest:
    """One job's update, as the API and ``det job update[-batch]`` ask for it."""

    job_id: str
    priority: int | None = None
    ahead_of: str | None = None
    behind_of: str | None = None
    resource_pool: str | None = None

    @property
    def other(self) -> str | None:
        """The job to go ahead of or behind, if this request reorders."""
        return self.ahead_of or self.behind_of


def parse_update(job_id: str, body: Mapping[str, Any], where: str) -> UpdateRequest:
    """The request in ``body`` for ``job_id``; Invalid naming ``where`` and the bad
    key."""
    unknown = sorted(set(body) - set(UPDATE_KEYS))
    if unknown:
        raise _bad(where, f"unknown key {unknown[0]!r} (known: {', '.join(UPDATE_KEYS)})")
    request = UpdateRequest(job_id=_job_id(job_id, where, "job id"),
                            priority=_priority(body.get("priority"), where),
                            ahead_of=_other(body.get("ahead_of"), where, "ahead_of"),
                            behind_of=_other(body.get("behind_of"), where, "behind_of"),
                            resource_pool=_pool_name(body.get("resource_pool"), where))
    _check_combination(request, where)
    return request


def _job_id(value: Any, where: str, what: str) -> str:
    text = str(value) if isinstance(value, int | str) and not isinstance(value, bool) else ""
    if not _JOB_ID.match(text):
        raise _bad(where, f"{what} must be a job id (Slurm: 12345, PBS: 12.server), got {value!r}")
    return text


def _priority(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 99:
        raise _bad(where, f"priority must be an integer from 1 to 99 (1 is the most "
                          f"important), got {value!r}")
    return value


def _other(value: Any, where: str, key: str) -> str | None:
    return None if value is None else _job_id(value, where, key)


def _pool_name(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _bad(where, f"resource_pool must be a pool name, got {value!r}")
    return value.strip()


def _check_combination(request: UpdateRequest, where: str) -> None:
    if request.ahead_of and request.behind_of:
        raise _bad(where, "give ahead_of or behind_of, not both")
    if request.other and (request.priority is not None or request.resource_pool):
        raise _bad(where, "ahead_of/behind_of cannot be combined with priority or "
                          "resource_pool (a new priority re-maps the nice); update one after "
                          "the other")
    if request.other == request.job_id:
        raise _bad(where, f"job {request.job_id} cannot be ordered against itself")
    if request.priority is None and request.resource_pool is None and not request.other:
        raise _bad(where, "nothing to update: give priority, ahead_of, behind_of or "
                          "resource_pool")


def _bad(where: str, message: str) -> Invalid:
    return Invalid("bad_request", f"{where}: {message}")

