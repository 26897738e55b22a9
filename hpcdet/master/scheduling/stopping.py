"""Cancelling the jobs of trials that must stop, with one scheduler call per owner."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.dispatcher import Backend, JobPhase
from hpcdet.master.db import session_scope
from hpcdet.master.models import Experiment, Job, Trial
from hpcdet.master.scheduling import allocations
from hpcdet.master.scheduling.stop_policy import (
    DEFAULT_PREEMPTION_TIMEOUT,
    STOP_ASKED,
    must_stop_now,
    preemption_timeout,
)
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.transitions import transition
from hpcdet.states import STOPPING_TO_TERMINAL, State


def cancel_stopping(settings: MasterSettings, sessions: sessionmaker[Session],
                    backend: Backend) -> int:
    """Cancel the jobs of trials that must stop, with one scheduler call for all.

    Killed trials, and trials out of restarts (STOPPING_ERROR), lose their jobs at once.
    A trial stopped gracefully (by its searcher, a cancel, or a pause) is asked through
    ``should_preempt()``; its job is cancelled only if it is not running (a queued job
    is withdrawn), or once ``preemption_timeout`` has passed. Returns how many jobs.
    """
    with session_scope(sessions) as session:
        stopping = session.scalars(select(Trial).where(Trial.state.in_(STOP_ASKED))).all()
        jobs = _active_jobs(session, [t.id for t in stopping])
        busy = {j.trial_id for j in jobs} | allocations.trials_with_steps(
            session, [t.id for t in stopping])
        _end_idle_stopping(session, stopping, busy)
        by_id = {t.id: t for t in stopping}
        timeouts = _preemption_timeouts(session, {t.experiment_id for t in stopping})
        to_cancel = [j for j in jobs if j.job_id and not j.cancel_requested
                     and _must_cancel(by_id[j.trial_id], j, timeouts)]
        if to_cancel:
            cancel_jobs(session, settings, backend,
                        [(j.trial_id, str(j.job_id)) for j in to_cancel])
            for j in to_cancel:
                j.cancel_requested = True
        return len(to_cancel)


def cancel_jobs(session: Session, settings: MasterSettings, backend: Backend,
                jobs: Sequence[tuple[int, str]]) -> None:
    """Cancel ``(trial id, job id)`` pairs: one scheduler call per owner they are cancelled
    as (the experiment's owner in run-as-owner mode, else the service account)."""
    if not jobs:
        return
    owners = _owners(session, {trial_id for trial_id, _ in jobs}, settings)
    for owner, ids in _by_owner(jobs, owners).items():
        backend.cancel(ids, owner=owner)


def configs_of(session: Session, experiment_ids: set[int]) -> dict[int, dict[str, Any]]:
    """Each experiment's effective config, with one query."""
    if not experiment_ids:
        return {}
    return dict(session.execute(select(Experiment.id, Experiment.config).where(
        Experiment.id.in_(experiment_ids))).all())


def _end_idle_stopping(session: Session, stopping: Sequence[Trial], running: set[int]) -> None:
    for trial in stopping:
        if trial.id not in running and State(trial.state).is_stopping:
            transition(session, trial, STOPPING_TO_TERMINAL[State(trial.state)],
                       cause="nothing left to stop")


def _active_jobs(session: Session, trial_ids: Sequence[int]) -> list[Job]:
    if not trial_ids:
        return []
    return list(session.scalars(select(Job).where(Job.trial_id.in_(trial_ids), Job.active)))


def _preemption_timeouts(session: Session, experiment_ids: set[int]) -> dict[int, float]:
    """Each experiment's ``preemption_timeout`` in seconds (the default where unset)."""
    return {exp_id: preemption_timeout(config)
            for exp_id, config in configs_of(session, experiment_ids).items()}


def _must_cancel(trial: Trial, job: Job, timeouts: dict[int, float]) -> bool:
    """Not yet running (nothing to ask: a queued job is withdrawn), or the trial must stop
    now (:func:`.stop_policy.must_stop_now`)."""
    return job.phase != JobPhase.RUNNING.value or must_stop_now(
        trial, timeouts.get(trial.experiment_id, DEFAULT_PREEMPTION_TIMEOUT))


def _owners(session: Session, trial_ids: set[int], settings: MasterSettings) -> dict[int, str]:
    """``{trial id: experiment owner}`` in run-as-owner mode; empty otherwise."""
    if not settings.runas.owner_mode or not trial_ids:
        return {}
    rows = session.execute(select(Trial.id, Experiment.owner).join(
        Experiment, Experiment.id == Trial.experiment_id).where(Trial.id.in_(trial_ids)))
    return {trial_id: owner for trial_id, owner in rows}


def _by_owner(jobs: Sequence[tuple[int, str]],
              owners: Mapping[int, str]) -> dict[str | None, list[str]]:
    """Job ids grouped by the owner they are cancelled as (None: the service account)."""
    groups: dict[str | None, list[str]] = {}
    for trial_id, job_id in jobs:
        groups.setdefault(owners.get(trial_id), []).append(job_id)
    return groups
