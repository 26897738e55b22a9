"""PBS's pending reasons in a few words, for people to read.

PBS says why a job waits in a sentence in its ``comment`` (``Not Running: Insufficient
amount of resource: ncpus (R: 64 A: 4)``); a known phrase in it gives the words, anything
else is shown as PBS wrote it.
"""

from __future__ import annotations

from hpcdet.dispatcher.queue import OWNER

# Phrases of PBS's "Not Running: ..." comments and their words (the pages list them).
REASONS = {
    "Insufficient amount of resource": "waiting for free resources",
    "Not enough free nodes available": "waiting for free nodes",
    # Per-user limits first: "User has reached queue workq running job limit."
    "User has reached": f"{OWNER} jobs have reached a queue or server limit",
    "Group has reached": "its group's jobs have reached a queue or server limit",
    "Project has reached": "its project's jobs have reached a queue or server limit",
    "would exceed": "over a queue or server limit",
    "Queue not started": "its queue is stopped",
    "held": "held",
    "Job would conflict with reservation": "a reservation holds the nodes",
    "can never run": "asks for more than the queue has: it can never run",
    "Draining system": "the system is draining for a dedicated time or reservation",
}


def reason_words(reason: str | None) -> str | None:
    """A PBS ``comment`` ("Not Running: Insufficient amount of resource: ncpus ...") in
    words a user understands; the comment as is when no phrase matches."""
    if not reason:
        return reason
    for phrase, words in REASONS.items():
        if phrase.lower() in reason.lower():
            detail = reason.split(":", 2)[2].strip() if reason.count(":") >= 2 else ""
            return f"{words} ({detail})" if detail and "resource" in phrase else words
    return reason
