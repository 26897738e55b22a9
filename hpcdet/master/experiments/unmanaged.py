"""Unmanaged experiments (Determined's ``core_v2``): scripts the master does not run.

A script started anywhere (a login node, ``torchrun``, ``srun`` in the user's own sbatch
script, ``mpiexec`` in a qsub job) asks for an experiment and a trial, then reports metrics
and checkpoints with the trial's token like any harness. The master never schedules them:
the searchers skip unmanaged experiments and their trials have no job rows.

* :func:`open_experiment` creates one, or with an ``external_id`` (the script's own name
  for it, Determined's ``external_experiment_id``) finds the caller's and reopens it.
* :func:`start_run` adds a trial (or, with its ``external_id``, resumes it in a new run)
  RUNNING at once, with a fresh token; ``job`` links it to the scheduler job it runs in.
* :func:`report_state` records a heartbeat and the end the script reports.
* :func:`end_lost_runs` (each reconcile cycle) ends the trials whose linked job ended, or
  whose heartbeat stopped, without the script saying so.

Every state change goes through :func:`~hpcdet.master.transitions.transition`.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from hpcdet import expconf, storage
from hpcdet.dispatcher import JobPhase, JobRef, JobStatus
from hpcdet.errors import ConfigError
from hpcdet.master.errors import Conflict, Invalid
from hpcdet.master.experiments.ending import finish_searched
from hpcdet.master.models import Experiment, Trial, utcnow
from hpcdet.master.scheduling.jobspec import TrialRun
from hpcdet.master.scheduling.submission import parse_config, trial_info, with_master_defaults
from hpcdet.master.security.storage_roots import check_storage
from hpcdet.master.security.tokens import hash_token, new_token
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.transitions import transition
from hpcdet.states import State

# The fields of Determined's core_v2 Config a script may send (the rest of a managed
# config -- entrypoint, resources, environment -- has no meaning for a script the master
# does not start).
CONFIG_FIELDS = frozenset({"name", "description", "labels", "data", "searcher",
                           "checkpoint_storage", "hyperparameters", "workspace", "project"})
_DEFAULT_SEARCHER = {"name": "single", "metric": "unmanaged"}
# A script's heartbeat comes every minute; a run silent this long (and not linked to a
# scheduler job, whose end is the better signal) has died without saying so.
HEARTBEAT_TIMEOUT = dt.timedelta(minutes=10)
_ENDS = {"COMPLETED": State.COMPLETED, "ERROR": State.ERROR}
# A linked job is polled with this directory: hpcdet wrote no exit file for it.
NO_JOB_DIR = "/nonexistent"


@dataclass(frozen=True)
class StartedRun:
    """A trial run just started: the trial, its plain token (shown once), its trial.json."""

    trial: Trial
    token: str
    info: dict[str, Any]


def unmanaged_config(settings: MasterSettings, text: str, owner: str) -> dict[str, Any]:
    """The stored config of an unmanaged experiment: the script's fields, the master's
    defaults (name, checkpoint storage) and the schema's; storage checked as for any."""
    doc = parse_config(text)
    unknown = sorted(set(doc) - CONFIG_FIELDS)
    if unknown:
        raise ConfigError([f"<config>.{name}: not used by an unmanaged experiment (it takes "
                           f"{', '.join(sorted(CONFIG_FIELDS))})" for name in unknown],
                          title="the unmanaged experiment config is invalid")
    doc = {k: v for k, v in doc.items() if v is not None and k not in ("workspace", "project")}
    doc.setdefault("searcher", dict(_DEFAULT_SEARCHER))
    doc.setdefault("hyperparameters", {})
    errors = expconf.validate(doc, phase="sanity")
    if errors:
        raise ConfigError(errors, title="the unmanaged experiment config is invalid")
    config = expconf.with_defaults(with_master_defaults(settings, doc, owner))
    storage.check_available(config)
    check_storage(settings, config, owner=owner)
    return dict(config)


def open_experiment(session: Session, settings: MasterSettings, *, owner: str, text: str,
                    external_id: str | None) -> tuple[Experiment, bool]:
    """The caller's unmanaged experiment named ``external_id`` (reopened if it ended), or a
    new one; and whether it was created."""
    config = unmanaged_config(settings, text, owner)
    if external_id is not None:
        _check_external_id(external_id, "external_id")
        found = session.scalars(select(Experiment).where(
            Experiment.owner == owner, Experiment.unmanaged,
            Experiment.external_id == external_id)).first()
        if found is not None:
            _reopen(session, found, owner)
            return found, False
    exp = Experiment(name=config["name"], description=config.get("description") or "",
                     labels=list(config.get("labels") or []), owner=owner, config=config,
                     original_config=text, context=b"", searcher_name="unmanaged",
                     resource_pool=None, unmanaged=True, external_id=external_id)
    session.add(exp)
    transition(session, exp, State.ACTIVE, cause="unmanaged experiment created", actor=owner)
    return exp, True


def start_run(session: Session, settings: MasterSettings, exp: Experiment, *, actor: str,
              hparams: Mapping[str, Any], external_id: str | None,
              job: str | None) -> StartedRun:
    """A new trial of ``exp`` (or its trial ``external_id``, resumed) RUNNING now; ``job``:
    the scheduler job it runs in, an id the backend has checked."""
    if not exp.unmanaged:
        raise Conflict("conflict", f"experiment {exp.id} is managed by the master: "
                       "only an unmanaged experiment takes trials from a script")
    if external_id is not None:
        _check_external_id(external_id, "external_id")
    _reopen(session, exp, actor)
    trial = _trial_named(session, exp, external_id)
    where = f" in job {job}" if job else ""
    if trial is None:
        trial = Trial(experiment_id=exp.id, hparams=dict(hparams), seed=secrets.randbelow(2**31),
                      external_id=external_id, token="", run_id=0)
        session.add(trial)
        transition(session, trial, State.QUEUED, cause="unmanaged trial created", actor=actor)
    elif State(trial.state).is_terminal:
        transition(session, trial, State.QUEUED, cause="unmanaged trial resumed", actor=actor)
    token = new_token()
    trial.token, trial.run_id = hash_token(token), trial.run_id + 1
    trial.external_job, trial.heartbeat_at = job, utcnow()
    transition(session, trial, State.RUNNING, cause=f"unmanaged run {trial.run_id} started"
               f"{where}", actor=actor)
    run = TrialRun(exp.id, trial.id, trial.run_id, "", owner=exp.owner)
    info = trial_info(settings, exp.config, run, hparams=trial.hparams, seed=trial.seed,
                      latest_checkpoint=trial.latest_checkpoint)
    info["steps_completed"] = trial.steps_completed
    return StartedRun(trial, token, info)


def report_state(session: Session, trial: Trial, state: str | None) -> None:
    """A heartbeat from the script, with the end it reports (``COMPLETED``/``ERROR``)."""
    trial.heartbeat_at = utcnow()
    if state is None or state == State.RUNNING.value:
        if trial.state != State.RUNNING.value:
            raise Conflict("conflict", f"trial {trial.id} is {trial.state}: its run was "
                           "stopped (killed, cancelled or taken over by a newer run)")
        return
    end = _ENDS.get(state)
    if end is None:
        raise Invalid("bad_request", f"body field state: {state!r} is not one of "
                      "RUNNING, COMPLETED, ERROR")
    if State(trial.state).is_terminal or State(trial.state).is_stopping:
        return  # stopped by the master meanwhile: its end stands
    _end_trial(session, trial, end, f"the script reported {state}")


def linked_job_refs(session: Session) -> list[tuple[int, JobRef]]:
    """The scheduler jobs that running unmanaged trials are linked to."""
    rows = session.execute(select(Trial.id, Trial.external_job).where(
        Trial.state == State.RUNNING.value, Trial.external_job.is_not(None))).all()
    return [(trial_id, JobRef(str(job), NO_JOB_DIR)) for trial_id, job in rows]


def end_lost_runs(session: Session, linked: Iterable[tuple[int, JobRef]],
                  statuses: Mapping[str, JobStatus], *, now: dt.datetime | None = None) -> int:
    """End the running unmanaged trials whose job ended or whose heartbeat stopped."""
    ended = 0
    for trial_id, ref in linked:
        status = statuses.get(ref.job_id)
        trial = session.get(Trial, trial_id)
        if status is None or not status.phase.is_terminal or trial is None \
                or trial.state != State.RUNNING.value:
            continue
        end = State.COMPLETED if status.phase is JobPhase.COMPLETED else State.ERROR
        _end_trial(session, trial, end, f"its job {ref.job_id} ended {status.phase.value} "
                   "before the script closed the trial")
        ended += 1
    limit = (now or utcnow()) - HEARTBEAT_TIMEOUT
    for trial in session.scalars(select(Trial).join(Experiment).where(
            Experiment.unmanaged, Trial.state == State.RUNNING.value,
            Trial.external_job.is_(None), Trial.heartbeat_at < limit)):
        _end_trial(session, trial, State.ERROR, "no heartbeat from its script for "
                   f"{int(HEARTBEAT_TIMEOUT.total_seconds() // 60)} minutes")
        ended += 1
    return ended


def _end_trial(session: Session, trial: Trial, end: State, cause: str) -> None:
    transition(session, trial, end, cause=cause)
    exp = session.get_one(Experiment, trial.experiment_id)
    if exp.state != State.ACTIVE.value:
        return  # being stopped: the reconciler ends it once no trial is live
    states = set(session.scalars(select(Trial.state).where(Trial.experiment_id == exp.id)))
    if all(State(s).is_terminal for s in states):
        finish_searched(session, exp, failed=State.COMPLETED.value not in states)


def _reopen(session: Session, exp: Experiment, actor: str) -> None:
    if State(exp.state).is_terminal:
        transition(session, exp, State.ACTIVE, cause="unmanaged experiment resumed",
                   actor=actor)
    elif exp.state != State.ACTIVE.value:
        raise Conflict("conflict", f"experiment {exp.id} is {exp.state}: it takes no "
                       "new runs until it has ended")


def _trial_named(session: Session, exp: Experiment, external_id: str | None) -> Trial | None:
    if external_id is None:
        return None
    return session.scalars(select(Trial).where(Trial.experiment_id == exp.id,
                                               Trial.external_id == external_id)).first()


def _check_external_id(value: str, field: str) -> None:
    if not value or len(value) > 256 or any(c in value for c in "\n\r\0"):
        raise Invalid("bad_request", f"body field {field}: must be 1 to 256 characters "
                      "without line breaks or NUL")
