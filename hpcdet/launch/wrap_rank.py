"""``python3 -m hpcdet.launch.wrap_rank [--no-redirect-stdio] RANK [--] SCRIPT...``.

hpcdet's twin of Determined's ``determined.launch.wrap_rank``, which a launcher script
puts in front of each worker it starts (``core_api/4_distributed.py``) so that every
line the worker prints carries its rank. ``RANK`` is a number, or a comma-separated list
of environment variables tried in order (``RANK,OMPI_COMM_WORLD_RANK``).

In hpcdet, ``srun --label`` (or the harness, under ``mpiexec``) already puts ``<rank>: ``
in front of every line of a rank. So when ``RANK`` is this process's own rank (``$RANK``,
which the harness exports), the command simply replaces this process (``exec``): same
pid, same signals, same exit code, already labelled. For another rank (a launcher that
starts several workers per hpcdet rank) each line is prefixed with ``[rank=N] ``, as
Determined does, and the command's exit code is returned. ``--no-redirect-stdio`` is
accepted for Determined's sake; output always goes to this process's stdout/stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence

from hpcdet.harness.rank_labels import copy_lines
from hpcdet.launch._command import command_args

USAGE = "python3 -m hpcdet.launch.wrap_rank [--no-redirect-stdio] RANK [--] SCRIPT..."
EXIT_USAGE = 2
EXIT_NOT_FOUND = 127


class WrapRankError(ValueError):
    """The arguments name no rank or no command."""


def parse_args(argv: Sequence[str], environ: Mapping[str, str]) -> tuple[int, list[str]]:
    """(rank, command) from the arguments; raises :class:`WrapRankError`."""
    args = list(argv)
    while args[:1] == ["--no-redirect-stdio"]:
        args = args[1:]
    if not args:
        raise WrapRankError(f"no RANK given; usage: {USAGE}")
    rank_arg, command = args[0], args[1:]
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise WrapRankError(f"no command to run after RANK {rank_arg}; usage: {USAGE}")
    return _rank(rank_arg, environ), command


def _rank(value: str, environ: Mapping[str, str]) -> int:
    if value.isdigit():
        return int(value)
    for name in value.split(","):
        if name in environ and environ[name].isdigit():
            return int(environ[name])
    raise WrapRankError(f"rank environment variable is set to {value}, but it is not in "
                        "os.environ (or not a number)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command as the given rank; returns its exit code (or execs it)."""
    args = command_args(argv, __doc__)
    if args is None:
        return 0
    try:
        rank, command = parse_args(args, os.environ)
    except WrapRankError as exc:
        print(f"hpcdet wrap_rank: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if os.environ.get("RANK") == str(rank):
        return _exec(command)
    return run_labelled(command, rank)


def _exec(command: list[str]) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"hpcdet wrap_rank: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
    return EXIT_NOT_FOUND


def run_labelled(command: list[str], rank: int) -> int:
    """Run ``command`` with ``[rank=N] `` before each line of its output."""
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        print(f"hpcdet wrap_rank: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        return EXIT_NOT_FOUND
    assert child.stdout is not None and child.stderr is not None
    sys.stdout.flush()
    sys.stderr.flush()
    prefix = f"[rank={rank}] ".encode()
    copies = [threading.Thread(target=copy_lines, args=(src.fileno(), fd, prefix), daemon=True)
              for src, fd in ((child.stdout, 1), (child.stderr, 2))]
    for copy in copies:
        copy.start()
    code = child.wait()
    for copy in copies:
        copy.join()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
