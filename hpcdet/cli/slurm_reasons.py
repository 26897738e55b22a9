"""A job's pending reason in words, for ``det``'s tables: :mod:`hpcdet.dispatcher.reasons`,
imported on first use (``hpcdet.dispatcher`` costs ~15 ms of a command's start, and most
commands show no pending reason)."""

from __future__ import annotations


def reason_words(reason: str | None) -> str | None:
    """See :func:`hpcdet.dispatcher.reasons.reason_words`."""
    if not reason:
        return None
    from hpcdet.dispatcher.reasons import reason_words as words

    return words(reason)
