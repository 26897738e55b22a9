"""Pieces shared by the benchmark scripts."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn


def log(message: str) -> None:
    """Progress goes to stderr so that ``--json`` output stays clean."""
    print(message, file=sys.stderr, flush=True)


def run_script(main: Callable[[], int]) -> NoReturn:
    """Exit with ``main()``'s status; on Ctrl-C (or SIGTERM, see below) say so and exit 130.

    ``main`` cleans up in its ``finally`` blocks before the interrupt reaches here.
    """
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("interrupted (cleaned up)")
        sys.exit(130)


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into KeyboardInterrupt so ``finally`` blocks run on both."""
    def raise_interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
