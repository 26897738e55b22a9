"""Checkpoint garbage collection: delete the checkpoints an experiment's policy does not keep.

The policy is Determined's (``checkpoint_storage.save_experiment_best``, ``save_trial_best``,
``save_trial_latest``; defaults 0, 1, 1). A checkpoint is kept if it has a validation of the
searcher metric and is among the ``save_experiment_best`` best of the experiment or the
``save_trial_best`` best of its trial, or if it is among the ``save_trial_latest`` latest of
its trial (by steps; checkpoints at the same step share a place). Everything else is deleted.
``checkpoint_policy`` plays no part here: it decides which checkpoints the trainer *writes*.
A checkpoint registered as a model version is never deleted (it is pinned).

Only checkpoints of ended trials are collected. The experiment-wide ranking can only get
worse for a checkpoint as more arrive, so deleting one at its trial's end never deletes
what the policy would keep once the experiment ends; the result is Determined's.

Files go first and the row is marked ``DELETED`` after (a crash between leaves an ACTIVE row
whose directory is gone, deleted again next time). The master deletes
``<checkpoint_dir>/<uuid>`` itself: on an HPC cluster it sees the shared filesystem the
trials write to. With an object store (``s3``, ``gcs``, ``azure``) it deletes the objects
under ``<prefix>/<uuid>/`` with the experiment's credentials (or its own environment's).
A checkpoint it cannot delete is logged, its row stays ACTIVE, and the experiment is
retried with backoff.

Finding work without extra columns: each cycle reads the state changes to a terminal state
newer than the last one seen (one indexed query when nothing ended). At start, and then
hourly, a sweep looks at every experiment with ACTIVE checkpoints of ended trials, which also
catches a state change committed out of id order.
"""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from hpcdet.master.db import session_scope
from hpcdet.master.models import (
    Checkpoint,
    Experiment,
    Metric,
    ModelVersion,
    StateChange,
    Trial,
    as_utc,
)
from hpcdet.master.reports.searcher_metric import SearcherMetric
from hpcdet.master.security.storage_roots import StorageError, confined_dir, is_uuid
from hpcdet.master.settings.core import MasterSettings
from hpcdet.states import TERMINAL_STATES
from hpcdet.storage import (
    DIRECTORY_TYPES,
    OBJECT_STORE_TYPES,
    SharedFSStorage,
    StorageManager,
    manager_for,
)
from hpcdet.storage import StorageError as ManagerError

log = logging.getLogger(__name__)

ACTIVE, DELETED = "ACTIVE", "DELETED"
# The storages the master can reach as a directory (it deletes those itself).
STORAGE_TYPES = DIRECTORY_TYPES
# Every storage whose checkpoints the master deletes.
COLLECTED_TYPES = (*DIRECTORY_TYPES, *OBJECT_STORE_TYPES)
SWEEP_INTERVAL = 3600.0
RETRY_FIRST, RETRY_MAX = 30.0, 3600.0
_TERMINAL = [s.value for s in TERMINAL_STATES]


@dataclass(frozen=True)
class GcPolicy:
    """How many checkpoints to keep (``checkpoint_storage.save_*``)."""

    experiment_best: int = 0
    trial_best: int = 1
    trial_latest: int = 1

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GcPolicy:
        storage = config.get("checkpoint_storage") or {}

        def count(key: str, default: int) -> int:
            value = storage.get(key)
            return default if value is None else int(value)

        return cls(count("save_experiment_best", 0), count("save_trial_best", 1),
                   count("save_trial_latest", 1))


@dataclass(frozen=True)
class CheckpointFacts:
    """What the policy looks at for one checkpoint."""

    uuid: str
    trial_id: int
    steps_completed: int
    metric: float | None  # the searcher metric of its validation, None without one
    order: tuple[Any, ...] = ()  # breaks ties between equal metrics (earliest first)


def checkpoints_to_keep(checkpoints: Sequence[CheckpointFacts], policy: GcPolicy, *,
                        smaller_is_better: bool = True) -> set[str]:
    """The uuids ``policy`` keeps among all of one experiment's checkpoints."""
    sign = 1.0 if smaller_is_better else -1.0
    scored = sorted((c for c in checkpoints if c.metric is not None),
                    key=lambda c: (sign * float(c.metric or 0.0), c.order, c.uuid))
    keep = {c.uuid for c in scored[:policy.experiment_best]}
    by_trial: dict[int, list[CheckpointFacts]] = defaultdict(list)
    for c in scored:
        by_trial[c.trial_id].append(c)
    for ranked in by_trial.values():
        keep.update(c.uuid for c in ranked[:policy.trial_best])
    keep.update(_latest(checkpoints, policy.trial_latest))
    return keep


def _latest(checkpoints: Iterable[CheckpointFacts], count: int) -> set[str]:
    """Each trial's checkpoints whose step is among its ``count`` latest (ties share a place)."""
    by_trial: dict[int, list[CheckpointFacts]] = defaultdict(list)
    for c in checkpoints:
        by_trial[c.trial_id].append(c)
    keep: set[str] = set()
    for group in by_trial.values():
        steps = sorted((c.steps_completed for c in group), reverse=True)
        if count > 0:  # fewer than ``count`` are later than the ``count``-th latest step
            cutoff = steps[min(count, len(steps)) - 1]
            keep.update(c.uuid for c in group if c.steps_completed >= cutoff)
    return keep


def remove_checkpoint_dir(root: Path, uuid: str) -> bool:
    """Delete ``root/uuid``; True once it is gone (also when it never existed).

    Refuses (False, logged) a uuid that is not a UUID, so nothing outside ``root`` is
    ever touched. A symlink is removed, never followed; ``shutil.rmtree`` does not follow
    links inside the directory either.
    """
    return delete_checkpoint(SharedFSStorage(root), uuid)


def delete_checkpoint(manager: StorageManager, uuid: str) -> bool:
    """Delete checkpoint ``uuid`` from its storage; True once it is gone (also when it never
    existed). A uuid that is not a UUID is refused (False, logged): nothing else is touched."""
    if not is_uuid(uuid):
        log.error("checkpoint %r: not a valid checkpoint id; nothing deleted", uuid)
        return False
    try:
        manager.delete(uuid)
    except ManagerError as exc:
        log.warning("cannot delete checkpoint %s: %s (will retry)", uuid, exc)
        return False
    return True


@dataclass
class GcReport:
    """What one pass did."""

    experiments: int = 0
    deleted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


class CheckpointCollector:
    """Runs garbage collection for the reconciler, once per cycle (:meth:`collect`)."""

    def __init__(self, sessions: sessionmaker[Session], settings: MasterSettings,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sessions, self.settings, self.clock = sessions, settings, clock
        self._watermark = 0  # the newest state change seen
        self._next_sweep = 0.0  # a sweep is due at start
        self._retry_at: dict[int, float] = {}
        self._retry_delay: dict[int, float] = {}

    def collect(self) -> GcReport:
        """Collect every experiment whose trials ended since the last pass (or is due)."""
        report = GcReport()
        for exp_id in sorted(self._due()):
            report.experiments += 1
            self._schedule_retry(exp_id, failed=not self._collect_logged(exp_id, report))
        return report

    def _collect_logged(self, exp_id: int, report: GcReport) -> bool:
        """Collect one experiment into ``report``; False if something must be retried."""
        try:
            deleted, failed = self.collect_experiment(exp_id)
        except Exception:  # one experiment's trouble must not stop the others
            log.exception("checkpoint GC of experiment %d failed", exp_id)
            return False
        report.deleted += deleted
        report.failed += failed
        return not failed

    def _due(self) -> set[int]:
        now = self.clock()
        due = {exp_id for exp_id, at in self._retry_at.items() if at <= now}
        with session_scope(self.sessions) as session:
            if now >= self._next_sweep:
                self._next_sweep = now + SWEEP_INTERVAL
                self._watermark = session.scalar(select(func.max(StateChange.id))) or 0
                return due | _experiments_with_collectable(session)
            return due | self._newly_ended(session)

    def _newly_ended(self, session: Session) -> set[int]:
        rows = session.execute(select(StateChange.id, StateChange.entity_kind,
                                      StateChange.entity_id)
                               .where(StateChange.id > self._watermark,
                                      StateChange.to_state.in_(_TERMINAL))).all()
        if not rows:
            return set()
        self._watermark = max(r.id for r in rows)
        exp_ids = {r.entity_id for r in rows if r.entity_kind == "experiment"}
        trial_ids = [r.entity_id for r in rows if r.entity_kind == "trial"]
        if trial_ids:
            exp_ids |= set(session.scalars(select(Trial.experiment_id)
                                           .where(Trial.id.in_(trial_ids))))
        return exp_ids

    def _schedule_retry(self, exp_id: int, *, failed: bool) -> None:
        if not failed:
            self._retry_at.pop(exp_id, None)
            self._retry_delay.pop(exp_id, None)
            return
        delay = min(self._retry_delay.get(exp_id, RETRY_FIRST / 2) * 2, RETRY_MAX)
        self._retry_delay[exp_id] = delay
        self._retry_at[exp_id] = self.clock() + delay

    def collect_experiment(self, exp_id: int) -> tuple[list[str], list[str]]:
        """Delete what the policy does not keep of one experiment: (deleted, failed) uuids."""
        with session_scope(self.sessions) as session:
            plan = _plan(session, self.settings, exp_id)
        if plan is None or not plan[1]:
            return [], []
        manager, doomed = plan
        deleted = []
        for uuid in doomed:
            if delete_checkpoint(manager, uuid):
                deleted.append(uuid)
            elif manager.remote:  # an unreachable store: do not wait on it once per checkpoint
                break
        if deleted:
            with session_scope(self.sessions) as session:
                session.execute(update(Checkpoint).where(Checkpoint.uuid.in_(deleted),
                                                         Checkpoint.state == ACTIVE)
                                .values(state=DELETED))
            log.info("experiment %d: deleted %d checkpoint(s) by its GC policy", exp_id,
                     len(deleted))
        return deleted, [u for u in doomed if u not in set(deleted)]


def _experiments_with_collectable(session: Session) -> set[int]:
    """Experiments with ACTIVE checkpoints of ended trials (what a sweep looks at)."""
    return set(session.scalars(
        select(Trial.experiment_id).join(Checkpoint, Checkpoint.trial_id == Trial.id)
        .where(Checkpoint.state == ACTIVE, Trial.state.in_(_TERMINAL)).distinct()))


def _plan(session: Session, settings: MasterSettings,
          exp_id: int) -> tuple[StorageManager, list[str]] | None:
    """(the storage, ACTIVE uuids of ended trials the policy does not keep).

    None (nothing is deleted) when the directory is not under an allowed storage root
    (:mod:`hpcdet.master.security.storage_roots`), e.g. an experiment created before the roots.
    """
    config: dict[str, Any] = session.scalar(
        select(Experiment.config).where(Experiment.id == exp_id)) or {}
    manager = storage_manager(settings, config, exp_id)
    if manager is None:
        return None
    doomed = [c.uuid for c in doomed_checkpoints(session, exp_id, config,
                                                 GcPolicy.from_config(config))]
    return manager, doomed


def doomed_checkpoints(session: Session, exp_id: int, config: Mapping[str, Any],
                       policy: GcPolicy) -> list[Checkpoint]:
    """The ACTIVE checkpoints of the experiment's ended trials that ``policy`` does not keep
    and no model version names, by trial and step: what a collection deletes (and what
    ``det experiment set gc-policy`` shows before it asks)."""
    rows = session.execute(
        select(Checkpoint, Trial.state).join(Trial, Trial.id == Checkpoint.trial_id)
        .where(Trial.experiment_id == exp_id)
        .order_by(Checkpoint.trial_id, Checkpoint.steps_completed)).all()
    metric = SearcherMetric.of(config)
    facts = _facts(session, [c for c, _ in rows], metric.name or "")
    keep = checkpoints_to_keep(facts, policy, smaller_is_better=metric.smaller_is_better)
    pinned = _pinned_by_model_versions(session, exp_id)
    return [c for c, trial_state in rows
            if c.state == ACTIVE and trial_state in _TERMINAL and c.uuid not in keep
            and c.uuid not in pinned]


def storage_manager(settings: MasterSettings, config: Mapping[str, Any],
                    exp_id: int) -> StorageManager | None:
    """The experiment's checkpoint storage as the master reaches it; None (logged) when the
    master must not or cannot touch it."""
    try:
        return open_storage(settings, config)
    except (StorageError, ManagerError) as exc:
        log.error("experiment %d: checkpoint storage %s; nothing deleted", exp_id, exc)
        return None


def open_storage(settings: MasterSettings, config: Mapping[str, Any]) -> StorageManager | None:
    """The experiment's checkpoint storage, if it is one the master deletes from (None: it
    is not); raises StorageError (outside the storage roots) or the manager's error."""
    storage = config.get("checkpoint_storage") or {}
    if storage.get("type") not in COLLECTED_TYPES:
        return None
    directory = (confined_dir(settings, config) if storage.get("type") in DIRECTORY_TYPES
                 else None)
    return manager_for(storage, directory=directory)


def _pinned_by_model_versions(session: Session, exp_id: int) -> set[str]:
    """The experiment's checkpoints that a model registry version names: never collected,
    whatever the policy (as in Determined; docs/model-registry.md)."""
    return set(session.scalars(
        select(ModelVersion.checkpoint_uuid)
        .join(Checkpoint, Checkpoint.uuid == ModelVersion.checkpoint_uuid)
        .join(Trial, Trial.id == Checkpoint.trial_id).where(Trial.experiment_id == exp_id)))


def _facts(session: Session, checkpoints: Sequence[Checkpoint],
           metric: str) -> list[CheckpointFacts]:
    """Each checkpoint's searcher metric: from its row, else the validation at its step.

    Determined joins the validation at the checkpoint's step when it collects; a checkpoint
    registered before its step's validation arrived has none on its row.
    """
    own = {c.uuid: _metric_of(c.validation_metrics, metric) for c in checkpoints}
    reported = _validations(session, [c for c in checkpoints if own[c.uuid] is None], metric)
    return [CheckpointFacts(c.uuid, c.trial_id, c.steps_completed,
                            _first(own[c.uuid], reported.get((c.trial_id, c.steps_completed))),
                            (as_utc(c.reported_at).timestamp(),))
            for c in checkpoints]


def _first(value: float | None, fallback: float | None) -> float | None:
    return value if value is not None else fallback


def _validations(session: Session, missing: Sequence[Checkpoint],
                 metric: str) -> dict[tuple[int, int], float]:
    if not missing or not metric:
        return {}
    rows = session.execute(select(Metric.trial_id, Metric.steps_completed, Metric.value).where(
        Metric.trial_id.in_({c.trial_id for c in missing}), Metric.group == "validation",
        Metric.name == metric, Metric.archived.is_(False))).all()
    return {(t, s): v for t, s, v in rows if math.isfinite(v)}


def _metric_of(metrics: Mapping[str, Any] | None, name: str) -> float | None:
    value = (metrics or {}).get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None
