"""How long a test waits before calling something hung.

A guard against a hang, never a time limit: the suite's tests have no timing assertions.
On a busy CI host the niced unit tier's subprocesses (torch ranks, a Node.js server, a
fresh interpreter importing hpcdet) have taken minutes to start: CPU work there ran at a
third of this machine's speed and a nice-10 process gets a small share of that. A test
that waits for a subprocess, a server or a rank to get somewhere waits up to
``HANG_GUARD_S``; a test whose subject is a timeout keeps its own short one.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

HANG_GUARD_S = float(os.environ.get("HPCDET_TEST_HANG_GUARD_S", "900"))


def wait_until(condition: Callable[[], object], what: str = "the condition") -> None:
    """Poll ``condition`` every 50 ms until it is true; AssertionError naming ``what`` if
    it is not within ``HANG_GUARD_S``."""
    deadline = time.monotonic() + HANG_GUARD_S
    pause = threading.Event()
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen in {HANG_GUARD_S:.0f} s")
        pause.wait(0.05)
