"""Who may see and change what: ownership, workspace roles and cluster-wide admins.

On a master that identifies its users (:attr:`MasterSettings.identifies_users`):

* an experiment, command task or template **without a workspace** belongs to its owner
  (and the admins of ``auth.admins``) alone;
* one **in a workspace** is also seen by the workspace's members; ``editor`` and ``admin``
  members may change it, ``viewer`` members only read it;
* a caller who may not see an object gets NotFound, exactly as for an id that does not exist,
  and listings leave it out; one who sees it but may not change it gets Forbidden;
* objects owned by ``anonymous`` (made while the master was open) are left as they were:
  everyone may see and change them;
* what makes a job run as an object's owner with something the caller chose (continue an
  experiment, replace a template, a notebook's terminal...) is that owner's alone, whoever
  else may change the object: :func:`require_runs_as_self`.

An open master cannot tell people apart: everybody sees and changes everything.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, or_, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from hpcdet.master.errors import Forbidden, NotFound
from hpcdet.master.models import UserGroupMember, WorkspaceGroupRole, WorkspaceMember
from hpcdet.master.settings.core import MasterSettings

ANONYMOUS = "anonymous"
ROLES = ("viewer", "editor", "admin")
CHANGING_ROLES = ("editor", "admin")


class Access(enum.IntEnum):
    """What a caller may do with one object."""

    NONE = 0
    READ = 1
    CHANGE = 2


def is_admin(settings: MasterSettings, actor: str) -> bool:
    """Whether ``actor`` is a cluster-wide admin (or the master does not tell users apart)."""
    return not settings.identifies_users or actor in settings.admins


def role_in(session: Session, workspace_id: int | None, actor: str) -> str | None:
    """``actor``'s role in the workspace, or None (no workspace, or not a member): the
    highest of their own and their groups' roles there."""
    if workspace_id is None:
        return None
    own = session.scalar(select(WorkspaceMember.role).where(
        WorkspaceMember.workspace_id == workspace_id, WorkspaceMember.user == actor))
    via_groups = session.scalars(
        select(WorkspaceGroupRole.role)
        .join(UserGroupMember, UserGroupMember.group_id == WorkspaceGroupRole.group_id)
        .where(WorkspaceGroupRole.workspace_id == workspace_id, UserGroupMember.user == actor))
    held = [role for role in (own, *via_groups) if role in ROLES]
    return max(held, key=ROLES.index) if held else None


def member_workspaces(actor: str) -> list[Select[Any]]:
    """Queries of the ids of the workspaces ``actor`` belongs to: as a member, and through
    a group that has a role there."""
    return [select(WorkspaceMember.workspace_id).where(WorkspaceMember.user == actor),
            select(WorkspaceGroupRole.workspace_id)
            .join(UserGroupMember, UserGroupMember.group_id == WorkspaceGroupRole.group_id)
            .where(UserGroupMember.user == actor)]


def changing_workspaces(session: Session, actor: str) -> list[int]:
    """Ids of the workspaces where ``actor`` is an editor or admin (themselves or through a
    group), sorted."""
    own = select(WorkspaceMember.workspace_id).where(
        WorkspaceMember.user == actor, WorkspaceMember.role.in_(CHANGING_ROLES))
    via_groups = (select(WorkspaceGroupRole.workspace_id)
                  .join(UserGroupMember, UserGroupMember.group_id == WorkspaceGroupRole.group_id)
                  .where(UserGroupMember.user == actor,
                         WorkspaceGroupRole.role.in_(CHANGING_ROLES)))
    return sorted({i for query in (own, via_groups) for i in session.scalars(query)})


def in_member_workspace(workspace_id: Any, actor: str) -> ColumnElement[bool]:
    """SQL: ``workspace_id`` (a column) is one of ``actor``'s workspaces."""
    return or_(*(workspace_id.in_(query) for query in member_workspaces(actor)))


def access(session: Session, settings: MasterSettings, actor: str, owner: str,
           workspace_id: int | None) -> Access:
    """What ``actor`` may do with an object of ``owner`` in ``workspace_id`` (or none)."""
    if is_admin(settings, actor) or actor == owner or owner == ANONYMOUS:
        return Access.CHANGE
    return role_access(role_in(session, workspace_id, actor))


def role_access(role: str | None) -> Access:
    """What a workspace role allows on the workspace's objects (None: not a member)."""
    if role is None:
        return Access.NONE
    return Access.CHANGE if role in CHANGING_ROLES else Access.READ


def require(session: Session, settings: MasterSettings, actor: str, obj: Any, what: str,
            needed: Access) -> None:
    """NotFound (as if unknown) unless ``actor`` sees ``obj``; Forbidden if ``needed`` is more.

    ``obj`` has ``owner`` and ``workspace_id`` (an experiment, a command task, a template).
    """
    have = access(session, settings, actor, obj.owner, obj.workspace_id)
    if have is Access.NONE:
        raise not_found(what)
    if have < needed:
        raise Forbidden("forbidden", f"user {actor!r} may read but not change {what}: "
                        f"only its owner, an editor or admin of its workspace, or a cluster "
                        "admin (master.yaml auth.admins) may")


def runs_as_self(settings: MasterSettings, actor: str, owner: str) -> bool:
    """Whether ``actor`` may choose what runs as ``owner``: only ``owner`` may (Determined's
    rule: a run belongs to whoever submits it). An open master cannot tell them apart."""
    return not settings.identifies_users or actor == owner


def require_runs_as_self(settings: MasterSettings, actor: str, owner: str, doing: str,
                         way_out: str) -> None:
    """Forbidden unless ``actor`` is ``owner``: the one rule for a route that makes a job run as an
    object's owner with something the caller chose (docs/admin/security.md, "What only the
    owner may do").

    Editors and admins of the object's workspace and cluster admins are refused alike: an
    hpcdet admin is not root on the cluster, and whoever an owner made an editor must not
    become that owner there. An ``anonymous`` object is nobody's: nobody may. ``doing``
    says what was asked ("continue experiment 5"), ``way_out`` what to do instead.
    """
    if runs_as_self(settings, actor, owner):
        return
    raise Forbidden("forbidden", f"only its owner {owner!r} may {doing}: that chooses "
                    f"what runs as {owner!r} on the cluster, and a run belongs to whoever "
                    "submits it, so no one else may (not an editor or admin of its workspace, "
                    f"not a cluster admin); {way_out}")


def not_found(what: str) -> NotFound:
    """The answer for an object the caller may not see: the same as for an unknown one."""
    return NotFound("not_found", f"{what} not found")


@dataclass(frozen=True)
class Viewer:
    """One caller's sight, read once: for filtering many rows without a query each."""

    actor: str
    admin: bool
    workspaces: frozenset[int]

    def sees(self, owner: str, workspace_id: int | None) -> bool:
        """Whether the caller may see an object of ``owner`` in ``workspace_id``."""
        return (self.admin or owner in (self.actor, ANONYMOUS)
                or (workspace_id is not None and workspace_id in self.workspaces))


def viewer(session: Session, settings: MasterSettings, actor: str) -> Viewer:
    """``actor``'s :class:`Viewer` (one query for the workspaces they belong to)."""
    if is_admin(settings, actor):
        return Viewer(actor, True, frozenset())
    ids = {i for query in member_workspaces(actor) for i in session.scalars(query)}
    return Viewer(actor, False, frozenset(ids))


def visible(settings: MasterSettings, actor: str, owner: InstrumentedAttribute[str],
            workspace_id: InstrumentedAttribute[int | None]) -> list[ColumnElement[bool]]:
    """SQL conditions (ANDed; none for admins) selecting the rows ``actor`` may see.

    ``owner`` and ``workspace_id`` are the model's columns, e.g. ``Experiment.owner``.
    """
    if is_admin(settings, actor):
        return []
    return [or_(owner == actor, owner == ANONYMOUS, in_member_workspace(workspace_id, actor))]
