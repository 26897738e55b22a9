"""The HTTP status of each kind of refusal (:mod:`hpcdet.master.errors`), in one table, and
the common error shape ``{"error": {"code", "message", "details"}, "status": N}``.

The API's error handlers (:mod:`.errors`), the web pages and the proxy all answer a
refusal through these; this module needs neither Flask nor the views, so any of them can
import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hpcdet.master.errors import (
    Conflict,
    DomainError,
    Forbidden,
    Gone,
    Internal,
    Invalid,
    NotFound,
    TooLarge,
    Unauthenticated,
    Unavailable,
    Unsupported,
    UpstreamFailed,
    UpstreamTimeout,
)

HTTP_STATUS: dict[type[DomainError], int] = {
    Invalid: 400, Unauthenticated: 401, Forbidden: 403, NotFound: 404, Conflict: 409,
    Gone: 410, TooLarge: 413, Internal: 500, Unsupported: 501, UpstreamFailed: 502,
    Unavailable: 503, UpstreamTimeout: 504,
}


def http_status(refusal: DomainError) -> int:
    """The HTTP status ``refusal``'s kind answers with (500 for a kind the table lacks)."""
    for kind in type(refusal).__mro__:
        if kind in HTTP_STATUS:
            return HTTP_STATUS[kind]
    return 500


def error_body(status: int, code: str, message: str, details: Sequence[str] = ()) -> Any:
    """The common error shape."""
    return {"error": {"code": code, "message": message, "details": list(details)},
            "status": status}


def refusal_body(refusal: DomainError) -> Any:
    """``refusal`` in the common error shape."""
    return error_body(http_status(refusal), refusal.code, refusal.message, refusal.details)
