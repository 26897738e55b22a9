"""Checks and quoting for values that end up in a job script.

Shell quoting alone is not enough: a newline ends an ``#SBATCH`` comment line and whatever
follows runs as a shell command, and Slurm reads a directive only up to the end of its line.
So every value is first refused if it holds a newline, a carriage return or a NUL byte, and
only then quoted.
"""

from __future__ import annotations

import shlex

from hpcdet.errors import ValidationError

# The characters no quoting can make safe in a line-oriented script.
UNSAFE_CHARACTERS: dict[str, str] = {
    "\n": "a newline",
    "\r": "a carriage return",
    "\x00": "a NUL byte",
}


def check_safe(value: str, where: str) -> str:
    """Return ``value`` unchanged, or raise :class:`ValidationError` naming ``where``.

    ``where`` names the field for the user, e.g. ``"spec.environment['FOO']"``.
    """
    for char, description in UNSAFE_CHARACTERS.items():
        if char in value:
            raise ValidationError(
                f"{where} contains {description} ({char!r}), which cannot be written safely "
                f"into a job script: {value!r}"
            )
    return value


def shquote(value: object, where: str = "value") -> str:
    """Quote ``value`` for a POSIX shell after :func:`check_safe` (also a Jinja2 filter)."""
    return shlex.quote(check_safe(str(value), where))
