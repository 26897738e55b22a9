"""The cluster's job queue in scheduler-neutral terms: what ``det job list`` shows and what
``det job update`` may change.

Each backend reads its scheduler's queue with one command (:meth:`Backend.read_queue`) into
:class:`QueueEntry` rows, in the scheduler's own order, and changes a queued job with one
command (:meth:`Backend.update_job`). ``partition`` is the job's pool in the scheduler's
words: a Slurm partition or a PBS queue.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from hpcdet.errors import HpcdetError, SchedulerError


@dataclass(frozen=True)
class QueueEntry:
    """One pending or running job as the scheduler reports it."""

    job_id: str
    partition: str  # the pool: a Slurm partition (``a,b`` while pending in several) or a PBS queue
    name: str
    user: str
    state: str  # the scheduler's own word (PENDING, R, Q, ...)
    reason: str | None  # why it waits, in the scheduler's words (see Backend.reason_words)
    priority: int  # the scheduler's priority: a larger number runs sooner
    nice: int  # Slurm's nice; 0 where the scheduler has none
    qos: str | None
    account: str | None
    submit_time: str | None  # ISO 8601 with the zone
    tasks: int
    cpus: int
    nodes: int
    tres: Mapping[str, str] = field(default_factory=dict)  # e.g. {"gres/gpu": "2"}
    comment: str | None = None  # hpcdet's tag of the job (see hpcdet.dispatcher.tags)
    # Waiting in the queue (pending, queued, held), as opposed to holding resources.
    pending: bool = False
    # Held in the queue (Slurm: pending with priority 0; PBS: state H): it waits for a release.
    held: bool = False
    # The nodes a running job holds (empty while it waits, or where the scheduler says not).
    node_names: tuple[str, ...] = ()
    # Seconds it has run so far, and its wall-time limit (None: none, or not known).
    time_used: int | None = None
    time_limit: int | None = None
    # When the scheduler expects a waiting job to start (ISO 8601 with the zone), where it
    # has computed that (Slurm's backfill, PBS's estimated.start_time); None otherwise.
    expected_start: str | None = None

    @property
    def gpus(self) -> int:
        """GPUs the job holds (running) or asks for (pending)."""
        value = self.tres.get("gres/gpu")
        return int(value) if value and value.isdigit() else 0

    @property
    def partitions(self) -> tuple[str, ...]:
        """A pending Slurm job may wait in several partitions at once (``-p a,b``)."""
        return tuple(part for part in self.partition.split(",") if part)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able copy (the master stores it in the queue snapshot)."""
        data = asdict(self)
        data["tres"] = dict(self.tres)
        data["node_names"] = list(self.node_names)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueueEntry:
        """The inverse of :meth:`to_dict`; unknown keys are ignored."""
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        known["node_names"] = tuple(known.get("node_names") or ())
        return cls(**known)


@dataclass(frozen=True)
class JobUpdate:
    """What one update of a queued job changes; None leaves a value as it is.

    ``partition`` is the pool (Slurm partition, PBS queue); ``nice`` orders jobs inside a
    pool (larger runs later; PBS backends turn it into ``qalter -p``); ``qos`` is Slurm's.
    """

    partition: str | None = None
    qos: str | None = None
    nice: int | None = None

    @property
    def empty(self) -> bool:
        return self.partition is None and self.qos is None and self.nice is None


def split_operator_nice(update: JobUpdate) -> tuple[JobUpdate, JobUpdate | None]:
    """``update`` of a job its owner updates, split into what the owner may change and a
    negative nice (raising the job above others), which only a Slurm operator may set: the
    service account (an operator, docs/admin/security.md) sends that part itself; None when
    there is none."""
    if update.nice is None or update.nice >= 0:
        return update, None
    return replace(update, nice=None), JobUpdate(nice=update.nice)


class JobUpdateRefusedError(SchedulerError):
    """The scheduler refused an update; the message is the scheduler's own reason."""

    def __init__(self, error: SchedulerError) -> None:
        super().__init__(error.argv, error.returncode, error.stdout, error.stderr)
        self.reason = error.stderr.strip() or error.stdout.strip() or str(error)
        self.args = (self.reason,)


# Reason words that speak of the job's owner (``the owner's QOS allows no more ...``) start
# with this phrase; :func:`personal_words` names the owner in it for whoever reads them.
OWNER = "the owner's"


def personal_words(words: str | None, owner: str | None, viewer: str | None) -> str | None:
    """``words`` as ``viewer`` should read them about ``owner``'s job: "your ..." for their
    own job, "ann's ..." for another's (``the owner's`` when either is not known)."""
    if not words or not words.startswith(OWNER) or not owner or not viewer:
        return words
    return ("your" if owner == viewer else f"{owner}'s") + words[len(OWNER):]


class OrderImpossibleError(HpcdetError):
    """The scheduler cannot put a job where it was asked to go (the master answers 409)."""
