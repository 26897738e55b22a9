"""The failure line of ``det trial describe`` and ``det task describe``, from the master's
``failure`` object (hpcdet.master.reports.failure classifies; the CLI only words it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def failure_line(t: Mapping[str, Any]) -> str:
    """``failed: <cause> — <last error line>`` and a newline; "" for a trial that did not
    fail (the master's ``failure`` object, from the classifier the web pages show)."""
    failure = t.get("failure")
    if not isinstance(failure, Mapping):
        return ""
    last = failure.get("last_error_line")
    tail = f" — {last.get('text')}" if isinstance(last, Mapping) and last.get("text") else ""
    return f"failed: {failure.get('words')}{tail}\n"
