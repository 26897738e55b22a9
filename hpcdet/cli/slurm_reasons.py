"""Re-export: the pending-reason words live in :mod:`hpcdet.dispatcher.slurm_reasons`."""

from hpcdet.dispatcher.slurm_reasons import REASONS, reason_words

__all__ = ["REASONS", "reason_words"]
