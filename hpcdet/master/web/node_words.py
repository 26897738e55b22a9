"""A node's scheduler state in words for ``/cluster/nodes``.

Slurm's ``StateLong`` (``idle``, ``mixed``, ``down*``, ``drained``, ...; PBS's states are
mapped onto these words by its backend) reads as what it means to a researcher: ``down*`` is
"down (not responding)". The exact state stays on hover.
"""

from __future__ import annotations

# The state without its suffixes, in words (an unknown one reads as itself).
_BASE_WORDS = {
    "idle": "idle", "mixed": "partly in use", "mix": "partly in use",
    "allocated": "fully in use", "alloc": "fully in use",
    "completing": "finishing jobs", "comp": "finishing jobs",
    "down": "down", "drained": "drained", "draining": "draining (finishing its jobs)",
    "drain": "drained", "fail": "failing", "failing": "failing",
    "reserved": "reserved", "resv": "reserved", "maint": "in maintenance",
    "planned": "planned for a job", "future": "not yet in service",
    "inval": "misconfigured", "invalid": "misconfigured", "unknown": "state unknown",
    "offline": "offline", "reboot_issued": "rebooting", "reboot_requested": "reboot requested",
}
# What Slurm's suffixes add (``idle~``: powered off, ``down*``: not responding, ...).
_SUFFIX_WORDS = {
    "*": "not responding", "~": "powered off", "#": "powering up", "!": "powering down soon",
    "%": "powering down", "$": "in a maintenance reservation", "@": "reboot pending",
    "^": "rebooting", "-": "planned for a job", "+": "in several states",
}


def node_state_words(state: str) -> str:
    """``down*`` -> "down (not responding)", ``mixed~`` -> "partly in use (powered off)";
    an unknown state reads as itself, with its suffixes in words."""
    raw = state.strip()
    base = raw.rstrip("".join(_SUFFIX_WORDS))
    notes = [_SUFFIX_WORDS[mark] for mark in dict.fromkeys(raw[len(base):])]
    words = _BASE_WORDS.get(base.lower(), base.lower() or "state unknown")
    return f"{words} ({', '.join(notes)})" if notes else words
