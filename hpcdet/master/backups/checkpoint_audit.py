"""After a restore: which checkpoints on disk the database does not know, and which the
database knows that are not on disk. It REPORTS them; it deletes and changes nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from hpcdet.master.models import Checkpoint, Experiment, Trial
from hpcdet.master.scheduling.submission import default_storage
from hpcdet.master.settings.core import MasterSettings
from hpcdet.master.settings.experiment_config import checkpoint_dir

# A checkpoint's directory is named by its uuid (``<checkpoint dir>/<uuid>``).
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_ON_DISK_TYPES = ("shared_fs", "directory")


@dataclass
class CheckpointAudit:
    """The checkpoint index against the checkpoint directories."""

    roots: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    unknown_on_disk: list[str] = field(default_factory=list)  # paths
    missing_on_disk: list[dict[str, Any]] = field(default_factory=list)
    checked: int = 0

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` answer."""
        return {"roots": self.roots, "unreadable_roots": self.unreadable,
                "checkpoints_checked": self.checked, "unknown_on_disk": self.unknown_on_disk,
                "missing_on_disk": self.missing_on_disk}

    def summary(self) -> str:
        """One line for people."""
        return (f"checkpoints: {self.checked} in the database checked, "
                f"{len(self.missing_on_disk)} missing on disk, {len(self.unknown_on_disk)} on "
                f"disk unknown to the database (reported only: nothing was deleted)")


def audit_checkpoints(session: Session, settings: MasterSettings) -> CheckpointAudit:
    """Compare the ACTIVE checkpoints of the database with the checkpoint directories on
    disk (storage types shared_fs and directory; object stores are not listed)."""
    audit = CheckpointAudit()
    roots: set[Path] = set()
    default = _storage_dir(default_storage(settings))
    if default is not None:
        roots.add(default)
    known: set[str] = set()
    rows = session.execute(select(Checkpoint.uuid, Checkpoint.state, Trial.id,
                                  Experiment.id, Experiment.config)
                           .join(Trial, Checkpoint.trial_id == Trial.id)
                           .join(Experiment, Trial.experiment_id == Experiment.id))
    for uuid, state, trial_id, experiment_id, config in rows:
        known.add(uuid)
        directory = _storage_dir(config.get("checkpoint_storage") or {})
        if directory is None or state != "ACTIVE":
            continue
        roots.add(directory)
        audit.checked += 1
        if not (directory / uuid).is_dir():
            audit.missing_on_disk.append({"uuid": uuid, "trial_id": trial_id,
                                          "experiment_id": experiment_id,
                                          "path": str(directory / uuid)})
    for root in sorted(roots):
        audit.roots.append(str(root))
        _scan(root, known, audit)
    return audit


def _storage_dir(storage: dict[str, Any]) -> Path | None:
    """The host directory of an on-disk checkpoint storage; None for an object store."""
    if storage.get("type") not in _ON_DISK_TYPES:
        return None
    try:
        return Path(checkpoint_dir({"checkpoint_storage": storage})).expanduser()
    except (KeyError, TypeError):
        return None


def _scan(root: Path, known: set[str], audit: CheckpointAudit) -> None:
    """Add the uuid-named directories under ``root`` that the database does not know."""
    try:
        entries = sorted(root.iterdir())
    except FileNotFoundError:
        return
    except OSError:
        audit.unreadable.append(str(root))
        return
    audit.unknown_on_disk.extend(str(entry) for entry in entries
                                 if _UUID.match(entry.name) and entry.name not in known
                                 and entry.is_dir())
