"""``Workspace``, ``Project`` and ``User``: thin views of the master's answers."""

from __future__ import annotations

from typing import Any

from hpcdet.client_url import quote_path
from hpcdet.experimental._session import Session


class Project:
    """A project: a named group of experiments inside a workspace."""

    def __init__(self, session: Session, data: dict[str, Any]) -> None:
        self._session = session
        self.id: int = int(data["id"])
        self.name: str = str(data["name"])
        self.workspace_id: int | None = data.get("workspace_id")
        self.workspace_name: str | None = data.get("workspace")
        self.description: str | None = data.get("description")

    def __repr__(self) -> str:
        return f"Project(name={self.name!r}, workspace={self.workspace_name!r})"


class Workspace:
    """A workspace: members with roles, and projects. Named by name in hpcdet."""

    def __init__(self, session: Session, data: dict[str, Any]) -> None:
        self._session = session
        self.id: int = int(data["id"])
        self.name: str = str(data["name"])
        self._data = data

    def _path(self) -> str:
        return f"/workspaces/{quote_path(self.name)}"

    def list_projects(self) -> list[Project]:
        """Its projects, by name."""
        answer = self._session.get(self._path() + "/projects")
        return [Project(self._session, p) for p in answer.get("projects") or []]

    def get_project(self, project_name: str) -> Project:
        """Its project named ``project_name``."""
        answer = self._session.get(f"{self._path()}/projects/{quote_path(project_name)}")
        return Project(self._session, answer["project"])

    def create_project(self, name: str, description: str | None = None) -> Project:
        """Create a project in it (editor role)."""
        answer = self._session.post(self._path() + "/projects",
                                    {"name": name, "description": description or ""})
        return Project(self._session, answer["project"])

    def __repr__(self) -> str:
        return f"Workspace(name={self.name!r})"


class User:
    """A user of the master. hpcdet's users are Unix users, known by name (no ids)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.username: str = str(data["username"])
        self.admin: bool = bool(data.get("admin"))
        self._data = data

    def __repr__(self) -> str:
        return f"User(username={self.username!r})"
