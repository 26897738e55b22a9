"""What the launcher commands (``torch_distributed``, ``wrap_rank``) share as programs."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def command_args(argv: Sequence[str] | None, usage: str | None) -> list[str] | None:
    """The command's arguments (``sys.argv``'s by default); None once ``usage`` is
    printed for ``-h``/``--help``, when the command has nothing more to do."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["-h"], ["--help"]):
        print(usage)
        return None
    return args
