"""Re-export: the pending-reason words live in :mod:`hpcdet.dispatcher.reasons`."""

from hpcdet.dispatcher.reasons import REASONS, reason_words

__all__ = ["REASONS", "reason_words"]
