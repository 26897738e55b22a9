"""Why a job waits, in words, whichever scheduler said it.

The master, the web pages and ``det`` show a pending reason as the scheduler gave it and in
words. Slurm gives codes (``Resources``, ``Priority``, ...: :mod:`.slurm.reasons`); PBS gives
a sentence in the job's ``comment`` (``Not Running: Insufficient amount of resource: ncpus``),
which is already words and is shown as it is.
"""

from __future__ import annotations

from hpcdet.dispatcher.slurm import reasons as _slurm

# Slurm's codes and their words (the web pages list them in a legend).
REASONS = _slurm.REASONS


def reason_words(reason: str | None) -> str | None:
    """``"waiting for free resources (Resources)"`` for a Slurm code; anything else (a PBS
    comment, an unknown code) as it is; None for no reason."""
    return _slurm.reason_words(reason)
