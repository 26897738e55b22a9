"""Runs each experiment's searcher: starts it, feeds it events, and carries out its actions.

The searcher itself (:mod:`hpcdet.searcher`) is pure arithmetic. This module is where it
meets the database: for every active experiment with something new (unconsumed validation
events from :class:`~hpcdet.master.models.SearcherEvent`, or trials that ended and the
searcher has not heard of), it restores the searcher from ``experiments.searcher_state``,
applies the events in order, creates the trials it asks for, stops the trials it stops,
and saves the new state *in the same transaction* that marks the events consumed. A master
that restarts therefore continues the same search: no trial is created twice, none is lost.

A cycle costs O(its events), not O(trials): the searcher stays in memory between cycles and
its changes are saved as journal entries (:mod:`hpcdet.master.experiments.searcher_store`),
and only the trials the events and actions name are loaded.
"""

from __future__ import annotations

import logging
import secrets
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import false, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, defer

from hpcdet.expconf import length_value
from hpcdet.master.experiments.ending import finish_searched
from hpcdet.master.experiments.lifecycle import fail
from hpcdet.master.experiments.searcher_store import (
    LiveSearcher,
    SearcherStore,
    build_searcher,
    save_snapshot,
)
from hpcdet.master.models import Experiment, SearcherEvent, Trial, utcnow
from hpcdet.master.reports.logs import add_system_line
from hpcdet.master.scheduling.cycle_steps import SearchReport
from hpcdet.master.scheduling.job_dirs import trial_job_dir
from hpcdet.master.security.tokens import hash_token
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.transitions import enter_all, transition
from hpcdet.searcher import Create, Searcher, Stop, TrialRequest
from hpcdet.searcher.asha import AdaptiveAshaSearch
from hpcdet.states import State

log = logging.getLogger(__name__)

# Events consumed per experiment per cycle: bounds one transaction's size.
EVENT_BATCH = 50_000
# Ids per IN list: bounded for the databases' parameter limits.
_CHUNK = 10_000
# How a trial's ending reads to the searcher.
_EXIT_REASON = {State.COMPLETED: "completed", State.ERROR: "errored", State.CANCELED: "errored"}
_REPORTED_EXIT = {"invalid_hp": "invalid_hp", "errored": "errored",
                  "user_requested_stop": "completed"}
# The history's cause for a stop that is not early (the trial gave what was asked of it).
_DONE_CAUSE = "the searcher has what it needs from this trial"


@dataclass
class _Work:
    """One experiment's pending input for this pass."""

    events: list[SearcherEvent] = field(default_factory=list)
    exited: list[Trial] = field(default_factory=list)


class SearchDriver:
    """Starts searchers and feeds them events; called once per reconcile cycle."""

    def __init__(self, settings: MasterSettings, store: SearcherStore | None = None) -> None:
        self.settings = settings
        self.store = store or SearcherStore()

    def step(self, session: Session) -> SearchReport:
        """One pass: start new searches, then process every experiment with pending work.

        A searcher that raises ends its own experiment in ERROR instead of failing the
        reconcile cycle (polls, submissions) for every experiment, every cycle: the pass is
        rolled back (the other experiments' work is redone next cycle, as after a crash) and
        only the failure is recorded. The database's own errors still fail the cycle.
        """
        working: list[int] = []  # the experiment being worked on
        try:
            return self._pass(session, working)
        except SQLAlchemyError:
            raise
        except Exception as exc:
            if not working:
                raise
            session.rollback()
            log.exception("experiment %s: its searcher failed; the experiment ends in ERROR",
                          working[-1])
            fail(session, session.get_one(Experiment, working[-1]),
                 f"its searcher failed: {type(exc).__name__}: {exc}")
            return SearchReport()

    def _pass(self, session: Session, working: list[int]) -> SearchReport:
        report = SearchReport()
        # The saved state is read only when a searcher must be restored (it grows with the
        # trials): not for the searchers kept in memory.
        experiments = select(Experiment).options(defer(Experiment.searcher_state))
        for exp in session.scalars(experiments.where(
                Experiment.state == State.ACTIVE.value, Experiment.searcher_state.is_(None),
                Experiment.unmanaged == false())):
            working.append(exp.id)
            self._start(session, exp, report)
        pending = self._pending_work(session)
        for exp in session.scalars(experiments.where(Experiment.id.in_(pending))):
            working.append(exp.id)
            self._advance(session, exp, pending[exp.id], report)
        working.clear()
        self.store.keep_only(list(session.scalars(select(Experiment.id).where(
            Experiment.state == State.ACTIVE.value))))
        return report

    # starting -----------------------------------------------------------------------
    def _start(self, session: Session, exp: Experiment, report: SearchReport) -> None:
        searcher = build_searcher(exp.config)
        requests = _adopt_legacy_trials(session, exp, searcher.initial_trials())
        self._create_trials(session, exp, requests)
        save_snapshot(session, exp, searcher)
        _set_progress(exp, searcher)
        report.experiments_started += 1
        report.trials_created += len(requests)

    # pending input ------------------------------------------------------------------
    def _pending_work(self, session: Session) -> dict[int, _Work]:
        work: dict[int, _Work] = defaultdict(_Work)
        active = select(Experiment.id).where(Experiment.state == State.ACTIVE.value,
                                             Experiment.searcher_state.is_not(None))
        for event in session.scalars(select(SearcherEvent).where(
                SearcherEvent.processed == false(), SearcherEvent.experiment_id.in_(active))
                .order_by(SearcherEvent.id).limit(EVENT_BATCH)):
            work[event.experiment_id].events.append(event)
        terminal = [s.value for s in State if s.is_terminal]
        # "= false", not "NOT ...": then both databases seek these rows in their indexes
        # (ix_searcher_events_processed_id above, ix_trials_searcher_closed_state here)
        # instead of reading every event or every ended trial of the experiment.
        for trial in session.scalars(select(Trial).where(
                Trial.experiment_id.in_(active), Trial.searcher_closed == false(),
                Trial.state.in_(terminal)).order_by(Trial.ended_at, Trial.id)):
            work[trial.experiment_id].exited.append(trial)
        return work

    # advancing ----------------------------------------------------------------------
    def _advance(self, session: Session, exp: Experiment, work: _Work,
                 report: SearchReport) -> None:
        live = self.store.open(session, exp)
        searcher = live.searcher
        by_id = _trials_by_id(session, {e.trial_id for e in work.events})
        actions: list[Create | Stop] = []
        stop_causes: dict[str, str] = {}
        for event in work.events:
            actions += self._on_event(session, exp, live, by_id.get(event.trial_id), event,
                                      stop_causes)
        for trial in work.exited:
            actions += live.exited(str(trial.request_id), _exit_reason(trial))
            trial.searcher_closed = True
        trials = _stop_targets(session, exp.id, [*by_id.values(), *work.exited], actions)
        self._carry_out(session, exp, trials, actions, report, stop_causes)
        self._mark_consumed(session, [e.id for e in work.events])
        report.events_consumed += len(work.events)
        self.store.save(session, exp, live)
        _set_progress(exp, searcher)
        if searcher.is_complete():
            finish_searched(session, exp, failed=searcher.is_failure())
            report.experiments_finished += 1

    @staticmethod
    def _on_event(session: Session, exp: Experiment, live: LiveSearcher, trial: Trial | None,
                  event: SearcherEvent, stop_causes: dict[str, str]) -> list[Create | Stop]:
        """Feed one validation to the searcher; note why it stops this trial, if it does."""
        if trial is None or trial.request_id is None or trial.searcher_closed:
            return []
        values = _searcher_values(exp.config["searcher"], event)
        if isinstance(values, str):
            add_system_line(session, trial.id, f"searcher: {values}; this report is ignored")
            return []
        metric, time_units = values
        actions = live.validation(trial.request_id, metric, time_units)
        for action in actions:
            if isinstance(action, Stop) and action.trial_id == trial.request_id:
                trial.stop_reason = _stop_reason(live.searcher, time_units)
                stop_causes[trial.request_id] = _stop_cause(exp.config["searcher"],
                                                            trial.stop_reason, time_units)
        return actions

    def _carry_out(self, session: Session, exp: Experiment, trials: dict[str, Trial],
                   actions: Iterable[Create | Stop], report: SearchReport,
                   stop_causes: dict[str, str]) -> None:
        creates = [a.request for a in actions if isinstance(a, Create)]
        self._create_trials(session, exp, creates)
        report.trials_created += len(creates)
        for action in actions:
            if isinstance(action, Stop) and action.trial_id in trials:
                cause = stop_causes.get(action.trial_id, _DONE_CAUSE)
                report.trials_stopped += _stop(session, trials[action.trial_id], cause)

    # persistence --------------------------------------------------------------------
    def _create_trials(self, session: Session, exp: Experiment,
                       requests: Sequence[TrialRequest]) -> None:
        trials = [Trial(experiment_id=exp.id, hparams=request.hparams, seed=request.seed,
                        request_id=request.request_id,
                        # replaced by a fresh token's hash at each submission
                        token=hash_token(secrets.token_urlsafe(32)))
                  for request in requests]
        if not trials:
            return
        enter_all(session, trials, State.QUEUED,
                  cause=f"created by the {exp.config['searcher']['name']} searcher")
        for trial in trials:
            trial.job_dir = trial_job_dir(self.settings, exp.id, trial.id, exp.owner)

    @staticmethod
    def _mark_consumed(session: Session, event_ids: list[int]) -> None:
        for start in range(0, len(event_ids), _CHUNK):
            chunk = event_ids[start:start + _CHUNK]
            # synchronize_session=False: the loaded events are not used again, and matching
            # them in Python costs more than the UPDATE itself.
            session.execute(update(SearcherEvent).where(SearcherEvent.id.in_(chunk))
                            .values(processed=True)
                            .execution_options(synchronize_session=False))



def _adopt_legacy_trials(session: Session, exp: Experiment,
                         requests: Sequence[TrialRequest]) -> Sequence[TrialRequest]:
    """Give the first requests to the trials an experiment already has without one, and
    return the requests left to create.

    Only an experiment created before schema 0002 (which added the searcher's state) has
    such trials: a master upgraded under it starts its searcher afresh, and without this
    the searcher would create a second trial beside the running one, then fail on the old
    one's exit (tests/unit/master/test_master_upgrade.py).
    """
    legacy = list(session.scalars(select(Trial).where(
        Trial.experiment_id == exp.id, Trial.request_id.is_(None)).order_by(Trial.id)))
    for trial, request in zip(legacy, requests, strict=False):  # more requests than trials
        trial.request_id = request.request_id
    return requests[len(legacy):]


def _set_progress(exp: Experiment, searcher: Searcher) -> None:
    progress = min(1.0, float(searcher.progress()))
    # A single trial's own reports (POST /trials/<id>/progress) are finer than the
    # searcher's 0-or-1: keep the larger.
    exp.progress = max(progress, exp.progress or 0.0) if exp.searcher_name == "single" \
        else progress


def _trials_by_id(session: Session, trial_ids: set[int]) -> dict[int, Trial]:
    """The trials with these ids (those the cycle's events come from)."""
    ids, found = sorted(trial_ids), dict[int, Trial]()
    for start in range(0, len(ids), _CHUNK):
        found.update((t.id, t) for t in session.scalars(
            select(Trial).where(Trial.id.in_(ids[start:start + _CHUNK]))))
    return found


def _stop_targets(session: Session, experiment_id: int, loaded: Iterable[Trial],
                  actions: Iterable[Create | Stop]) -> dict[str, Trial]:
    """The trials the actions stop, by request id: mostly loaded already (ASHA stops the
    trial whose validation it read); the others are looked up by their request id."""
    by_request = {str(t.request_id): t for t in loaded if t.request_id is not None}
    missing = sorted({a.trial_id for a in actions if isinstance(a, Stop)} - set(by_request))
    for start in range(0, len(missing), _CHUNK):
        by_request.update((str(t.request_id), t) for t in session.scalars(select(Trial).where(
            Trial.experiment_id == experiment_id,
            Trial.request_id.in_(missing[start:start + _CHUNK]))))
    return by_request


def _exit_reason(trial: Trial) -> str:
    """How the searcher should read the trial's ending (its own report wins)."""
    if trial.early_exit in _REPORTED_EXIT:
        return _REPORTED_EXIT[trial.early_exit]
    return _EXIT_REASON[State(trial.state)]


def _searcher_values(cfg: dict[str, Any], event: SearcherEvent) -> tuple[float, float] | str:
    """(searcher metric, time units) from a validation report, or why they are missing."""
    metrics, name = event.metrics, cfg.get("metric")
    if name not in metrics:
        return f"the validation metrics have no {name!r} (searcher.metric)"
    if cfg["name"] != "adaptive_asha":
        return float(metrics[name]), 0.0
    time_metric = _time_metric(cfg)
    if time_metric in metrics:
        return float(metrics[name]), float(metrics[time_metric])
    if time_metric == "batches":  # legacy max_length in batches: the reported step counts
        return float(metrics[name]), float(event.steps_completed)
    return f"the validation metrics have no {time_metric!r} (searcher.time_metric)"


def _time_metric(cfg: dict[str, Any]) -> str:
    """The name of ASHA's time units: ``searcher.time_metric``, else max_length's unit."""
    return str(cfg.get("time_metric") or length_value(cfg["max_length"])[0])


def _stop_reason(searcher: Searcher, time_units: float) -> str:
    if isinstance(searcher, AdaptiveAshaSearch) and time_units < searcher.config.max_time:
        return "early_stopped"
    return "searcher_done"


def _stop_cause(cfg: dict[str, Any], reason: str, time_units: float) -> str:
    """Why the searcher stops a trial, with the time units it decided at.

    The trial trains on until it sees the stop, so the units it ends with may be more.
    """
    if reason != "early_stopped":
        return _DONE_CAUSE
    return (f"stopped early by the searcher: its {cfg['metric']} at {_time_metric(cfg)} "
            f"{time_units:g} ranked outside its rung's top")


def _stop(session: Session, trial: Trial, cause: str) -> int:
    """Ask a trial to stop gracefully: its code sees ``should_preempt()``, checkpoints, exits."""
    if State(trial.state).is_terminal or State(trial.state).is_stopping:
        return 0
    transition(session, trial, State.STOPPING_COMPLETED, cause=cause)
    trial.stop_requested_at, trial.stop_reason = utcnow(), trial.stop_reason or "searcher_done"
    return 1
