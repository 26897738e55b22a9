"""Helpers shared by the API views: sessions, lookups, request bodies."""

from __future__ import annotations

from typing import Any, TypeVar

from flask import current_app, g, request
from sqlalchemy.orm import Session

from hpcdet.master.errors import Invalid, NotFound
from hpcdet.master.settings.core import MasterSettings
from hpcdet.safe_yaml import (
    MAX_DEPTH,
    check_depth,
    find_lone_surrogate,
    find_non_finite,
    find_nul,
)

M = TypeVar("M")


def db() -> Session:
    """The request's session; committed (or rolled back) at teardown by the app."""
    if "db_session" not in g:
        g.db_session = current_app.config["HPCDET_SESSION_FACTORY"]()
    session: Session = g.db_session
    return session


def settings() -> MasterSettings:
    value: MasterSettings = current_app.config["HPCDET_SETTINGS"]
    return value


def with_reason_words(row: dict[str, Any], reason_key: str, words_key: str) -> dict[str, Any]:
    """``row`` with ``words_key`` set to its ``reason_key`` (a pending reason) in words, by
    this master's scheduler: ``det`` and the pages show them without knowing the scheduler."""
    row[words_key] = settings().resource_manager.scheduler.reason_words(row.get(reason_key))
    return row


def get_or_404(model: type[M], key: Any, what: str) -> M:
    obj = db().get(model, key)
    if obj is None:
        raise NotFound("not_found", f"{what} {key} not found")
    return obj


def json_body() -> dict[str, Any]:
    """The request's JSON object, or 400 naming what is wrong (also when it nests more
    than :data:`~hpcdet.safe_yaml.MAX_DEPTH` levels deep, which would exhaust recursion)."""
    try:
        body = request.get_json(silent=True)
    except RecursionError:
        body = None
        deep = True
    else:
        deep = not check_depth(body)
    if deep:
        raise Invalid("bad_request",
                      f"the request body nests more than {MAX_DEPTH} levels deep")
    if not isinstance(body, dict):
        raise Invalid("bad_request", "the request body must be a JSON object")
    where = find_nul(body)
    if where is not None:
        raise Invalid("bad_request", f"the request body's {where}: contains a NUL "
                      "character (\\u0000)")
    where = find_lone_surrogate(body)
    if where is not None:
        raise Invalid("bad_request", f"the request body's {where or 'value'}: contains "
                      "half of a UTF-16 surrogate pair (\\ud800-\\udfff alone), which is "
                      "not text")
    where = find_non_finite(body)
    if where is not None:
        raise Invalid("bad_request", f"the request body's {where or 'value'}: NaN and "
                      "Infinity are not JSON numbers")
    return body


def int_arg(name: str, default: int, *, lo: int = 0, hi: int = 10**9) -> int:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise Invalid("bad_request", f"query parameter {name}: not an integer") from None
    if not lo <= value <= hi:
        raise Invalid("bad_request", f"query parameter {name}: must be {lo}..{hi}")
    return value
