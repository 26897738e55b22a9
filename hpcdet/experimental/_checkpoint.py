"""``Checkpoint``: one checkpoint, its training context and its files."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from hpcdet.errors import MasterError
from hpcdet.experimental._enums import CheckpointState, DownloadMode
from hpcdet.experimental._session import Session
from hpcdet.experimental.errors import SDKError, translate

# The files whose presence makes Determined's Checkpoint.download() skip the download.
_DOWNLOADED_MARKS = ("metadata.json", "MLmodel")


@dataclasses.dataclass
class CheckpointTrainingMetadata:
    """Where a checkpoint came from (Determined's ``Checkpoint.training``)."""

    experiment_id: int | None
    trial_id: int | None
    validation_metrics: dict[str, Any]
    searcher_metric: str | None
    searcher_metric_value: float | None
    steps_completed: int | None


class Checkpoint:
    """A checkpoint, as ``client.get_checkpoint(uuid)`` and the listings return it."""

    def __init__(self, session: Session, uuid: str, data: dict[str, Any] | None = None) -> None:
        self._session = session
        self.uuid = uuid
        self._data: dict[str, Any] = data or {}
        if not self._data:
            self.reload()

    def reload(self) -> None:
        """Read the checkpoint again from the master."""
        self._data = self._session.get(f"/checkpoints/{self.uuid}")["checkpoint"]

    @property
    def state(self) -> CheckpointState:
        """ACTIVE (files kept) or DELETED (files removed by garbage collection)."""
        return CheckpointState(self._data.get("state") or "ACTIVE")

    @property
    def metadata(self) -> dict[str, Any]:
        """What the training code stored with the checkpoint."""
        return dict(self._data.get("metadata") or {})

    @property
    def resources(self) -> dict[str, int]:
        """Its files: relative path to size in bytes."""
        return dict(self._data.get("resources") or {})

    @property
    def report_time(self) -> str | None:
        """When the trial reported it (ISO 8601)."""
        return self._data.get("reported_at")

    @property
    def storage_path(self) -> str | None:
        """Its directory as the master sees it (hpcdet's addition)."""
        return self._data.get("storage_path")

    @property
    def training(self) -> CheckpointTrainingMetadata:
        """The experiment, trial, step and validation it belongs to."""
        d = self._data
        return CheckpointTrainingMetadata(
            experiment_id=d.get("experiment_id"), trial_id=d.get("trial_id"),
            validation_metrics=dict(d.get("validation_metrics") or {}),
            searcher_metric=d.get("searcher_metric"),
            searcher_metric_value=d.get("searcher_metric_value"),
            steps_completed=d.get("steps_completed"))

    def download(self, path: str | os.PathLike[str] | None = None,
                 mode: DownloadMode = DownloadMode.AUTO, *, force: bool = False) -> str:
        """Put the checkpoint's files in ``path`` (default ``checkpoints/<uuid>``); return
        that path.

        ``mode``: copy from the storage path when readable, else fetch from the master
        (AUTO). As in Determined, a ``path`` that already holds a checkpoint (its
        ``metadata.json``, or an MLflow ``MLmodel``) is returned as it is, so a second
        ``download()`` of the same checkpoint costs nothing. Any other non-empty ``path``
        is refused unless ``force`` (then replaced), where Determined writes over it.
        """
        from hpcdet import checkpoint_download

        target = Path(path) if path is not None else Path("checkpoints", self.uuid)
        if not force and any((target / name).is_file() for name in _DOWNLOADED_MARKS):
            return str(target)
        try:
            checkpoint_download.download(self._session.client, self.uuid, target, force=force,
                                         source=DownloadMode(mode).value)
        except checkpoint_download.DownloadError as exc:
            raise SDKError(str(exc)) from None
        except MasterError as exc:
            raise translate(exc) from None
        return str(target)

    def delete(self) -> None:
        """Delete the checkpoint's files; its record stays, DELETED."""
        self._session.delete("/checkpoints", {"uuids": [self.uuid]})
        self.reload()

    def __repr__(self) -> str:
        return f"Checkpoint(uuid={self.uuid!r})"
