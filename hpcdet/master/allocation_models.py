"""Tables of allocation mode (``resources.allocation``, docs/allocation-mode.md).

An :class:`Allocation` is one long batch job per experiment in which an agent runs the
experiment's trials one after another as ``srun`` steps; an :class:`AllocationStep` is one
run of one trial placed into it. Neither has a lifecycle state of the kind
:func:`hpcdet.master.transitions.transition` writes: ``phase`` columns are observations
(like ``jobs.phase``), and the trials' own states still change only through ``transition``.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from hpcdet.master.model_base import Base, utcnow


class Allocation(Base):
    """One allocation job of an experiment. ``job_id`` NULL: intent to submit recorded."""

    __tablename__ = "allocations"

    id: Mapped[int] = mapped_column(primary_key=True)
    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), index=True)
    job_id: Mapped[str | None] = mapped_column(String(64), index=True)
    # Unique per allocation: a restarted master finds a job it submitted by this name.
    name: Mapped[str] = mapped_column(String(128), default="")
    job_dir: Mapped[str] = mapped_column(Text, default="")
    slots: Mapped[int] = mapped_column(Integer)
    # sha256 (hex) of the agent's bearer token; the token itself is only in the job's files.
    token: Mapped[str] = mapped_column(String(64), default="")
    # PENDING, RUNNING (the scheduler or the agent said so), ENDED (see end_cause).
    phase: Mapped[str] = mapped_column(String(32), default="PENDING", index=True)
    native_state: Mapped[str | None] = mapped_column(String(64))
    nodes: Mapped[str | None] = mapped_column(Text)
    # The master asked the agent to exit (the search has nothing left for it).
    release_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    # Why it ended: "released" (the master let it go) or the scheduler's word for an early
    # end (TIMEOUT, CANCELLED, NODE_FAIL, ...), which sends its trials back to jobs.
    end_cause: Mapped[str | None] = mapped_column(String(64))
    submitted_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    last_seen_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class AllocationStep(Base):
    """One run of a trial inside an allocation: placed, started by the agent, exited.

    ``phase``: ASSIGNED (placed; the agent has not started it), RUNNING, EXITED (the agent
    reported its exit; the reconciler has not applied it yet), CLOSED (applied).
    """

    __tablename__ = "allocation_steps"

    id: Mapped[int] = mapped_column(primary_key=True)
    allocation_id: Mapped[int] = mapped_column(
        ForeignKey("allocations.id", ondelete="CASCADE"), index=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"),
                                          index=True)
    run_id: Mapped[int] = mapped_column(Integer)
    slots: Mapped[int] = mapped_column(Integer)
    script_path: Mapped[str] = mapped_column(Text, default="")
    phase: Mapped[str] = mapped_column(String(16), default="ASSIGNED", index=True)
    # The Slurm step id (``JOBID.STEPID``) as the agent saw it, when it could tell.
    step_id: Mapped[str | None] = mapped_column(String(64))
    exit_code: Mapped[int | None] = mapped_column(Integer)
    # The master asked the agent to end this step (a kill, or a stop past its timeout).
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    placed_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


__all__ = ["Allocation", "AllocationStep"]
