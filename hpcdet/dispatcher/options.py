"""One option engine for the batch commands' options: sbatch's and qsub's.

A scheduler describes its submit command with an :class:`OptionTable`: what each option is
called (``spell``), whether it takes a value (:class:`ArgKind`), and the options sorted by
purpose, one list per purpose:

* ``owned``: options hpcdet sets itself in a trial's job, refused in an experiment's or a
  pool's extra options (``slurm.sbatch_args``, ``pbs.pbsbatch_args``);
* ``refused``: options ``det sbatch``/``det qsub`` refuse (security: who the job runs as;
  features they do not support: arrays, interactive jobs, ...);
* ``cli_only``: options the ``det`` command handles itself, which never reach the master;
* ``master_handled``: options the master reads and replaces by its own.

The engine does what both schedulers do alike: it checks an item's text (a string, no
newline, carriage return or NUL), collects every bad item of a list into one error, reads a
bundle of short options as getopt does, merges settings from several sources, turns the
directive reader's errors into the user's, and checks each option against the table,
producing the same messages for both schedulers. The rules that really differ (Slurm's long
names and ``--gres=gpu``; PBS's ``-l``/``-W`` lists) stay in the scheduler's modules, which
are tables over this one. It imports no scheduler: ``slurm/`` and ``pbs/`` import it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from hpcdet.dispatcher.safety import UNSAFE_CHARACTERS
from hpcdet.errors import ValidationError
from hpcdet.runas import directives

__all__ = ["ArgKind", "CommandLine", "OptionTable", "Setting", "ShortBundle", "Word",
           "check_not_refused", "collect_items", "is_set", "item_text", "located",
           "merge_settings", "read_short_bundle", "setting_problem", "value_of"]

# One option as given: its key and its value (None for a flag).
Setting = tuple[str, "str | None"]
Parsed = TypeVar("Parsed")
# A problem with one item, or None; and the item parsed, or None.
ItemResult = tuple["str | None", "Parsed | None"]


def value_of(settings: Sequence[Setting], name: str) -> str | None:
    """The value of ``name`` (the last one set), or None."""
    found = [value for key, value in settings if key == name]
    return found[-1] if found else None


class ArgKind(enum.Enum):
    """Whether an option takes a value."""

    NONE = "flag"
    REQUIRED = "value"
    OPTIONAL = "optional value"


@dataclass(frozen=True)
class Word:
    """One argv word and where it came from, for error messages."""

    text: str
    where: str


@dataclass(frozen=True)
class CommandLine:
    """The options before the script, and the operands: the script and its arguments (or,
    for qsub, ``--`` and an executable with its arguments)."""

    settings: list[Setting]
    operands: list[str]
    # True: the operands followed "--" (qsub runs them as a command, not as a script).
    executable: bool = False


@dataclass(frozen=True)
class OptionTable:
    """One submit command's options, and what hpcdet does with them, by purpose."""

    command: str  # the scheduler's command: sbatch, qsub
    spell: Callable[[str], str]  # an option's key as the user writes it: --time, -l
    kinds: Mapping[str, ArgKind]  # every option the command has
    owned: Mapping[str, str]  # hpcdet sets them in a trial's job (reason)
    refused: Mapping[str, str]  # det <command> refuses them (reason)
    cli_only: frozenset[str]  # det <command> handles them itself
    master_handled: frozenset[str]  # the master reads them and replaces them by its own
    # How a [key, value] item sent to the master names its key, and the hint given with
    # an unknown key; what det <command> says of a CLI-only option (format fields:
    # {option}, {option_value}).
    key_noun: str
    unknown_hint: str
    cli_only_text: str
    # Whether an empty value counts as none for an option that needs one.
    empty_is_missing: bool = False

    def owned_problem(self, given: str, key: str) -> str | None:
        """Why an experiment or pool may not set option ``key`` (given as ``given``)."""
        reason = self.owned.get(key)
        if reason is None:
            return None
        spelled = self.spell(key)
        shown = given if given == spelled else f"{given} ({self.command}'s {spelled})"
        return f"option {shown} is controlled by hpcdet: {reason}"

    def refusal(self, key: str) -> str | None:
        """Why ``det <command>`` refuses option ``key``, as ``<option>: reason``."""
        reason = self.refused.get(key)
        return f"{self.spell(key)}: {reason}" if reason else None


# ---- one item of a list of extra options ---------------------------------------------------


def item_text(raw: object) -> tuple[str | None, str]:
    """``(problem, "")`` when ``raw`` is no string or holds a character no job script can
    carry (newline, carriage return, NUL); else ``(None, raw)``."""
    if not isinstance(raw, str):
        return f"must be a string, not {type(raw).__name__}", ""
    for char, description in UNSAFE_CHARACTERS.items():
        if char in raw:
            return f"contains {description} ({char!r}): {raw!r}", ""
    return None, raw


def collect_items(args: Sequence[Any], path: str,
                  parse_one: Callable[[object], ItemResult[Parsed]],
                  ) -> tuple[list[Parsed], list[str]]:
    """Every item parsed (first occurrences, in order) and every problem as
    ``<path>[i]: problem``: one error lists them all."""
    errors: list[str] = []
    parsed: list[Parsed] = []
    for index, raw in enumerate(args):
        problem, item = parse_one(raw)
        if problem:
            errors.append(f"{path}[{index}]: {problem}")
        elif item is not None:
            parsed.append(item)
    return list(dict.fromkeys(parsed)), errors


# ---- getopt --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShortBundle:
    """A bundle of short options (``-HQ``, ``-Ho x``, ``-hN name``) as getopt reads it."""

    flags: tuple[str, ...]  # letters that take no value (or an optional one), in order
    value_letter: str | None  # the letter that takes the rest as its value
    attached: str  # the rest of the word after it ("": the value is the next word)
    unknown: str | None  # the first letter that is no option (reading stopped there)


def read_short_bundle(letters: str, kind_of: Callable[[str], ArgKind | None]) -> ShortBundle:
    """Read ``letters`` (the word without its ``-``) as getopt does: flags, then at most
    one letter that needs a value and takes the rest of the word as it."""
    flags: list[str] = []
    for position, letter in enumerate(letters):
        kind = kind_of(letter)
        if kind is None:
            return ShortBundle(tuple(flags), None, "", letter)
        if kind is ArgKind.REQUIRED:
            return ShortBundle(tuple(flags), letter, letters[position + 1:], None)
        flags.append(letter)
    return ShortBundle(tuple(flags), None, "", None)


# ---- settings ------------------------------------------------------------------------------


def merge_settings(sources: Iterable[Iterable[Setting]],
                   keys: Callable[[Setting], Sequence[str]]) -> list[Setting]:
    """One setting per key, later sources (and later settings) winning, ordered by when
    each key was last set. ``keys(setting)`` is the setting's key, then the keys of the
    settings it replaces besides its own (options that set the same thing)."""
    merged: dict[str, Setting] = {}
    for source in sources:
        for setting in source:
            key, *replaced = keys(setting)
            for other in (key, *replaced):
                merged.pop(other, None)
            merged[key] = setting
    return list(merged.values())


def is_set(settings: Iterable[Setting], key: str) -> bool:
    """Whether option ``key`` is among ``settings``."""
    return any(name == key for name, _ in settings)


def check_not_refused(table: OptionTable, settings: Iterable[Setting],
                      refusal: Callable[[Setting], str | None]) -> None:
    """Raise :class:`ValidationError` listing every option ``refusal`` refuses (the
    scheduler's rule over ``table.refused``), each once."""
    problems = [p for setting in settings if (p := refusal(setting))]
    if problems:
        raise ValidationError(f"det {table.command} cannot honour "
                              + "; ".join(dict.fromkeys(problems)))


def setting_problem(table: OptionTable, item: Any,
                    refusal: Callable[[Setting], str | None],
                    value_problem: Callable[[str, str], str | None] | None = None,
                    cli_only: Callable[[str, str | None], bool] | None = None) -> str | None:
    """What is wrong with one ``[key, value]`` item the master was sent, or None: its
    shape, an unknown key, an option det handles itself or refuses, a value where none
    is taken (or none where one is needed), an unsafe character; then ``value_problem``."""
    if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str)
            or not isinstance(item[1], (str, type(None)))):
        noun = table.key_noun
        return f"must be [{noun}, value] with a string {noun} and a string or null value"
    key, value = item
    option = table.spell(key)
    kind = table.kinds.get(key)
    if kind is None:
        return f"unknown {table.command} option {option} ({table.unknown_hint})"
    if key in table.cli_only or (cli_only is not None and cli_only(key, value)):
        option_value = f"{option} {value or ''}".rstrip()
        return table.cli_only_text.format(option=option, option_value=option_value)
    if (reason := refusal((key, value))) is not None:
        return reason
    if kind is ArgKind.NONE and value is not None:
        return f"{option} takes no value"
    if kind is ArgKind.REQUIRED and (value is None or (table.empty_is_missing and not value)):
        return f"{option} needs a value"
    for char, description in UNSAFE_CHARACTERS.items():
        if value is not None and char in value:
            return f"{option}: the value contains {description} ({char!r})"
    return value_problem(key, value or "") if value_problem is not None else None


# ---- directives ----------------------------------------------------------------------------


@contextmanager
def located(where: str, *, line: bool = False) -> Iterator[None]:
    """Turn the directive reader's errors into :class:`ValidationError` naming ``where``
    (and, with ``line``, the script's line the reader names)."""
    try:
        yield
    except directives.DirectiveError as exc:
        here = f"{where} line {exc.line}" if line and exc.line else where
        raise ValidationError(f"{here}: {exc.reason}") from exc
