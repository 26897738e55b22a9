"""What an upgrade of the database would do: its revision, the code's head, the pending
migrations with their messages (``det-master migrate --check``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import create_engine, inspect
from sqlalchemy.exc import SQLAlchemyError

from hpcdet import __version__
from hpcdet.errors import HpcdetError
from hpcdet.master.db import HEAD_REVISION, alembic_config, known_revisions, schema_revision

# Exit statuses of ``det-master migrate --check`` (as ``diff``: 0 nothing to do, 1 pending,
# 2 no upgrade possible: a newer schema, or a database it cannot read).
UP_TO_DATE, PENDING, TOO_NEW = 0, 1, 2


class Migration(NamedTuple):
    """One Alembic revision: its id and the first line of its message."""

    revision: str
    message: str


@dataclass(frozen=True)
class SchemaPlan:
    """The database's revision against the code's, and what an upgrade would apply."""

    current: str | None
    head: str
    pending: list[Migration] = field(default_factory=list)
    too_new: bool = False

    @property
    def status(self) -> int:
        """The exit status: UP_TO_DATE, PENDING or TOO_NEW."""
        if self.too_new:
            return TOO_NEW
        return PENDING if self.pending else UP_TO_DATE

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` answer."""
        return {"current": self.current, "head": self.head, "hpcdet_version": __version__,
                "upgrade_pending": bool(self.pending), "newer_than_code": self.too_new,
                "pending": [{"revision": m.revision, "message": m.message}
                            for m in self.pending]}


def plan_upgrade(url: str) -> SchemaPlan:
    """What ``upgrade head`` would do to the database at ``url`` (which it does not change)."""
    current = schema_revision(url)
    if current is None:
        refuse_unreadable(url)
    if current == HEAD_REVISION:
        return SchemaPlan(current, HEAD_REVISION)
    if current is not None and current not in known_revisions():
        return SchemaPlan(current, HEAD_REVISION, too_new=True)
    return SchemaPlan(current, HEAD_REVISION, pending=pending_migrations(url, current))


class UnreadableDatabase(HpcdetError):
    """The database cannot be reached or read: no plan can be made."""


def refuse_unreadable(url: str) -> None:
    """Raise :class:`UnreadableDatabase` unless the database at ``url`` can be read (a
    database without a schema, which ``schema_revision`` also answers None for, can)."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            inspect(connection).get_table_names()
    except SQLAlchemyError as exc:
        first = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise UnreadableDatabase(f"cannot read the database ({engine.url.render_as_string()}): "
                                 f"{first}") from None
    finally:
        engine.dispose()


def pending_migrations(url: str, current: str | None) -> list[Migration]:
    """The migrations after ``current`` (all of them for a new database), oldest first."""
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory.from_config(alembic_config(url))
    steps = scripts.iterate_revisions("head", current or "base")
    return [Migration(s.revision, (s.doc or "").strip().splitlines()[0] if s.doc else "")
            for s in reversed(list(steps))]


def describe(plan: SchemaPlan) -> list[str]:
    """The lines ``migrate --check`` prints for people."""
    current = plan.current or "none (a new database)"
    lines = [f"database schema: {current}", f"code schema:     {plan.head} (hpcdet {__version__})"]
    if plan.too_new:
        lines.append(f"the database is NEWER than this hpcdet: it refuses to start on it "
                     f"(run the hpcdet that wrote {plan.current}, or restore the backup taken "
                     "before the upgrade; docs/admin/upgrades.md)")
    elif not plan.pending:
        lines.append("up to date: nothing to migrate")
    else:
        lines.append(f"an upgrade would apply {len(plan.pending)} migration(s):")
        lines.extend(f"  {m.revision}  {m.message}" for m in plan.pending)
    return lines
