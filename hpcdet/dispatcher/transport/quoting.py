"""The one function that turns an argv into the command line an SSH server runs.

An SSH ``exec`` request carries one string, which the login node's shell parses: there is
no argv over SSH. Every token is checked (:func:`~hpcdet.dispatcher.safety.check_safe`: no
newline, carriage return or NUL, which no quoting makes safe) and quoted with
:func:`shlex.quote`, so the remote process receives exactly ``argv``: ``;``, ``$(...)``,
backticks, spaces, quotes, globs and a leading ``-`` arrive as plain characters.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from hpcdet.dispatcher.safety import check_safe
from hpcdet.errors import ValidationError


def command_line(argv: Sequence[str]) -> str:
    """``argv`` as one POSIX shell command line that runs exactly ``argv``."""
    if not argv:
        raise ValidationError("an SSH command needs at least a program name")
    return " ".join(shlex.quote(check_safe(str(token), f"SSH command argument {index}"))
                    for index, token in enumerate(argv))
