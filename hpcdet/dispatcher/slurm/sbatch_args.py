"""Validate and render the user's ``slurm.sbatch_args``.

Each list item is one sbatch option with its value, in any of the forms ``--mem=4G``,
``--time 10``, ``-t 10``, ``-t10`` or a bare ``--exclusive``. Values are taken literally
(hpcdet quotes them; do not add quotes of your own). Options hpcdet sets itself are
refused, matched as Determined does: by prefix on the option name, so the abbreviation
``--part`` is refused like ``--partition``, and any ``--gres`` asking for ``gpu``.

Options that would change who the job runs as (``--uid``, ``--gid``), where its output
goes or what its environment is (``--output``, ``--error``, ``--chdir``, ``--export``), or
hpcdet's own bookkeeping (``--comment``, ``--job-name``, ``--array``, ``--clusters``,
``--parsable``, ``--wait``, ...) are refused in every spelling sbatch accepts: each item is
read as sbatch's getopt reads it (``--uid 0``, ``--uid=0``, ``--ui=0``, ``-o x``, ``-ox``,
a bundle such as ``-Ho x``), and every option it sets is checked by its canonical name
against the table's owned list (:data:`~hpcdet.dispatcher.slurm.sbatch_options.SBATCH`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hpcdet.dispatcher import options as engine
from hpcdet.dispatcher.render import directive_quote
from hpcdet.dispatcher.slurm.sbatch_options import (
    BY_NAME,
    BY_SHORT,
    CONTROLLED_OPTIONS,
    OPTIONS,
    OWNED_BY_HPCDET,
    SBATCH,
)
from hpcdet.errors import ConfigError
from hpcdet.hostlist import expand_nodelist

__all__ = ["CONTROLLED_OPTIONS", "DEFAULT_PATH", "GPU_SCOPED_OPTIONS", "OWNED_BY_HPCDET",
           "SbatchArg", "check_args", "node_filter", "parse_sbatch_args", "render_parsed",
           "render_sbatch_args", "split_cpus_per_rank", "without_gpu_options"]

DEFAULT_PATH = "<config>.slurm.sbatch_args"

_CONTROLLED_TEXT = ", ".join([*CONTROLLED_OPTIONS, *(
    f"--{name}" for name in sorted(OWNED_BY_HPCDET) if f"--{name}" not in CONTROLLED_OPTIONS
)]) + ", --gres=gpu..."

_LONG = re.compile(r"^(--[A-Za-z0-9][A-Za-z0-9-]*)(?:(?:=|\s+)(.*))?$", re.DOTALL)
_SHORT = re.compile(r"^(-[A-Za-z0-9])\s*(.*)$", re.DOTALL)


@dataclass(frozen=True)
class SbatchArg:
    """One user option, split into its name and its (unquoted) value."""

    option: str
    value: str | None = None

    def render(self, prefix: str = "#SBATCH") -> str:
        """``#SBATCH --mem=4G`` / ``#SBATCH -t 10`` / ``#SBATCH --exclusive``."""
        if self.value is None:
            return f"{prefix} {self.option}"
        separator = "=" if self.option.startswith("--") else " "
        return f"{prefix} {self.option}{separator}{directive_quote(self.value, self.option)}"


def parse_sbatch_args(args: Sequence[str], *, path: str = DEFAULT_PATH) -> list[SbatchArg]:
    """Validate ``args``; return them split and deduplicated (first occurrence kept).

    Raises :class:`ConfigError` listing every bad item as ``<path>[i]: problem``.
    """
    parsed, errors = engine.collect_items(args, path, _parse_one)
    if any("controlled by hpcdet" in error for error in errors):
        errors.append(f"{path}: hpcdet sets these options itself: {_CONTROLLED_TEXT}")
    if errors:
        raise ConfigError(errors, title="invalid slurm.sbatch_args")
    return parsed


def render_sbatch_args(
    args: Sequence[str], *, prefix: str = "#SBATCH", path: str = DEFAULT_PATH
) -> str:
    """Validate ``args`` and render them as directive lines (no trailing newline)."""
    return render_parsed(parse_sbatch_args(args, path=path), prefix=prefix)


def render_parsed(args: Iterable[SbatchArg], *, prefix: str = "#SBATCH") -> str:
    """Already parsed ``args`` as directive lines (no trailing newline)."""
    return "\n".join(arg.render(prefix) for arg in args)


def _parse_one(raw: object) -> tuple[str | None, SbatchArg | None]:
    """``(problem, None)`` for a bad item, else ``(None, arg)``."""
    problem, raw = engine.item_text(raw)
    if problem:
        return problem, None
    text = raw.strip()
    if not text:
        return "must not be empty", None
    if not text.startswith("-"):
        return f"must be an sbatch option starting with '-': {raw!r}", None
    arg = _split(text)
    if arg is None:
        return f"is not an sbatch option: {raw!r}", None
    return _controlled(arg), arg


def _split(text: str) -> SbatchArg | None:
    """Split ``--opt=value`` / ``--opt value`` / ``-X value`` / ``-Xvalue`` / ``--flag``."""
    match = _LONG.match(text) or _SHORT.match(text)
    if match is None:
        return None
    value = match.group(2)
    return SbatchArg(match.group(1), value.strip() if value else None)


def _controlled(arg: SbatchArg) -> str | None:
    """Why hpcdet refuses ``arg``, or None if the user may set it."""
    name = arg.option
    for option in CONTROLLED_OPTIONS:
        if option == name or (name.startswith("--") and option.startswith(name)):
            shown = name if option == name else f"{name} (an abbreviation of {option})"
            return f"option {shown} is controlled by hpcdet"
    if name.startswith("--gr") and "--gres".startswith(name) and _asks_for_gpus(arg.value):
        return f"option {name}={arg.value} is controlled by hpcdet (GPUs follow the slots)"
    for given, canonical in _canonical_names(arg):
        if (problem := SBATCH.owned_problem(given, canonical)) is not None:
            return problem
    return None


def _canonical_names(arg: SbatchArg) -> list[tuple[str, str]]:
    """``(as given, long name)`` of every option ``arg`` sets, read as sbatch's getopt does.

    A long name is matched exactly or as the unique prefix of one (an ambiguous prefix
    yields every candidate, so none slips through); short letters are read as a bundle:
    flags, then at most one letter that takes the rest as its value.
    """
    if arg.option.startswith("--"):
        name = arg.option[2:]
        exact = BY_NAME.get(name)
        found = [exact] if exact else [o for o in OPTIONS if o.name.startswith(name)]
        return [(arg.option, option.name) for option in found]
    bundle = engine.read_short_bundle(arg.option[1:] + (arg.value or ""),
                                      _short_kind)
    letters = [*bundle.flags, *([bundle.value_letter] if bundle.value_letter else [])]
    return [(f"-{letter}", BY_SHORT[letter].name) for letter in letters]


def _short_kind(letter: str) -> engine.ArgKind | None:
    option = BY_SHORT.get(letter)
    return option.kind if option is not None else None


def _asks_for_gpus(value: str | None) -> bool:
    """True if a ``--gres`` value names the ``gpu`` resource, e.g. ``gpu:a100:2,nvme:1``."""
    items = (value or "").split(",")
    return any(item.split(":")[0].removeprefix("gres/") == "gpu" for item in items)


# ---- the functions hpcdet.dispatcher.batch_args calls --------------------------------------


def check_args(args: Sequence[str], path: str) -> tuple[str, ...]:
    """``args`` after :func:`parse_sbatch_args` found nothing wrong with them."""
    parse_sbatch_args(args, path=path)
    return tuple(args)


def split_cpus_per_rank(args: Sequence[str], path: str) -> tuple[int, tuple[str, ...]]:
    """The CPUs per rank a user's ``--cpus-per-task``/``-c`` asks for (the last one wins, as
    in sbatch), and the other arguments. hpcdet sizes the allocation's one task per node
    from it (ranks per node times CPUs per rank) and gives each rank that many."""
    cpus, rest = 1, []
    for arg in args:
        parsed = parse_sbatch_args([arg], path=path)[0]
        if parsed.option in ("--cpus-per-task", "-c"):
            value = parsed.value
            if value is None or not value.isdigit() or int(value) < 1:
                raise ConfigError([f"{path}: {arg!r} needs a positive number of CPUs"])
            cpus = int(value)
        else:
            rest.append(arg)
    return cpus, tuple(rest)


# sbatch options that only mean something for a job with GPUs: sbatch refuses some of them
# in a job that asks for none ("Requested mem_per_tres=gres:gpu:... but did not request any
# GPU"), and hpcdet leaves out its --cpus-per-task beside --cpus-per-gpu.
GPU_SCOPED_OPTIONS = frozenset({
    "cpus-per-gpu", "mem-per-gpu", "gpus-per-node", "gpus-per-socket", "gpus-per-task",
    "gpu-bind", "gpu-freq", "ntasks-per-gpu"})


def without_gpu_options(args: Sequence[str], path: str) -> tuple[str, ...]:
    """``args`` less the options that size or place GPUs (:data:`GPU_SCOPED_OPTIONS`, a
    ``--gres`` naming ``gpu``): a pool's defaults, left out of a CPU-only trial's job."""
    kept = []
    for arg in args:
        parsed = parse_sbatch_args([arg], path=path)[0]
        names = {canonical for _given, canonical in _canonical_names(parsed)}
        if names & GPU_SCOPED_OPTIONS or ("gres" in names and _asks_for_gpus(parsed.value)):
            continue
        kept.append(arg)
    return tuple(kept)


def node_filter(args: Sequence[str]) -> tuple[set[str] | None, set[str]]:
    """The nodes a pool's ``--nodelist``/``-w`` keep (None: all) and ``--exclude``/``-x`` drop.

    (Carve a pool with ``--exclude``: Slurm gives a job *every* node of ``--nodelist``.)
    """
    keep: set[str] | None = None
    drop: set[str] = set()
    for arg in parse_sbatch_args(args, path="sbatch_args"):
        hosts = _hostlist(arg.value)
        if arg.option in ("--nodelist", "-w") and hosts is not None:
            keep = hosts if keep is None else keep | hosts
        elif arg.option in ("--exclude", "-x") and hosts is not None:
            drop |= hosts
    return keep, drop


def _hostlist(value: str | None) -> set[str] | None:
    """The hosts of a hostlist value; None for a file name or something unreadable."""
    if not value or "/" in value:
        return None
    try:
        return set(expand_nodelist(value))
    except ValueError:
        return None
