"""``Determined``: the SDK's entry point, one master and one identity."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpcdet.client_url import quote_path
from hpcdet.experimental._checkpoint import Checkpoint
from hpcdet.experimental._enums import OrderBy
from hpcdet.experimental._experiment import Experiment
from hpcdet.experimental._model import Model
from hpcdet.experimental._session import Session
from hpcdet.experimental._trial import Trial, TrialMetrics, stream_trials_metrics
from hpcdet.experimental._workspace import User, Workspace
from hpcdet.experimental.errors import SDKError

if TYPE_CHECKING:
    import httpx

_PASSWORD = ("hpcdet has no passwords: you are your Unix user (MUNGE; run `det user login` "
             "or just call the SDK on a cluster node) or the owner of DET_USER_TOKEN")


class Determined:
    """One master, reached and logged in to as ``det`` is.

    ``master``: its address (default ``$DET_MASTER``, else ``http://localhost:8080``);
    ``user``: who you are to an open master (default ``$DET_USER``, else your login name;
    a munge master ignores it and believes MUNGE or the token); ``cert_path``: the CA of an
    https master (``$DET_MASTER_CERT_FILE``); ``noverify``: do not check its certificate.
    ``password`` is refused: there are none. ``transport`` and ``munge_encode`` are for tests.
    """

    def __init__(self, master: str | None = None, user: str | None = None,
                 password: str | None = None, cert_path: str | None = None,
                 noverify: bool = False, *, transport: httpx.BaseTransport | None = None,
                 munge_encode: Any = None) -> None:
        from hpcdet.client import master_url_from_env

        if password is not None:
            raise SDKError(_PASSWORD)
        cert_file = "noverify" if noverify else cert_path
        user = user or os.environ.get("DET_USER") or _login_name()
        self._session = Session(master_url_from_env(master), user=user, cert_file=cert_file,
                                transport=transport, encode=munge_encode)
        self._transport = transport  # core_v2's trial clients go the same way

    @property
    def master(self) -> str:
        """The master's URL."""
        return self._session.url

    def close(self) -> None:
        """Close the connection to the master."""
        self._session.close()

    # Experiments and trials.

    def get_experiment(self, experiment_id: int) -> Experiment:
        """Experiment ``experiment_id``."""
        return Experiment(self._session, int(experiment_id))

    def list_experiments(self, experiment_ids: Iterable[int] | None = None,
                         name: str | None = None, **filters: Any) -> list[Experiment]:
        """Experiments the caller may see, newest first: all of them (page by page), or
        those with ``experiment_ids``; ``name`` (a part of it) and the master's other
        filters (``state``, ``owner``, ``label``, ``workspace``, ``project``, ``archived``)
        narrow the list."""
        params = {k: v for k, v in {"name": name, **filters}.items() if v is not None}
        rows: list[dict[str, Any]] = []
        while True:
            answer = self._session.get("/experiments",
                                       {**params, "limit": 1000, "offset": len(rows)})
            page = answer.get("experiments") or []
            rows += page
            if not page or len(rows) >= int(answer.get("total", 0)):
                break
        wanted = None if experiment_ids is None else {int(i) for i in experiment_ids}
        return [self.get_experiment(int(r["id"])) for r in rows
                if wanted is None or int(r["id"]) in wanted]

    def create_experiment(self, config: dict[str, Any] | str | os.PathLike[str],
                          model_dir: str | os.PathLike[str] | None = None,
                          includes: Iterable[str | os.PathLike[str]] | None = None,
                          parent_id: int | None = None, project_id: int | None = None,
                          template: str | None = None) -> Experiment:
        """Submit an experiment: ``config`` is a dict, a config file's path or YAML text;
        ``model_dir`` the context directory (packed as ``det experiment create`` does)."""
        from hpcdet.cli.context import build_context

        if includes:
            raise SDKError("includes is not supported: put the files in model_dir")
        if parent_id is not None:
            raise SDKError("parent_id is not supported: fork with `det experiment fork` "
                           "(POST /experiments/<id>/fork)")
        if model_dir is None:
            raise SDKError("model_dir is required: hpcdet runs the code of a context "
                           "directory")
        archive = build_context(model_dir)
        body: dict[str, Any] = {
            "config": _config_text(config), "template": template,
            "context": base64.b64encode(archive.data).decode("ascii")}
        if project_id is not None:
            body["workspace"], body["project"] = self._project_names(project_id)
        answer = self._session.post("/experiments", body)
        return Experiment(self._session, int(answer["experiment"]["id"]))

    def _project_names(self, project_id: int) -> tuple[str, str]:
        """The (workspace, project) names of project ``project_id`` (the master takes
        names; Determined's SDK takes the id)."""
        for workspace in self.list_workspaces():
            for project in workspace.list_projects():
                if project.id == project_id:
                    return workspace.name, project.name
        raise SDKError(f"project {project_id}: not found in any workspace you belong to")

    def get_trial(self, trial_id: int) -> Trial:
        """Trial ``trial_id``."""
        return Trial(self._session, int(trial_id))

    def get_checkpoint(self, uuid: str) -> Checkpoint:
        """Checkpoint ``uuid``."""
        return Checkpoint(self._session, uuid)

    def stream_trials_metrics(self, trial_ids: Iterable[int],
                              group: str) -> Iterator[TrialMetrics]:
        """Every report of ``group`` of each trial, trial by trial."""
        return stream_trials_metrics(self._session, list(trial_ids), group)

    def stream_trials_training_metrics(self, trial_ids: Iterable[int]) -> Iterator[TrialMetrics]:
        """``stream_trials_metrics(trial_ids, "training")``."""
        return self.stream_trials_metrics(trial_ids, "training")

    def stream_trials_validation_metrics(
            self, trial_ids: Iterable[int]) -> Iterator[TrialMetrics]:
        """``stream_trials_metrics(trial_ids, "validation")``."""
        return self.stream_trials_metrics(trial_ids, "validation")

    # The model registry.

    def get_model(self, identifier: str | int) -> Model:
        """The model named ``identifier`` (or with that id)."""
        answer = self._session.get(f"/models/{quote_path(str(identifier))}")
        return Model(self._session, answer["model"])

    def get_model_by_id(self, model_id: int) -> Model:
        """The model with id ``model_id``."""
        return self.get_model(int(model_id))

    def create_model(self, name: str, description: str | None = "",
                     metadata: dict[str, Any] | None = None, labels: list[str] | None = None,
                     workspace_name: str | None = None) -> Model:
        """Create a model (shared in ``workspace_name`` if given)."""
        body = {"name": name, "description": description or "", "metadata": metadata or {},
                "labels": labels or [], "workspace": workspace_name}
        return Model(self._session, self._session.post("/models", body)["model"])

    def list_models(self, sort_by: str = "name", order_by: OrderBy = OrderBy.ASCENDING,
                    name: str | None = None, description: str | None = None,
                    workspace_names: list[str] | None = None) -> list[Model]:
        """Models the caller may see; ``name``/``description`` match a part, any case."""
        params: dict[str, Any] = {"sort_by": sort_by, "order_by": OrderBy(order_by).value,
                                  "limit": 1000}
        for key, value in (("name", name), ("description", description),
                           ("workspace", ",".join(workspace_names or []) or None)):
            if value is not None:
                params[key] = value
        answer = self._session.get("/models", params)
        return [Model(self._session, m) for m in answer.get("models") or []]

    # Workspaces and users.

    def get_workspace(self, name: str) -> Workspace:
        """Workspace ``name``."""
        answer = self._session.get(f"/workspaces/{quote_path(name)}")
        return Workspace(self._session, answer["workspace"])

    def list_workspaces(self) -> list[Workspace]:
        """The workspaces the caller belongs to (all, for a cluster admin)."""
        answer = self._session.get("/workspaces")
        return [Workspace(self._session, w) for w in answer.get("workspaces") or []]

    def create_workspace(self, name: str) -> Workspace:
        """Create a workspace; the caller becomes its admin."""
        return Workspace(self._session, self._session.post("/workspaces",
                                                           {"name": name})["workspace"])

    def whoami(self) -> User:
        """Who the master thinks is calling."""
        return User(self._session.get("/auth/whoami"))

    def list_users(self) -> list[User]:
        """The users who have signed in."""
        return [User(u) for u in self._session.get("/users").get("users") or []]

    def get_user_by_name(self, user_name: str) -> User:
        """User ``user_name`` (one who has signed in)."""
        for user in self.list_users():
            if user.username == user_name:
                return user
        from hpcdet.experimental.errors import NotFoundException

        raise NotFoundException(f"user {user_name!r} not found (never signed in)",
                                status=404, code="not_found")

    def logout(self) -> None:
        """Revoke this session's token, and forget it in ``~/.hpcdet/auth.json``."""
        from hpcdet.cli import session

        self._session.post("/auth/logout")
        session.save(self._session.url, None)


def _config_text(config: dict[str, Any] | str | os.PathLike[str]) -> str:
    """The YAML text the master takes, from a dict, a file's path or YAML text."""
    if isinstance(config, dict):
        import yaml

        return str(yaml.safe_dump(config, sort_keys=False))
    text = os.fspath(config)
    if "\n" not in text and Path(text).is_file():
        return Path(text).read_text(encoding="utf-8")
    if isinstance(config, os.PathLike):
        raise SDKError(f"config file {text!r} does not exist")
    return text


def _login_name() -> str | None:
    """The login name, as ``det -u`` defaults to it."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None
