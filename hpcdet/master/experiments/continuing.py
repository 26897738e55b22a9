"""``det experiment continue`` and ``fork``: train more, or start anew from a copy.

**continue** (Determined 0.38's ``ContinueExperiment``): an *ended* experiment of the
``single`` searcher is reopened in place. Its config takes the overrides (deep-merged, then
validated as at creation); the experiment becomes ACTIVE again and its one trial QUEUED, to
be resubmitted from its latest checkpoint that still exists, so with a larger
``searcher.max_length`` it trains on from there, and a trial that failed is retried.
Changing ``searcher.name`` or ``hyperparameters`` would make it another search: fork it.

**fork**: a new experiment (owned by the caller) from the source's stored model definition
and a config the caller sends (the source's effective config with overrides, built by the
CLI); ``parent_id`` records where it came from. A fork starts from scratch: it does not
warm-start from the source's checkpoints.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from hpcdet.master.errors import Conflict, Invalid
from hpcdet.master.experiments.editing import set_config
from hpcdet.master.experiments.searcher_store import build_searcher, save_snapshot
from hpcdet.master.models import Checkpoint, Experiment, Trial
from hpcdet.master.reports.checkpoint_gc import ACTIVE
from hpcdet.master.reports.logs import add_system_line
from hpcdet.master.scheduling.submission import effective_config
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.transitions import transition
from hpcdet.states import State

# Overrides that would make it another search (continue refuses them).
FIXED_KEYS = (("searcher", "name"), ("hyperparameters",))


def merged(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``override`` deep-merged in (mappings merge, everything else replaces)."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


_ABSENT = object()


def _at(doc: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(doc, Mapping) or part not in doc:
            return _ABSENT
        doc = doc[part]
    return doc


def _changes_fixed(config: Mapping[str, Any], override: Mapping[str, Any]) -> str | None:
    """The first of :data:`FIXED_KEYS` the override sets to something else, if any."""
    for path in FIXED_KEYS:
        new = _at(override, path)
        if new is not _ABSENT and new != _at(config, path):
            return ".".join(path)
        if path[0] in override and not isinstance(override[path[0]], Mapping):
            return path[0]  # replacing the whole section replaces what is fixed in it
    return None


def continue_experiment(session: Session, settings: MasterSettings, exp: Experiment,
                        override: Mapping[str, Any], actor: str) -> Trial:
    """Reopen an ended single-trial experiment with ``override`` merged into its config."""
    trial = _only_trial(session, exp)
    fixed = _changes_fixed(exp.config, override)
    if fixed is not None:
        raise Invalid("bad_request", f"config override {fixed}: continue keeps the "
                      "search as it was; fork the experiment to change it")
    config = effective_config(settings, merged(exp.config, override), owner=exp.owner)
    set_config(exp, config)
    searcher = build_searcher(config)
    request = searcher.initial_trials()[0]
    transition(session, exp, State.ACTIVE, cause="continue requested", actor=actor)
    exp.progress = 0.0
    save_snapshot(session, exp, searcher)
    resume_from = _latest_kept_checkpoint(session, trial.id)
    transition(session, trial, State.QUEUED, cause="experiment continued", actor=actor)
    trial.stop_requested_at = trial.stop_reason = trial.early_exit = None
    trial.request_id, trial.searcher_closed = request.request_id, False
    trial.restarts, trial.cancel_retries = 0, False
    trial.latest_checkpoint = resume_from
    start = f"from checkpoint {resume_from}" if resume_from else "from scratch (no checkpoint)"
    add_system_line(session, trial.id, f"experiment continued by {actor}: resuming {start}")
    return trial


def _only_trial(session: Session, exp: Experiment) -> Trial:
    if exp.unmanaged:
        raise Conflict("conflict", f"experiment {exp.id} is unmanaged: the master does "
                       "not run it; run its script again (with the same external ids, to "
                       "resume its trial)")
    if not State(exp.state).is_terminal:
        raise Conflict("conflict", f"experiment {exp.id} is {exp.state}: only an ended "
                       "experiment can be continued (pause/activate a running one)")
    if exp.archived:
        raise Conflict("conflict", f"experiment {exp.id} is archived: unarchive it first")
    if exp.searcher_name != "single":
        raise Conflict("conflict", f"experiment {exp.id} uses the {exp.searcher_name} "
                       "searcher: only single-trial (searcher single) experiments can be "
                       "continued; fork it instead")
    trials = list(session.scalars(select(Trial).where(Trial.experiment_id == exp.id)))
    if len(trials) != 1:
        raise Conflict("conflict", f"experiment {exp.id} has {len(trials)} trials: "
                       "only a single-trial experiment can be continued")
    return trials[0]


def _latest_kept_checkpoint(session: Session, trial_id: int) -> str | None:
    """The trial's latest checkpoint that garbage collection has not deleted."""
    return session.scalar(select(Checkpoint.uuid).where(
        Checkpoint.trial_id == trial_id, Checkpoint.state == ACTIVE)
        .order_by(Checkpoint.steps_completed.desc(), Checkpoint.reported_at.desc()).limit(1))

