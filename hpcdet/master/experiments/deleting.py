"""``det experiment delete`` and ``det checkpoint delete``.

As in Determined, deleting an experiment deletes its checkpoints' files and everything the
master stored about it (trials, metrics, logs, history, model definition); only an ended
experiment can be deleted (archive is the recoverable alternative). hpcdet also removes the
experiment's job directories (``<job_storage_root>[/<owner>]/exp-N``: scripts, the unpacked
code, the scheduler's output files). Order: checkpoint files first; if one cannot be deleted
the request fails (409) and nothing else is removed, so it can be retried. Job directories
are removed best-effort afterwards (with ``jobs_run_as: owner`` they belong to the user and
the master may not be able to): what is left is named in the answer.

Checkpoint files are deleted through the storage the master's checkpoint GC uses
(``shared_fs``, ``directory``, object stores); for a storage the master does not delete
from, the rows go and the answer says the files stay. A checkpoint a model version names
(docs/model-registry.md) is never deleted: the request is refused (409) until the version
is deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from hpcdet.dispatcher.transport import Transport
from hpcdet.master.errors import Conflict
from hpcdet.master.models import Checkpoint, Experiment, StateChange, Trial
from hpcdet.master.registry.service import pinned_checkpoints
from hpcdet.master.reports.checkpoint_gc import ACTIVE, DELETED, delete_checkpoint, open_storage
from hpcdet.master.scheduling.job_dirs import trial_job_dir
from hpcdet.master.security.storage_roots import StorageError
from hpcdet.master.settings.core import MasterSettings
from hpcdet.states import State
from hpcdet.storage import StorageError as ManagerError
from hpcdet.storage import StorageManager

MAX_UUIDS = 1000


@dataclass
class Deleted:
    """What a deletion removed, and what it had to leave."""

    checkpoints: list[str] = field(default_factory=list)
    left_behind: list[str] = field(default_factory=list)


def checkpoint_storage(exp: Experiment, settings: MasterSettings) -> StorageManager | None:
    """The experiment's checkpoint storage when the master deletes there itself (None: a
    storage it does not delete from); 409 when it cannot be reached."""
    try:
        return open_storage(settings, exp.config)
    except (StorageError, ManagerError) as exc:
        raise Conflict("conflict", f"experiment {exp.id}: checkpoint storage {exc}; "
                       "its checkpoints cannot be deleted by this master") from None


def refuse_registered(session: Session, uuids: Sequence[str]) -> None:
    """409 when a model version names one of ``uuids`` (nothing is deleted)."""
    pinned = sorted(pinned_checkpoints(session, list(uuids)))
    if pinned:
        more = f" and {len(pinned) - 1} more" if len(pinned) > 1 else ""
        raise Conflict("conflict", f"checkpoint {pinned[0]}{more} is registered as a "
                       "model version (det model list-versions); delete the version first")


def delete_experiment(session: Session, settings: MasterSettings, exp: Experiment, *,
                      files: Transport) -> Deleted:
    """Delete an ended experiment, its checkpoint files and its job directories (reached
    through ``files``: the backend's transport)."""
    if not State(exp.state).is_terminal:
        raise Conflict("conflict", f"experiment {exp.id} is {exp.state}: only an ended "
                       "experiment can be deleted (kill or cancel it first)")
    trials = list(session.scalars(select(Trial).where(Trial.experiment_id == exp.id)))
    everyone = list(session.scalars(select(Checkpoint.uuid).where(
        Checkpoint.trial_id.in_([t.id for t in trials]))))
    refuse_registered(session, everyone)
    uuids = list(session.scalars(select(Checkpoint.uuid).where(
        Checkpoint.trial_id.in_([t.id for t in trials]), Checkpoint.state == ACTIVE)))
    storage = checkpoint_storage(exp, settings)
    result = Deleted(checkpoints=_remove_files(storage, exp, uuids))
    if uuids and storage is None:
        result.left_behind.append(f"{len(uuids)} checkpoint(s) in "
                                  f"{exp.config['checkpoint_storage'].get('type')} storage")
    job_dirs = {Path(trial_job_dir(settings, exp.id, t.id, exp.owner)).parent for t in trials}
    trial_ids = [t.id for t in trials]
    session.execute(delete(StateChange).where(StateChange.entity_kind == "trial",
                                              StateChange.entity_id.in_(trial_ids)))
    session.execute(delete(StateChange).where(StateChange.entity_kind == "experiment",
                                              StateChange.entity_id == exp.id))
    # trials, metrics, logs, checkpoints, jobs, searcher events: ON DELETE CASCADE
    session.execute(delete(Experiment).where(Experiment.id == exp.id))
    session.expunge(exp)
    result.left_behind += [str(d) for d in sorted(job_dirs)
                           if not _remove_tree(d, files)]
    return result


def _remove_files(storage: StorageManager | None, exp: Experiment,
                  uuids: Sequence[str]) -> list[str]:
    """Delete the checkpoints' files; 409 (nothing else done) if one stays."""
    if storage is None:
        return []
    failed = [u for u in uuids if not delete_checkpoint(storage, u)]
    if failed:
        raise Conflict("conflict", f"experiment {exp.id}: could not delete checkpoint "
                       f"{storage.location(failed[0])}" + (f" and {len(failed) - 1} more"
                                                           if len(failed) > 1 else "")
                       + " (see the master's log); nothing else was deleted, try again")
    return list(uuids)


def _remove_tree(path: Path, files: Transport) -> bool:
    """Remove a job directory; True once it is gone. Never follows a link."""
    files.remove_tree(str(path))
    return not files.exists(str(path))


def delete_checkpoints(session: Session, settings: MasterSettings,
                       found: Sequence[tuple[Checkpoint, Experiment]]) -> Deleted:
    """Delete checkpoints the caller may change: files first, then the rows are DELETED.

    A checkpoint a live trial may still resume from (its latest) is refused (409).
    """
    result = Deleted()
    for checkpoint, _ in found:
        _check_deletable(session, checkpoint)
    refuse_registered(session, [checkpoint.uuid for checkpoint, _ in found])
    for checkpoint, exp in found:
        if checkpoint.state == DELETED:
            continue
        storage = checkpoint_storage(exp, settings)
        if storage is None:
            raise Conflict("conflict", f"checkpoint {checkpoint.uuid} is in "
                           f"{exp.config['checkpoint_storage'].get('type')} storage, which "
                           "this master does not delete from")
        if not delete_checkpoint(storage, checkpoint.uuid):
            raise Conflict("conflict", "could not delete checkpoint "
                           f"{storage.location(checkpoint.uuid)} (see the master's log); "
                           "try again")
        session.execute(update(Checkpoint).where(Checkpoint.uuid == checkpoint.uuid)
                        .values(state=DELETED))
        result.checkpoints.append(checkpoint.uuid)
    return result


def _check_deletable(session: Session, checkpoint: Checkpoint) -> None:
    trial = session.get_one(Trial, checkpoint.trial_id)
    if trial.latest_checkpoint == checkpoint.uuid and not State(trial.state).is_terminal:
        raise Conflict("conflict", f"checkpoint {checkpoint.uuid} is the latest of trial "
                       f"{trial.id}, which is {trial.state} and may resume from it")
