"""Validate and render the user's ``pbs.pbsbatch_args``: extra ``qsub`` options.

Each list item is one qsub option with its value: ``-l mem=4gb``, ``-lmem=4gb``,
``-W depend=afterok:12.server``, ``-m abe``, ``-M me@example.org``. Options hpcdet sets or
that would change who the job runs as, where its output goes, its environment or what qsub
itself does are refused naming the option and the config path; so are the resources hpcdet
requests itself (``select``, ``place``, ``walltime``, ``ncpus``, ...) and the ``-W``
attributes it owns (``umask``, ``block``, ``sandbox``, ``group_list``, ...): the table's
owned lists (:data:`~hpcdet.dispatcher.pbs.qsub_options.QSUB`).

Values are restricted to a plain character set (letters, digits and ``_.:@/+=,%-``), so a
``#PBS`` line never needs quoting: qsub's directive parser and the shell agree on it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hpcdet.dispatcher import options as engine
from hpcdet.dispatcher.pbs.qsub_options import OWNED_ATTRIBUTES, OWNED_RESOURCES, QSUB
from hpcdet.errors import ConfigError

__all__ = ["ALLOWED_OPTIONS", "DEFAULT_PATH", "QsubArg", "check_args", "node_filter",
           "parse_qsub_args", "render_qsub_args", "split_cpus_per_rank",
           "without_gpu_options"]

DEFAULT_PATH = "<config>.pbs.pbsbatch_args"

# The only qsub options an experiment's or a pool's extra options may set (the others are
# hpcdet's, QSUB.owned, or not passed on).
ALLOWED_OPTIONS = frozenset("aclmMW")
_VALUE = re.compile(r"^[A-Za-z0-9_.:@/+=,%-]+$")
_ITEM = re.compile(r"^-([A-Za-z])\s*(.*)$", re.DOTALL)


@dataclass(frozen=True)
class QsubArg:
    """One user option: its letter and its value."""

    option: str
    value: str

    def render(self) -> str:
        """``#PBS -l mem=4gb``: values are plain (see the module docstring), never quoted."""
        return f"#PBS -{self.option} {self.value}"


def parse_qsub_args(args: Sequence[str], *, path: str = DEFAULT_PATH) -> list[QsubArg]:
    """Validate ``args``; return them split and deduplicated (first occurrence kept).

    Raises :class:`ConfigError` listing every bad item as ``<path>[i]: problem``.
    """
    parsed, errors = engine.collect_items(args, path, _parse_one)
    if errors:
        raise ConfigError(errors, title="invalid pbs.pbsbatch_args")
    return parsed


def render_qsub_args(args: Sequence[QsubArg]) -> str:
    """Parsed ``args`` as ``#PBS`` lines (no trailing newline)."""
    return "\n".join(arg.render() for arg in args)


def _parse_one(raw: object) -> tuple[str | None, QsubArg | None]:
    """``(problem, None)`` for a bad item, else ``(None, arg)``."""
    problem, raw = engine.item_text(raw)
    if problem:
        return problem, None
    match = _ITEM.match(raw.strip())
    if match is None:
        return f"must be one qsub option such as '-l mem=4gb': {raw!r}", None
    letter, value = match.group(1), match.group(2).strip()
    if (owned := QSUB.owned_problem(f"-{letter}", letter)) is not None:
        return owned, None
    if letter not in ALLOWED_OPTIONS:
        allowed = ", ".join(f"-{o}" for o in sorted(ALLOWED_OPTIONS))
        return f"option -{letter} is not one hpcdet passes on (allowed: {allowed})", None
    if not value or not _VALUE.match(value):
        return (f"option -{letter} needs a value of letters, digits and _.:@/+=,%- only: "
                f"{raw!r}"), None
    return _controlled_value(letter, value), QsubArg(letter, value)


def _controlled_value(letter: str, value: str) -> str | None:
    """Why a ``-l``/``-W`` value is refused, or None."""
    if letter not in "lW":
        return None
    refused = OWNED_RESOURCES if letter == "l" else OWNED_ATTRIBUTES
    for item in value.split(","):
        key = item.split("=", 1)[0].split(":", 1)[0].strip().lower()
        if letter == "W" and "=" not in item:
            continue  # the rest of a comma-separated attribute value (depend=a:1,b)
        if key in refused:
            what = "resource" if letter == "l" else "attribute"
            return f"option -{letter} {key}=... is controlled by hpcdet (a {what} it sets itself)"
    return None


# ---- the functions hpcdet.dispatcher.batch_args calls --------------------------------------


def check_args(args: Sequence[str], path: str) -> tuple[str, ...]:
    """``args`` after :func:`parse_qsub_args` found nothing wrong with them."""
    parse_qsub_args(args, path=path)
    return tuple(args)


def split_cpus_per_rank(args: Sequence[str], path: str) -> tuple[int, tuple[str, ...]]:
    """(1, ``args``): CPUs per rank are hpcdet's ``ncpus``, which no qsub option may set
    (``-l ncpus``/``select`` are refused), so every rank gets one."""
    return 1, check_args(args, path)


def without_gpu_options(args: Sequence[str], path: str) -> tuple[str, ...]:
    """``args`` unchanged: GPUs are asked for only in ``-l select``, which hpcdet writes
    (and no qsub option may set)."""
    return check_args(args, path)


def node_filter(args: Sequence[str]) -> tuple[set[str] | None, set[str]]:
    """(None, no nodes): no qsub option hpcdet passes on carves nodes out of a queue (PBS
    ties nodes to a queue with the node's ``queue`` attribute, not with job options)."""
    parse_qsub_args(args, path="pbsbatch_args")
    return None, set()
