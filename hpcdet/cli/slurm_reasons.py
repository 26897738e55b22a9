"""Re-export: the pending-reason words live in :mod:`hpcdet.dispatcher.slurm.reasons`."""

from hpcdet.dispatcher.slurm.reasons import REASONS, reason_words

__all__ = ["REASONS", "reason_words"]
