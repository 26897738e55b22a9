"""``Model`` and ``ModelVersion``: the model registry."""

from __future__ import annotations

import warnings
from typing import Any

from hpcdet.client_url import quote_path
from hpcdet.experimental._checkpoint import Checkpoint
from hpcdet.experimental._enums import OrderBy
from hpcdet.experimental._session import Session


class ModelVersion:
    """One registered version of a model: its number and its checkpoint."""

    def __init__(self, session: Session, data: dict[str, Any]) -> None:
        self._session = session
        self._data = data
        self.model_version: int = int(data["version"])
        self.model_name: str = str(data["model_name"])
        self.model_id: int = int(data["model_id"])

    @property
    def version(self) -> int:
        """Its number, from 1 (hpcdet's name; Determined's is ``model_version``)."""
        return self.model_version

    @property
    def checkpoint(self) -> Checkpoint:
        """The checkpoint it registers."""
        row = self._data.get("checkpoint") or {}
        return Checkpoint(self._session, str(self._data["checkpoint_uuid"]), row or None)

    @property
    def name(self) -> str | None:
        """Its name."""
        return self._data.get("name")

    @property
    def comment(self) -> str | None:
        """Its comment."""
        return self._data.get("comment")

    @property
    def notes(self) -> str | None:
        """Its notes."""
        return self._data.get("notes")

    @property
    def metadata(self) -> dict[str, Any]:
        """Its metadata."""
        return dict(self._data.get("metadata") or {})

    def _path(self) -> str:
        return f"/models/{quote_path(self.model_name)}/versions/{self.model_version}"

    def set_name(self, name: str) -> None:
        """Rename the version."""
        self._data = self._session.patch(self._path(), {"name": name})["model_version"]

    def set_notes(self, notes: str) -> None:
        """Change its notes."""
        self._data = self._session.patch(self._path(), {"notes": notes})["model_version"]

    def delete(self) -> None:
        """Delete the version (its checkpoint stays)."""
        self._session.delete(self._path())

    def __repr__(self) -> str:
        return f"ModelVersion(model={self.model_name!r}, version={self.model_version})"


class Model:
    """A model of the registry, as ``client.get_model(name)`` returns it."""

    def __init__(self, session: Session, data: dict[str, Any]) -> None:
        self._session = session
        self._data = data

    @property
    def name(self) -> str:
        """Its name (unique on the cluster)."""
        return str(self._data["name"])

    @property
    def model_id(self) -> int:
        """Its id."""
        return int(self._data["id"])

    @property
    def description(self) -> str | None:
        """Its description."""
        return self._data.get("description")

    @property
    def metadata(self) -> dict[str, Any]:
        """Its metadata."""
        return dict(self._data.get("metadata") or {})

    @property
    def labels(self) -> list[str]:
        """Its labels."""
        return list(self._data.get("labels") or [])

    @property
    def archived(self) -> bool:
        """Whether it is archived (no new versions)."""
        return bool(self._data.get("archived"))

    def _path(self) -> str:
        return f"/models/{quote_path(str(self.model_id))}"

    def reload(self) -> None:
        """Read the model again from the master."""
        self._data = self._session.get(self._path())["model"]

    def register_version(self, checkpoint_uuid: str) -> ModelVersion:
        """Register a checkpoint as the next version."""
        answer = self._session.post(self._path() + "/versions",
                                    {"checkpoint_uuid": checkpoint_uuid})
        return ModelVersion(self._session, answer["model_version"])

    def get_version(self, version: int = -1) -> ModelVersion | None:
        """Version ``version`` (-1: the latest), or None when the model has none."""
        if version == -1:
            versions = self.list_versions(OrderBy.DESCENDING)
            return versions[0] if versions else None
        answer = self._session.get(f"{self._path()}/versions/{int(version)}")
        return ModelVersion(self._session, answer["model_version"])

    def list_versions(self, order_by: OrderBy = OrderBy.DESCENDING) -> list[ModelVersion]:
        """Its versions, newest first unless ``order_by`` is ascending."""
        answer = self._session.get(self._path() + "/versions",
                                   {"order_by": OrderBy(order_by).value})
        return [ModelVersion(self._session, v) for v in answer.get("model_versions") or []]

    def get_versions(self, order_by: OrderBy = OrderBy.DESCENDING) -> list[ModelVersion]:
        """Determined's deprecated name of :meth:`list_versions` (it warns, as there)."""
        warnings.warn("Model.get_versions() has been deprecated and will be removed in a "
                      "future version. Please call Model.list_versions() instead.",
                      FutureWarning, stacklevel=2)
        return self.list_versions(order_by=order_by)

    def _patch(self, body: dict[str, Any]) -> None:
        self._data = self._session.patch(self._path(), body)["model"]

    def set_description(self, description: str) -> None:
        """Change its description."""
        self._patch({"description": description})

    def set_labels(self, labels: list[str]) -> None:
        """Replace its labels."""
        self._patch({"labels": list(labels)})

    def add_metadata(self, metadata: dict[str, Any]) -> None:
        """Merge ``metadata`` into its metadata (top-level keys)."""
        self._patch({"metadata": dict(metadata)})

    def remove_metadata(self, keys: list[str]) -> None:
        """Remove these top-level keys from its metadata."""
        self._patch({"metadata": dict.fromkeys(keys)})

    def archive(self) -> None:
        """Archive it (no new versions)."""
        self._data = self._session.post(self._path() + "/archive")["model"]

    def unarchive(self) -> None:
        """Unarchive it."""
        self._data = self._session.post(self._path() + "/unarchive")["model"]

    def move_to_workspace(self, workspace_name: str | None) -> None:
        """Share it in a workspace (None: its owner's alone)."""
        self._data = self._session.post(self._path() + "/move",
                                        {"workspace": workspace_name})["model"]

    def delete(self) -> None:
        """Delete it and its versions (the checkpoints stay)."""
        self._session.delete(self._path())

    def __repr__(self) -> str:
        return f"Model(name={self.name!r})"
