"""The model registry's rows: find, list, create, change and delete models and versions.

Who may do what is :mod:`hpcdet.master.security.authz`'s rule for any owned object: a model
in a workspace the caller does not belong to is a NotFound exactly like a missing one, viewers
read but do not change (Forbidden). A version may only point at a checkpoint the caller sees,
and only at one whose files are there (``ACTIVE``, Determined's ``COMPLETED``).

What the model's owner loads is theirs to choose (:func:`authz.require_runs_as_self`): only
the owner may register a checkpoint trained by someone else (an editor may register the
owner's own), rename the model or delete it (a freed name could be taken with other
checkpoints behind it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from hpcdet.master.errors import Conflict
from hpcdet.master.model_base import iso_time
from hpcdet.master.models import (
    Checkpoint,
    Experiment,
    ModelVersion,
    RegisteredModel,
    Trial,
    Workspace,
    utcnow,
)
from hpcdet.master.registry import inputs
from hpcdet.master.reports.serialize import checkpoint as checkpoint_json
from hpcdet.master.security import authz
from hpcdet.master.security.authz import Access
from hpcdet.master.security.workspaces import placement_for
from hpcdet.master.settings.core import MasterSettings

COMPLETED = "ACTIVE"  # hpcdet's state of a checkpoint whose files are there
SORT_KEYS = ("id", "name", "description", "creation_time", "last_updated_time",
             "num_versions", "workspace")
MODEL_FIELDS = ("name", "description", "metadata", "labels", "notes", "workspace")
VERSION_FIELDS = ("checkpoint_uuid", "name", "comment", "notes", "metadata", "labels")
VERSION_PATCH_FIELDS = ("name", "comment", "notes", "metadata", "labels")


@dataclass(frozen=True)
class Caller:
    """Who asks, with the session and settings every check needs."""

    session: Session
    settings: MasterSettings
    actor: str

    def require(self, model: RegisteredModel, what: str, needed: Access) -> None:
        authz.require(self.session, self.settings, self.actor, model, what, needed)

    def require_owner(self, model: RegisteredModel, doing: str,
                      way_out: str = "ask its owner") -> None:
        """Forbidden unless the caller owns ``model`` (``doing``: "rename", "delete"...)."""
        authz.require_runs_as_self(self.settings, self.actor, model.owner,
                                   f"{doing} model {model.name!r}", way_out)


# ---- models ------------------------------------------------------------------------------


def find_model(caller: Caller, identifier: str, needed: Access = Access.READ) -> RegisteredModel:
    """The model named ``identifier`` (or with that id, when it is all digits), if the caller
    may ``needed`` it: NotFound as if unknown when unseen, Forbidden when seen but not
    changeable."""
    what = f"model {identifier!r}"
    query = select(RegisteredModel)
    if identifier.isascii() and identifier.isdigit() and len(identifier) < 19:
        query = query.where(RegisteredModel.id == int(identifier))
    else:
        query = query.where(RegisteredModel.name == identifier)
    model = caller.session.scalar(query)
    if model is None:
        raise authz.not_found(what)
    caller.require(model, what, needed)
    return model


def create_model(caller: Caller, body: Mapping[str, Any]) -> RegisteredModel:
    """A new model; Conflict if the name is taken anywhere on the cluster (as in Determined)."""
    inputs.only_known(body, MODEL_FIELDS)
    name = inputs.model_name(body.get("name"))
    workspace_id, _ = placement_for(caller.session, caller.settings, caller.actor,
                                    body.get("workspace"), None)
    now = utcnow()
    model = RegisteredModel(
        name=name, description=inputs.text(body, "description"),
        metadata_=inputs.metadata(body.get("metadata")), labels=inputs.labels(body.get("labels")),
        notes=inputs.text(body, "notes"), owner=caller.actor, workspace_id=workspace_id,
        archived=False, created_at=now, updated_at=now)
    _taken_check(caller.session, name)
    caller.session.add(model)
    _commit(caller.session, _name_taken(name))
    return model


def patch_model(caller: Caller, model: RegisteredModel, body: Mapping[str, Any]) -> None:
    """Change what ``body`` names: name, description, notes, labels (replaced), metadata
    (merged: a key set to null is removed), workspace (a name, or null for none)."""
    inputs.only_known(body, MODEL_FIELDS)
    if "name" in body and body["name"] != model.name:
        caller.require_owner(model, "rename")
        model.name = inputs.model_name(body["name"])
        _taken_check(caller.session, model.name, model.id)
    for key in ("description", "notes"):
        if key in body:
            setattr(model, key, inputs.text(body, key))
    if "labels" in body:
        model.labels = inputs.labels(body["labels"])
    if "metadata" in body:
        model.metadata_ = inputs.merged_metadata(model.metadata_, body["metadata"])
    if "workspace" in body:
        model.workspace_id, _ = placement_for(caller.session, caller.settings, caller.actor,
                                              body["workspace"], None)
    model.updated_at = utcnow()
    _commit(caller.session, _name_taken(model.name))


def set_archived(caller: Caller, model: RegisteredModel, archived: bool) -> None:
    model.archived, model.updated_at = archived, utcnow()
    caller.session.commit()


def delete_model(caller: Caller, model: RegisteredModel) -> None:
    """Delete the model and its versions (their checkpoints stay, no longer pinned); only
    its owner may."""
    caller.require_owner(model, "delete")
    caller.session.execute(delete(ModelVersion).where(ModelVersion.model_id == model.id))
    caller.session.delete(model)
    caller.session.commit()


@dataclass(frozen=True)
class ModelQuery:
    """``GET /models``'s filters and order (validated by the route)."""

    name: str | None = None
    description: str | None = None
    label: str | None = None
    owner: str | None = None
    workspaces: tuple[str, ...] = ()
    archived: bool | None = None
    sort_by: str = "id"
    descending: bool = False


def list_models(caller: Caller, query: ModelQuery) -> list[dict[str, Any]]:
    """The models the caller sees that match, as :func:`model_json`, sorted in Python so
    SQLite and PostgreSQL agree."""
    stmt = select(RegisteredModel).where(*authz.visible(
        caller.settings, caller.actor, RegisteredModel.owner, RegisteredModel.workspace_id))
    if query.archived is not None:
        stmt = stmt.where(RegisteredModel.archived.is_(query.archived))
    if query.owner:
        stmt = stmt.where(RegisteredModel.owner == query.owner)
    if query.workspaces:
        stmt = stmt.join(Workspace, Workspace.id == RegisteredModel.workspace_id).where(
            Workspace.name.in_(query.workspaces))
    rows = [m for m in caller.session.scalars(stmt) if _matches(m, query)]
    bodies = models_json(caller.session, rows)
    key = _sort_key(query.sort_by)
    bodies.sort(key=lambda b: b["id"], reverse=query.descending)
    bodies.sort(key=key, reverse=query.descending)
    return bodies


def _matches(model: RegisteredModel, query: ModelQuery) -> bool:
    def has(needle: str | None, hay: str) -> bool:
        return not needle or needle.lower() in hay.lower()
    return (has(query.name, model.name) and has(query.description, model.description)
            and (not query.label or query.label in (model.labels or [])))


def _sort_key(sort_by: str) -> Any:
    field = {"creation_time": "created_at", "last_updated_time": "updated_at"}.get(sort_by,
                                                                                    sort_by)
    if field in ("id", "num_versions"):
        return lambda body: body[field]
    return lambda body: (body[field] is None, body[field] or "")


def model_json(session: Session, model: RegisteredModel) -> dict[str, Any]:
    """The ``Model`` shape of docs/model-registry.md."""
    return models_json(session, [model])[0]


def models_json(session: Session, models: Sequence[RegisteredModel]) -> list[dict[str, Any]]:
    """Several models' JSON with two queries in all (version counts, workspace names)."""
    ids = [m.id for m in models]
    counts = {model_id: count for model_id, count in session.execute(
        select(ModelVersion.model_id, func.count(ModelVersion.id))
        .where(ModelVersion.model_id.in_(ids)).group_by(ModelVersion.model_id))}
    spaces = {m.workspace_id for m in models if m.workspace_id is not None}
    names = {space_id: name for space_id, name in session.execute(
        select(Workspace.id, Workspace.name).where(Workspace.id.in_(spaces)))}
    return [{"id": m.id, "name": m.name, "description": m.description,
             "metadata": m.metadata_ or {}, "labels": m.labels or [], "notes": m.notes,
             "owner": m.owner, "workspace_id": m.workspace_id,
             "workspace": names.get(m.workspace_id) if m.workspace_id is not None else None,
             "archived": m.archived, "created_at": iso_time(m.created_at),
             "updated_at": iso_time(m.updated_at), "num_versions": counts.get(m.id, 0)}
            for m in models]


# ---- versions ----------------------------------------------------------------------------


def find_version(caller: Caller, model: RegisteredModel, number: int) -> ModelVersion:
    version = caller.session.scalar(select(ModelVersion).where(
        ModelVersion.model_id == model.id, ModelVersion.version == number))
    if version is None:
        raise authz.not_found(f"version {number} of model {model.name!r}")
    return version


def list_versions(caller: Caller, model: RegisteredModel,
                  descending: bool = False) -> list[ModelVersion]:
    order = ModelVersion.version.desc() if descending else ModelVersion.version
    return list(caller.session.scalars(select(ModelVersion)
                                       .where(ModelVersion.model_id == model.id)
                                       .order_by(order)))


def register_version(caller: Caller, model: RegisteredModel,
                     body: Mapping[str, Any]) -> ModelVersion:
    """The model's next version, pointing at ``checkpoint_uuid`` (seen by the caller and
    COMPLETED); Conflict for an archived model."""
    inputs.only_known(body, VERSION_FIELDS)
    if model.archived:
        raise Conflict("conflict", f"model {model.name!r} is archived and cannot "
                       "register new versions (det model unarchive, or PATCH archived)")
    uuid = body.get("checkpoint_uuid")
    if not isinstance(uuid, str) or not uuid:
        raise inputs.bad("checkpoint_uuid: must be the uuid of a checkpoint (a string)")
    checkpoint, trained_by = checkpoint_and_owner(caller, uuid)
    if trained_by != model.owner:
        caller.require_owner(model, f"register {trained_by}'s checkpoint {uuid} in",
                             "register it in a model of your own (det model create)")
    if checkpoint.state != COMPLETED:
        raise Conflict("conflict", f"checkpoint {uuid} is {checkpoint.state}: only a "
                       "checkpoint whose files are there (ACTIVE, Determined's COMPLETED) "
                       "can be registered")
    values = {"name": inputs.text(body, "name", limit=inputs.MAX_NAME),
              "comment": inputs.text(body, "comment"), "notes": inputs.text(body, "notes"),
              "metadata_": inputs.metadata(body.get("metadata")),
              "labels": inputs.labels(body.get("labels"))}
    latest = caller.session.scalar(select(func.max(ModelVersion.version))
                                   .where(ModelVersion.model_id == model.id)) or 0
    now = utcnow()
    version = ModelVersion(model_id=model.id, version=latest + 1, checkpoint_uuid=uuid,
                           owner=caller.actor, created_at=now, updated_at=now, **values)
    caller.session.add(version)
    model.updated_at = now
    _commit(caller.session, Conflict("conflict", f"another version of model "
                                     f"{model.name!r} was registered at the same moment; "
                                     "try again"))
    return version


def patch_version(caller: Caller, model: RegisteredModel, version: ModelVersion,
                  body: Mapping[str, Any]) -> None:
    """Change a version's name, comment, notes, labels (replaced) or metadata (merged)."""
    inputs.only_known(body, VERSION_PATCH_FIELDS)
    for key in ("comment", "notes"):
        if key in body:
            setattr(version, key, inputs.text(body, key))
    if "name" in body:
        version.name = inputs.text(body, "name", limit=inputs.MAX_NAME)
    if "labels" in body:
        version.labels = inputs.labels(body["labels"])
    if "metadata" in body:
        version.metadata_ = inputs.merged_metadata(version.metadata_, body["metadata"])
    version.updated_at = model.updated_at = utcnow()
    caller.session.commit()


def delete_version(caller: Caller, model: RegisteredModel, version: ModelVersion) -> None:
    """Delete one version; its checkpoint is no longer pinned by it."""
    caller.session.delete(version)
    model.updated_at = utcnow()
    caller.session.commit()


def visible_checkpoint(caller: Caller, uuid: str) -> Checkpoint:
    """The checkpoint, if the caller sees its experiment (NotFound otherwise, as if unknown)."""
    return checkpoint_and_owner(caller, uuid)[0]


def checkpoint_and_owner(caller: Caller, uuid: str) -> tuple[Checkpoint, str]:
    """The checkpoint and its experiment's owner, if the caller sees that experiment (NotFound
    otherwise, as if unknown)."""
    row = caller.session.execute(
        select(Checkpoint, Experiment.owner, Experiment.workspace_id)
        .join(Trial, Trial.id == Checkpoint.trial_id)
        .join(Experiment, Experiment.id == Trial.experiment_id)
        .where(Checkpoint.uuid == uuid)).one_or_none()
    if row is None or authz.access(caller.session, caller.settings, caller.actor, row[1],
                                   row[2]) is Access.NONE:
        raise authz.not_found(f"checkpoint {uuid}")
    checkpoint: Checkpoint = row[0]
    return checkpoint, str(row[1])


def versions_json(session: Session, model: RegisteredModel,
                  versions: Sequence[ModelVersion]) -> list[dict[str, Any]]:
    """The ``ModelVersion`` shape of docs/model-registry.md, each with its checkpoint."""
    uuids = {v.checkpoint_uuid for v in versions}
    found = session.execute(select(Checkpoint, Trial.experiment_id)
                            .join(Trial, Trial.id == Checkpoint.trial_id)
                            .where(Checkpoint.uuid.in_(uuids)))
    checkpoints = {c.uuid: {**checkpoint_json(c), "experiment_id": exp_id}
                   for c, exp_id in found}
    return [{"id": v.id, "model_id": model.id, "model_name": model.name,
             "version": v.version, "checkpoint_uuid": v.checkpoint_uuid, "name": v.name,
             "comment": v.comment, "notes": v.notes, "metadata": v.metadata_ or {},
             "labels": v.labels or [], "owner": v.owner,
             "created_at": iso_time(v.created_at), "updated_at": iso_time(v.updated_at),
             "checkpoint": checkpoints.get(v.checkpoint_uuid)} for v in versions]


def pinned_checkpoints(session: Session, uuids: Sequence[str]) -> set[str]:
    """Which of ``uuids`` a model version names (they must not be deleted)."""
    if not uuids:
        return set()
    return set(session.scalars(select(ModelVersion.checkpoint_uuid)
                               .where(ModelVersion.checkpoint_uuid.in_(uuids))))


# ---- helpers -----------------------------------------------------------------------------


def _name_taken(name: str) -> Conflict:
    return Conflict("conflict", f"a model named {name!r} already exists (model names "
                    "are unique on the cluster, case-sensitive)")


def _taken_check(session: Session, name: str, own_id: int | None = None) -> None:
    clash = session.scalar(select(RegisteredModel.id).where(RegisteredModel.name == name))
    if clash is not None and clash != own_id:
        raise _name_taken(name)


def _commit(session: Session, conflict: Conflict) -> None:
    """Commit; a concurrent insert that breaks a unique constraint is ``conflict``, not 500."""
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise conflict from None
