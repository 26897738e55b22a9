"""Why the master refuses a request, in the domain's words: no HTTP in them.

Services and views raise one of the kinds below, naming what went wrong; the HTTP edge
(:mod:`hpcdet.master.api.errors`) gives each kind its status, once, and answers in the
common error shape ``{"error": {"code", "message", "details"}, "status": N}``. The ``code``
is what clients match on (``bad_request``, ``not_found``, ``stale_run`` ...): each raise
names its own, so a kind may carry several codes.
"""

from __future__ import annotations

from collections.abc import Sequence


class DomainError(Exception):
    """A refusal: ``code`` for programs, ``message`` for people, ``details`` line by line."""

    def __init__(self, code: str, message: str, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.code, self.message, self.details = code, message, list(details)


class Invalid(DomainError):
    """The request itself is wrong (a bad value, a missing key, a bad config)."""


class Unauthenticated(DomainError):
    """Nobody is proven: the caller must sign in (again)."""


class Forbidden(DomainError):
    """The caller is known but may not do this."""


class NotFound(DomainError):
    """No such thing, or none the caller may see."""


class Conflict(DomainError):
    """The thing's current state does not allow it (running, archived, not empty...)."""


class Gone(DomainError):
    """The thing existed and has ended or been deleted for good."""


class TooLarge(DomainError):
    """The request carries more than the master takes."""


class Internal(DomainError):
    """The master itself is broken (a part it needs is missing): no fault of the caller."""


class Unsupported(DomainError):
    """The scheduler or the master cannot do this at all."""


class Unavailable(DomainError):
    """Something the master needs (the scheduler, MUNGE, a task's service) cannot answer
    now: try again later."""


class UpstreamFailed(DomainError):
    """A service the master stands in front of (a store, a task's service) refused or
    failed the request."""


class UpstreamTimeout(DomainError):
    """A service the master stands in front of did not answer in time."""
