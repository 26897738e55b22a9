"""Pieces shared by the benchmark scripts."""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn


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


def bench_main(argv: Sequence[str] | None, *,
               parse_args: Callable[[Sequence[str] | None], argparse.Namespace],
               run: Callable[[argparse.Namespace], dict[str, Any]],
               render_table: Callable[[dict[str, Any]], str],
               reproduce_command: Callable[[argparse.Namespace], str],
               met_key: str = "target_met") -> int:
    """The usual ``main`` of a benchmark: the reproducing command first (stderr), the run
    (SIGTERM cleans up like Ctrl-C), then a table or ``--json``; 0 when its targets are met."""
    args = parse_args(argv)
    log(f"# reproduce: {reproduce_command(args)}")
    with terminate_as_interrupt():
        result = run(args)
    print(json.dumps(result, indent=2) if args.json else render_table(result))
    return 0 if result[met_key] else 1


def reproduce_with(script: str, args: argparse.Namespace, defaults: argparse.Namespace,
                   skip: Sequence[str] = ("json", "keep")) -> str:
    """``.venv/bin/python SCRIPT`` and the options that differ from their defaults (a flag
    that is on is given alone), as one shell-quoted line."""
    parts = [".venv/bin/python", script]
    for key, value in vars(args).items():
        if key not in skip and value != getattr(defaults, key):
            flag = "--" + key.replace("_", "-")
            parts += [flag] if value is True else [flag, str(value)]
    return shlex.join(parts)
