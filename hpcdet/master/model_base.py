"""What every table of the master shares: the declarative base, its naming convention and
column types, and the time helpers. Its own module, so that the tables of another module
(:mod:`hpcdet.master.allocation_models`) need not import :mod:`hpcdet.master.models`,
which imports them to register them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, BigInteger, Integer, MetaData
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import DeclarativeBase

# Named constraints let Alembic address (and later drop) them the same way on both databases.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
JSONType = JSON().with_variant(postgresql.JSONB(), "postgresql")
# SQLite only auto-increments INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit key.
BigId = BigInteger().with_variant(Integer(), "sqlite")


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def as_utc(moment: dt.datetime) -> dt.datetime:
    """``moment`` as an aware UTC time (SQLite hands timestamps back without a zone)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def iso_time(moment: dt.datetime | None) -> str | None:
    """``moment`` as ISO 8601 in UTC, as answers and pages show times; None stays None."""
    return None if moment is None else as_utc(moment).isoformat()


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {dict[str, Any]: JSONType, list[Any]: JSONType}
