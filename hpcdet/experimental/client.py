"""Determined's ``determined.experimental.client``: module-level functions over one
:class:`Determined`, made by :func:`login` or, on first use, from the environment
(``DET_MASTER``, the ``det`` session cache or ``DET_USER_TOKEN``).

    from hpcdet.experimental import client

    client.login()                               # optional: DET_MASTER and det's login
    exp = client.get_experiment(12)
    exp.wait()
    path = exp.top_checkpoint().download()

See docs/sdk.md for what exists and how it differs from Determined's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

from hpcdet.experimental._checkpoint import Checkpoint, CheckpointTrainingMetadata
from hpcdet.experimental._determined import Determined
from hpcdet.experimental._enums import (
    CheckpointSortBy,
    CheckpointState,
    DownloadMode,
    ExperimentState,
    OrderBy,
    TrialSortBy,
    TrialState,
)
from hpcdet.experimental._experiment import Experiment
from hpcdet.experimental._model import Model, ModelVersion
from hpcdet.experimental._trial import Trial, TrialMetrics
from hpcdet.experimental._workspace import Project, User, Workspace

__all__ = [
    "Checkpoint", "CheckpointSortBy", "CheckpointState", "CheckpointTrainingMetadata",
    "Determined", "DownloadMode", "Experiment", "ExperimentState", "Model", "ModelVersion",
    "OrderBy", "Project", "Trial", "TrialMetrics", "TrialSortBy", "TrialState", "User",
    "Workspace", "create_experiment", "create_model", "get_checkpoint", "get_experiment",
    "get_model", "get_model_by_id", "get_trial", "get_user_by_name", "get_workspace",
    "list_experiments", "list_models", "list_users", "list_workspaces", "login", "logout",
    "stream_trials_metrics", "stream_trials_training_metrics",
    "stream_trials_validation_metrics", "whoami",
]

_determined: Determined | None = None


def login(master: str | None = None, user: str | None = None, password: str | None = None,
          cert_path: str | None = None, noverify: bool = False, **test_hooks: Any) -> None:
    """Use ``master`` as ``user`` for the functions of this module (see :class:`Determined`;
    ``password`` is refused: identity is MUNGE or ``DET_USER_TOKEN``)."""
    global _determined
    fresh = Determined(master, user, password, cert_path, noverify, **test_hooks)
    if _determined is not None:
        _determined.close()
    _determined = fresh


def _client() -> Determined:
    """The :class:`Determined` of :func:`login`, made from the environment if none yet."""
    if _determined is None:
        login()
    assert _determined is not None
    return _determined


def logout() -> None:
    """Revoke this session's token and forget the client of :func:`login`."""
    global _determined
    _client().logout()
    _determined = None


def get_experiment(experiment_id: int) -> Experiment:
    """Experiment ``experiment_id``."""
    return _client().get_experiment(experiment_id)


def list_experiments(experiment_ids: Iterable[int] | None = None, name: str | None = None,
                     **filters: Any) -> list[Experiment]:
    """Experiments the caller may see (see :meth:`Determined.list_experiments`)."""
    return _client().list_experiments(experiment_ids, name, **filters)


def create_experiment(config: dict[str, Any] | str | os.PathLike[str],
                      model_dir: str | os.PathLike[str] | None = None,
                      includes: Iterable[str | os.PathLike[str]] | None = None,
                      parent_id: int | None = None, project_id: int | None = None,
                      template: str | None = None) -> Experiment:
    """Submit an experiment (see :meth:`Determined.create_experiment`)."""
    return _client().create_experiment(config, model_dir, includes, parent_id, project_id,
                                       template)


def get_trial(trial_id: int) -> Trial:
    """Trial ``trial_id``."""
    return _client().get_trial(trial_id)


def get_checkpoint(uuid: str) -> Checkpoint:
    """Checkpoint ``uuid``."""
    return _client().get_checkpoint(uuid)


def stream_trials_metrics(trial_ids: Iterable[int], group: str) -> Iterator[TrialMetrics]:
    """Every report of ``group`` of each trial."""
    return _client().stream_trials_metrics(trial_ids, group)


def stream_trials_training_metrics(trial_ids: Iterable[int]) -> Iterator[TrialMetrics]:
    """Every training report of each trial."""
    return _client().stream_trials_training_metrics(trial_ids)


def stream_trials_validation_metrics(trial_ids: Iterable[int]) -> Iterator[TrialMetrics]:
    """Every validation report of each trial."""
    return _client().stream_trials_validation_metrics(trial_ids)


def get_model(identifier: str | int) -> Model:
    """The model with that name (or id)."""
    return _client().get_model(identifier)


def get_model_by_id(model_id: int) -> Model:
    """The model with id ``model_id``."""
    return _client().get_model_by_id(model_id)


def create_model(name: str, description: str | None = "",
                 metadata: dict[str, Any] | None = None, labels: list[str] | None = None,
                 workspace_name: str | None = None) -> Model:
    """Create a model."""
    return _client().create_model(name, description, metadata, labels, workspace_name)


def list_models(sort_by: str = "name", order_by: OrderBy = OrderBy.ASCENDING,
                name: str | None = None, description: str | None = None,
                workspace_names: list[str] | None = None) -> list[Model]:
    """Models the caller may see."""
    return _client().list_models(sort_by, order_by, name, description, workspace_names)


def get_workspace(name: str) -> Workspace:
    """Workspace ``name``."""
    return _client().get_workspace(name)


def list_workspaces() -> list[Workspace]:
    """The caller's workspaces."""
    return _client().list_workspaces()


def whoami() -> User:
    """Who the master thinks is calling."""
    return _client().whoami()


def list_users() -> list[User]:
    """The users who have signed in."""
    return _client().list_users()


def get_user_by_name(user_name: str) -> User:
    """User ``user_name``."""
    return _client().get_user_by_name(user_name)
