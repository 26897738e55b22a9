"""Look an object up for the caller: 404 if missing *or unseen*, 403 if seen but not theirs.

Every route that reads or changes an experiment, trial, checkpoint, task or template finds
it through these helpers, so the rules of :mod:`hpcdet.master.security.authz` apply everywhere.
"""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy import select

from hpcdet.master.api.auth import current_user
from hpcdet.master.api.common import db, settings
from hpcdet.master.models import CommandTask, Experiment, Template, Trial
from hpcdet.master.security import authz
from hpcdet.master.security.authz import Access

READ, CHANGE = Access.READ, Access.CHANGE


def experiment_for(exp_id: int, needed: Access = READ, actor: str | None = None) -> Experiment:
    """The experiment, if the caller (``actor``, else :func:`current_user`) may ``needed``."""
    who = actor if actor is not None else current_user()
    what = f"experiment {exp_id}"
    exp = db().get(Experiment, exp_id)
    if exp is None:
        raise authz.not_found(what)
    authz.require(db(), settings(), who, exp, what, needed)
    return exp


def trial_for(trial_id: int, needed: Access = READ, actor: str | None = None) -> Trial:
    """The trial, if the caller may ``needed`` its experiment (404 names the trial)."""
    who = actor if actor is not None else current_user()
    what = f"trial {trial_id}"
    row = db().execute(select(Trial, Experiment.owner, Experiment.workspace_id)
                       .join(Experiment, Experiment.id == Trial.experiment_id)
                       .where(Trial.id == trial_id)).one_or_none()
    if row is None:
        raise authz.not_found(what)
    trial, owner, workspace_id = row
    have = authz.access(db(), settings(), who, owner, workspace_id)
    if have is Access.NONE:
        raise authz.not_found(what)
    if have < needed:
        authz.require(db(), settings(), who, _Owned(owner, workspace_id), what, needed)
    return trial


def task_for(task_id: int, needed: Access = READ) -> CommandTask:
    """The command task, if the caller may ``needed`` it."""
    return _owned_row(CommandTask, task_id, f"task {task_id}", needed)


def template_for(name: str, needed: Access = READ) -> Template:
    """The template, if the caller may ``needed`` it."""
    return _owned_row(Template, name, f"template {name!r}", needed)


_Row = TypeVar("_Row", CommandTask, Template)


def _owned_row(model: type[_Row], key: object, what: str, needed: Access) -> _Row:
    """The row of ``model`` at ``key``, if the caller may ``needed`` it. The caller is
    known first, so a request without an identity stays a 401, never a 404."""
    who = current_user()
    row = db().get(model, key)
    if row is None:
        raise authz.not_found(what)
    authz.require(db(), settings(), who, row, what, needed)
    return row


class _Owned:
    """Owner and workspace of an object read as columns (for :func:`authz.require`)."""

    def __init__(self, owner: str, workspace_id: int | None) -> None:
        self.owner, self.workspace_id = owner, workspace_id
