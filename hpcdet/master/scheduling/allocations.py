"""Allocation mode's life cycle on the master: submit, follow, release, fall back.

An experiment with ``resources.allocation`` gets one allocation job (a Slurm batch job of
``slots`` tasks for ``walltime``) in which an agent (:mod:`hpcdet.launch.allocation_agent`)
runs its trials as ``srun`` steps. Once per reconcile cycle :meth:`AllocationManager.cycle`

* submits the allocation of every active experiment that asks for one and has none
  (intent row first, like trial jobs, so a master restart finds the job by name);
* polls all live allocations with one ``Backend.poll``;
* applies the steps the agents reported ended, and stops the steps of trials that must
  stop (:mod:`.allocation_steps`; QUEUED trials are placed into free slots when the agent
  asks for work, see :func:`.allocation_steps.place_queued`);
* releases an allocation once its experiment is no longer active (the agent exits; one
  that does not answer is cancelled);
* and falls back when an allocation ends early (walltime, node failure, a cancel behind
  the master's back): its trials go back to QUEUED with the usual restart accounting, and
  from then on the experiment's trials run as ordinary jobs. No new allocation is
  submitted for that experiment (an allocation that keeps ending early would otherwise
  hold every trial back; see docs/allocation-mode.md).

While an experiment's allocation is pending or running its queued trials wait for it
(:func:`held_for_allocations` is the reconciler's one filter).
"""

from __future__ import annotations

import logging
import posixpath
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend, JobPhase, JobRef, Submission
from hpcdet.dispatcher.allocation import render_allocation
from hpcdet.dispatcher.jobdir import MASTER_CERT_FILE, TOKEN_FILE
from hpcdet.dispatcher.transport import TransportUnavailableError
from hpcdet.errors import HpcdetError
from hpcdet.master.allocation_models import Allocation, AllocationStep
from hpcdet.master.db import session_scope
from hpcdet.master.models import Experiment, Trial, as_utc, utcnow
from hpcdet.master.queue.pools import pool_for_config
from hpcdet.master.scheduling import allocation_steps
from hpcdet.master.scheduling.allocation_config import (
    AllocationRequest,
    allocation_dir,
    allocation_request,
    allocation_spec,
)
from hpcdet.master.scheduling.tally import Tally
from hpcdet.master.security.tokens import hash_token
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.tls import job_cert_pem
from hpcdet.states import State

log = logging.getLogger(__name__)

PENDING, RUNNING, ENDED = "PENDING", "RUNNING", "ENDED"
RELEASED = "released"
SUBMIT_FAILED = "SUBMIT_FAILED"
# Seconds a released allocation's agent may stay silent before the allocation is cancelled.
RELEASE_GRACE = 60.0


@dataclass
class AllocationReport(Tally):
    """What one allocation cycle did (for logs, tests and benchmarks)."""

    submitted: int = 0  # allocation jobs
    steps_closed: int = 0  # trials' steps whose end was applied
    released: int = 0  # allocations let go (their experiment is no longer active)
    fell_back: int = 0  # allocations that ended early, their trials back to QUEUED


def held_for_allocations() -> ColumnElement[bool]:
    """Trials the reconciler must not submit as jobs: those with a step in an allocation,
    and the queued trials of an experiment whose allocation is pending or running."""
    live = select(Allocation.id).where(Allocation.experiment_id == Trial.experiment_id,
                                       Allocation.phase != ENDED)
    stepping = select(AllocationStep.id).where(AllocationStep.trial_id == Trial.id,
                                               AllocationStep.phase != allocation_steps.CLOSED)
    return or_(live.exists(), stepping.exists())


def trials_with_steps(session: Session, trial_ids: Sequence[int]) -> set[int]:
    """Those of ``trial_ids`` with a step not yet closed (still running somewhere)."""
    if not trial_ids:
        return set()
    return set(session.scalars(select(AllocationStep.trial_id).where(
        AllocationStep.trial_id.in_(trial_ids),
        AllocationStep.phase != allocation_steps.CLOSED)))


class AllocationManager:
    """Drives every experiment's allocation; the reconciler calls :meth:`cycle` once a cycle."""

    def __init__(self, settings: MasterSettings, sessions: sessionmaker[Session],
                 backend: Backend) -> None:
        self.settings, self.sessions, self.backend = settings, sessions, backend
        # Allocation jobs the last poll could not find anywhere (see _missing_twice).
        self._missing_once: set[str] = set()

    def cycle(self) -> AllocationReport:
        """Submit, poll, apply step exits, stop steps, place trials, release; one pass.

        A failure here is logged and the rest of the reconcile cycle goes on (experiments
        without allocations must not wait on it); an unreachable cluster stops the cycle.
        """
        try:
            return self._cycle()
        except TransportUnavailableError:
            raise
        except Exception:
            log.exception("the allocation cycle failed; the next cycle tries again")
            return AllocationReport()

    def _cycle(self) -> AllocationReport:
        report = AllocationReport()
        # First: an intent dropped here is submitted again below, in this same cycle, so
        # that the reconciler never sees the experiment without a live allocation.
        with session_scope(self.sessions) as session:
            self._recover_intents(session)
        report.submitted = self._submit_missing()
        report.fell_back = self._poll()
        steps = allocation_steps.StepDriver(self.settings, self.sessions, self.backend)
        report.steps_closed = steps.apply_exits()
        steps.stop_steps()
        report.released = self._release_drained()
        return report

    # submission -----------------------------------------------------------------------
    def _submit_missing(self) -> int:
        with session_scope(self.sessions) as session:
            wanted = [exp.id for exp in session.scalars(select(Experiment).where(
                Experiment.state == State.ACTIVE.value))
                if allocation_request(exp.config) is not None
                and not _has_allocation_or_fell_back(session, exp.id)]
        return sum(self._submit_one(exp_id) for exp_id in wanted)

    def _submit_one(self, experiment_id: int) -> int:
        """Record the intent, write the agent's files, render and ``sbatch``, record the id."""
        with session_scope(self.sessions) as session:
            exp = session.get_one(Experiment, experiment_id)
            request = allocation_request(exp.config)
            assert request is not None
            allocation = Allocation(experiment_id=exp.id, slots=request.slots)
            session.add(allocation)
            session.flush()
            token = secrets.token_urlsafe(32)  # only its hash is stored
            allocation.token = hash_token(token)
            allocation.job_dir = allocation_dir(self.settings, exp.id, allocation.id, exp.owner)
            allocation.name = f"det-{exp.id}-alloc-{allocation.id}"
            config, owner, pk = dict(exp.config), exp.owner, allocation.id
            job_dir, name = allocation.job_dir, allocation.name
        try:
            submission = self._prepare(pk, job_dir, name, config, owner, request, token)
            job_id = self.backend.submit(submission)
        except TransportUnavailableError:
            raise  # the intent stays; _recover_intents adopts or drops it next cycle
        except (HpcdetError, OSError) as exc:
            with session_scope(self.sessions) as session:
                _end(session.get_one(Allocation, pk), SUBMIT_FAILED)
            log.warning("experiment %s: submitting its allocation failed, its trials run as "
                        "jobs: %s", experiment_id, exc)
            return 0
        with session_scope(self.sessions) as session:
            session.get_one(Allocation, pk).job_id = job_id
        log.info("experiment %s: allocation %s submitted as job %s", experiment_id, pk, job_id)
        return 1

    def _prepare(self, pk: int, job_dir: str, name: str, config: dict[str, Any], owner: str,
                 request: AllocationRequest, token: str) -> Submission:
        files = self.backend.transport
        files.make_dirs(job_dir, 0o700)
        files.write_file(posixpath.join(job_dir, TOKEN_FILE), token.encode(), 0o600)
        cert = job_cert_pem(self.settings.tls)
        if cert is not None:
            files.write_file(posixpath.join(job_dir, MASTER_CERT_FILE), cert.encode(), 0o644)
        pool = pool_for_config(self.sessions, self.settings, config)
        spec = allocation_spec(self.settings, self.backend, pool, pk, job_dir, name, config,
                               owner, request, tls=cert is not None)
        return render_allocation(self.backend, spec)

    # polling ----------------------------------------------------------------------------
    def _poll(self) -> int:
        """One poll for every live allocation; returns how many ended early (fell back)."""
        with session_scope(self.sessions) as session:
            rows = session.execute(select(Allocation.id, Allocation.job_id, Allocation.job_dir)
                                   .where(Allocation.phase != ENDED,
                                          Allocation.job_id.is_not(None))).all()
        if not rows:
            return 0
        statuses = self.backend.poll([JobRef(str(job_id), job_dir)
                                      for _, job_id, job_dir in rows])
        fell_back = 0
        with session_scope(self.sessions) as session:
            for pk, job_id, _ in rows:
                status = statuses.get(str(job_id))
                allocation = session.get_one(Allocation, pk)
                if status is None or status.phase is JobPhase.UNKNOWN \
                        or not self._missing_twice(str(job_id), status.phase):
                    continue
                allocation.native_state = status.native_state
                allocation.nodes = status.nodes or allocation.nodes
                if status.phase is JobPhase.RUNNING and allocation.phase == PENDING:
                    allocation.phase, allocation.started_at = RUNNING, utcnow()
                elif status.phase.is_terminal:
                    fell_back += self._ended(session, allocation, status.phase)
        return fell_back

    def _missing_twice(self, job_id: str, phase: JobPhase) -> bool:
        """False the first time no source knows the job (a busy controller answers so for
        live jobs; see :meth:`.polling.Poller._settle_missing`); True otherwise."""
        if phase is not JobPhase.MISSING:
            self._missing_once.discard(job_id)
            return True
        if job_id in self._missing_once:
            return True
        self._missing_once.add(job_id)
        return False

    def _recover_intents(self, session: Session) -> None:
        """Adopt an allocation a previous master submitted but never recorded, or drop it."""
        intents = session.scalars(select(Allocation).where(
            Allocation.phase != ENDED, Allocation.job_id.is_(None))).all()
        if not intents:
            return
        found = self.backend.find([a.name for a in intents])
        for allocation in intents:
            if allocation.name in found:
                allocation.job_id = found[allocation.name]
            else:  # never reached the scheduler: the next cycle submits a new one
                session.delete(allocation)

    def _ended(self, session: Session, allocation: Allocation, phase: JobPhase) -> int:
        """The allocation job is over: released as asked, or early (its trials fall back)."""
        early = not allocation.release_requested
        _end(allocation, phase.value if early else RELEASED)
        allocation_steps.fall_back(self.settings, session, allocation, phase)
        if early:
            log.warning("allocation %s (job %s) of experiment %s ended early (%s); its trials "
                        "run as jobs from now on", allocation.id, allocation.job_id,
                        allocation.experiment_id, phase.value)
        return int(early)

    # release ----------------------------------------------------------------------------
    def _release_drained(self) -> int:
        """Let go of allocations whose experiments are no longer active (none runs a step).

        A running allocation's agent is told to exit; a pending one, or one whose agent
        stays silent for :data:`RELEASE_GRACE` seconds after that, is cancelled.
        """
        released = 0
        to_cancel: list[str] = []
        with session_scope(self.sessions) as session:
            rows = session.execute(select(Allocation, Experiment.state).join(
                Experiment, Experiment.id == Allocation.experiment_id).where(
                Allocation.phase != ENDED, Allocation.job_id.is_not(None))).all()
            for allocation, exp_state in rows:
                if exp_state == State.ACTIVE.value or allocation_steps.busy(session, allocation):
                    continue
                if not allocation.release_requested:
                    allocation.release_requested = True
                    released += 1
                if not allocation.cancel_requested and _agent_gone(allocation):
                    allocation.cancel_requested = True
                    to_cancel.append(str(allocation.job_id))
        if to_cancel:
            self.backend.cancel(to_cancel)
        return released


def _has_allocation_or_fell_back(session: Session, experiment_id: int) -> bool:
    """A live allocation exists, or one ended early (the experiment runs jobs since)."""
    return session.scalars(select(Allocation.id).where(
        Allocation.experiment_id == experiment_id,
        or_(Allocation.phase != ENDED, Allocation.end_cause != RELEASED)).limit(1)).first() \
        is not None


def _agent_gone(allocation: Allocation) -> bool:
    if allocation.phase == PENDING or allocation.last_seen_at is None:
        return True
    return (utcnow() - as_utc(allocation.last_seen_at)).total_seconds() > RELEASE_GRACE


def _end(allocation: Allocation, cause: str) -> None:
    allocation.phase, allocation.end_cause, allocation.ended_at = ENDED, cause, utcnow()
