"""qsub's options, read the way qsub reads them (OpenPBS 23.06), for ``det qsub``.

qsub takes options from two places: the script's directives (``#PBS`` lines, or the prefix
``-C``/``PBS_DPREFIX`` names), read until the first executable line, and the command line
before the script. **The command line wins**: an option given on both is taken from the
command line (POSIX qsub, "Option Specification"; PBS Professional's Reference Guide).
qsub has no environment variables that set options (``PBS_DPREFIX`` only changes the
directive prefix; sites set defaults with the server's ``default_qsub_arguments``).

Options are single letters, parsed as getopt does: a value attached or as the next word
(``-Nname``, ``-N name``), flags bundled (``-hV``). Each option is reduced to
:data:`Setting` pairs ``(letter, value)``; lists are split into one setting per item so that
they merge item by item, as qsub merges them: ``-l walltime=1:00,mem=1gb`` is
``("l", "walltime=1:00")`` and ``("l", "mem=1gb")`` (a later ``-l walltime`` replaces only the
walltime), ``-W depend=..`` is keyed by its attribute and ``-v A,B=1`` by variable.

Pure functions of text: the CLI (which knows the user's script and environment) and the
master (which checks what the CLI sent) both use this table.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from hpcdet.dispatcher.tasks import Setting
from hpcdet.errors import ValidationError
from hpcdet.runas import directives

DEFAULT_PREFIX = "#PBS"
PREFIX_VARIABLE = "PBS_DPREFIX"


class Kind(enum.Enum):
    """Whether an option takes a value."""

    FLAG = "flag"
    VALUE = "value"


# Every option of OpenPBS 23.06's qsub, with whether it takes a value.
OPTIONS: Final = MappingProxyType({
    "a": Kind.VALUE, "A": Kind.VALUE, "c": Kind.VALUE, "C": Kind.VALUE, "e": Kind.VALUE,
    "f": Kind.FLAG, "h": Kind.FLAG, "I": Kind.FLAG, "j": Kind.VALUE, "J": Kind.VALUE,
    "k": Kind.VALUE, "l": Kind.VALUE, "m": Kind.VALUE, "M": Kind.VALUE, "N": Kind.VALUE,
    "o": Kind.VALUE, "p": Kind.VALUE, "P": Kind.VALUE, "q": Kind.VALUE, "r": Kind.VALUE,
    "R": Kind.VALUE, "S": Kind.VALUE, "u": Kind.VALUE, "v": Kind.VALUE, "V": Kind.FLAG,
    "W": Kind.VALUE, "X": Kind.FLAG, "z": Kind.FLAG, "G": Kind.FLAG,
})  # fmt: skip
# Options det qsub refuses, with the reason given to the user.
REFUSED: Final = MappingProxyType({
    "J": "job arrays are not supported: one task tracks one PBS job (submit one task per "
         "index, or use plain qsub)",
    "I": "interactive jobs are not supported: the master submits batch jobs (use plain "
         "qsub -I on a login node)",
    "X": "X11 forwarding needs an interactive job, which det qsub does not submit",
    "G": "GUI jobs need an interactive job, which det qsub does not submit",
    "u": "jobs run as the master's PBS user (or as you, in run-as-owner mode); they cannot "
         "be submitted as another user",
})  # fmt: skip
# -W attributes det qsub refuses (who runs the job, credentials) with the reason; matched
# without regard to case, as the PBS server matches attribute names.
REFUSED_ATTRIBUTES: Final = MappingProxyType({
    "group_list": "jobs run with the master's (or your) group; another cannot be chosen",
    "run_as": "a job cannot choose another user to run as",
    "user_list": "a job cannot choose another user to run as (it is -u's attribute)",
    "euser": "a job cannot choose another user to run as",
    "egroup": "jobs run with the master's (or your) group; another cannot be chosen",
    "job_owner": "a job cannot choose another owner",
    "pwd": "passwords are not passed through the master",
    "cred": "credentials are not passed through the master",
})  # fmt: skip
# Options det qsub handles itself; they never reach the master.
CLI_ONLY: Final = frozenset({"C", "V", "v", "z", "f"})
# -W attributes det qsub handles itself (block=true: wait for the job, as qsub does).
CLI_ATTRIBUTES: Final = frozenset({"block"})
# Options the master reads and replaces by its own (name, queue, account, files, shell);
# -k (keep files on the host) and -R (remove them) are moot: the wrapper writes the
# user's files directly and the master keeps its own copy.
MASTER_HANDLED: Final = frozenset({"N", "q", "A", "o", "e", "j", "S", "k", "R"})
# Options whose value is a comma-separated list merged item by item.
_LISTS: Final = frozenset({"l", "W", "v"})


@dataclass(frozen=True)
class Word:
    """One argv word and where it came from, for error messages."""

    text: str
    where: str


@dataclass(frozen=True)
class CommandLine:
    """The options, and the operands: the script, or ``--`` and an executable with args."""

    settings: list[Setting]
    operands: list[str]
    # True: the operands followed "--" (qsub runs them as a command, not as a script).
    executable: bool = False


def parse_words(words: Sequence[Word]) -> CommandLine:
    """Read options as qsub's getopt does: stop at the first word that is not an option
    (the script), or at ``--`` (an executable and its arguments follow)."""
    settings: list[Setting] = []
    index = 0
    while index < len(words):
        text = words[index].text
        if text == "--":
            return CommandLine(settings, [w.text for w in words[index + 1:]], executable=True)
        if not text.startswith("-") or text == "-":
            break
        index = _short_options(words, index, settings)
    return CommandLine(settings, [w.text for w in words[index:]])


def parse_command_line(argv: Sequence[str]) -> CommandLine:
    """The options and operands of ``det qsub``'s arguments."""
    return parse_words([Word(arg, "command line") for arg in argv])


def _short_options(words: Sequence[Word], index: int, settings: list[Setting]) -> int:
    word = words[index]
    if word.text.startswith("--"):
        raise ValidationError(f"{word.where}: qsub has no long options ({word.text}); "
                              "see man qsub")
    letters = word.text[1:]
    for position, letter in enumerate(letters):
        kind = OPTIONS.get(letter)
        if kind is None:
            raise ValidationError(f"{word.where}: unknown qsub option -{letter} (see man qsub)")
        if kind is Kind.FLAG:
            settings.append((letter, None))
            continue
        rest = letters[position + 1:]
        if rest:
            settings += split_setting(letter, rest, word.where)
            return index + 1
        if index + 1 >= len(words):
            raise ValidationError(f"{word.where}: option -{letter} needs a value")
        settings += split_setting(letter, words[index + 1].text, word.where)
        return index + 2
    return index + 1


def split_setting(letter: str, value: str, where: str) -> list[Setting]:
    """One option as settings: list options give one setting per comma-separated item."""
    if letter not in _LISTS:
        return [(letter, value)]
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        raise ValidationError(f"{where}: option -{letter} needs a value")
    if letter == "v":
        return [(letter, item) for item in items]
    for item in items:
        if "=" not in item or not item.split("=", 1)[0]:
            noun = "resource" if letter == "l" else "attribute"
            raise ValidationError(f"{where}: -{letter} {item}: expected {noun}=value")
    return [(letter, item) for item in items]


def merge_key(setting: Setting) -> str:
    """What a later setting replaces: the option, or the option and its list item's name."""
    letter, value = setting
    if letter in _LISTS and value is not None:
        return f"{letter}:{value.split('=', 1)[0]}"
    return letter


def merge(*sources: Iterable[Setting]) -> list[Setting]:
    """One setting per key, later sources winning (the command line after the directives);
    ordered by when each key was last set."""
    merged: dict[str, Setting] = {}
    for source in sources:
        for setting in source:
            key = merge_key(setting)
            merged.pop(key, None)
            merged[key] = setting
    return list(merged.values())


# ---- #PBS directives -----------------------------------------------------------------------


def directive_prefix(command_line: Sequence[Setting], environ_prefix: str | None) -> str:
    """``-C`` on the command line, else ``PBS_DPREFIX``, else ``#PBS`` ("" : no directives)."""
    given = [value for letter, value in command_line if letter == "C"]
    if given:
        return given[-1] or ""
    return DEFAULT_PREFIX if environ_prefix is None else environ_prefix


def script_words(script: str, prefix: str = DEFAULT_PREFIX,
                 where: str = "script") -> list[Word]:
    """The words of the directive lines before the first executable line, as qsub reads
    them (:mod:`hpcdet.runas.directives`, the reader the run-as helper shares): leading
    blanks before the prefix are allowed and nothing need follow it, comments, ``:`` and
    ``#!`` lines are skipped, a line ending in a backslash continues on the next one, and
    each directive is split by qsub's ``make_argv`` (quotes group, a backslash escapes; a
    ``#`` is an ordinary character, so a trailing comment is a word qsub refuses)."""
    try:
        return [Word(word, f"{where} line {line}")
                for line, text in directives.qsub_directives(script, prefix)
                for word in directives.qsub_line_words(text, line)]
    except directives.DirectiveError as exc:
        here = f"{where} line {exc.line}" if exc.line else where
        raise ValidationError(f"{here}: {exc.reason}") from exc


def directive_words(text: str, where: str) -> list[str]:
    """Split one directive's options as qsub's ``make_argv`` does."""
    try:
        return directives.qsub_line_words(text)
    except directives.DirectiveError as exc:
        raise ValidationError(f"{where}: {exc.reason}") from exc


# ---- what det qsub does with each option (docs/qsub.md) -----------------------------------


def refusal(setting: Setting) -> str | None:
    """Why det qsub refuses ``setting``, as ``-X: reason``; None if it does not."""
    letter, value = setting
    reason = REFUSED.get(letter)
    if reason:
        return f"-{letter}: {reason}"
    if letter == "W" and value is not None:
        attribute = value.split("=", 1)[0].strip()
        reason = REFUSED_ATTRIBUTES.get(attribute.lower())
        if reason:
            return f"-W {attribute}: {reason}"
    if letter == "q" and value is not None and "@" in value:
        return f"-q {value}: the master submits to its own server only (give a queue)"
    return None


def identity_settings(script: str) -> list[Setting]:
    """The settings of ``script``'s ``#PBS`` directives that would change who the job runs
    as (``-u``; ``-W User_List=``, ``group_list=``... one setting per attribute), read as qsub
    reads them (:mod:`hpcdet.runas.directives`); none where qsub would refuse them outright."""
    try:
        settings = directives.qsub_settings(script)
        attributes = [name for letter, value in settings if letter == "W" and value
                      for name in directives.qsub_attribute_names(value)]
    except directives.DirectiveError:
        return []
    return [*(s for s in settings if s[0] in directives.QSUB_IDENTITY),
            *(("W", f"{name}=") for name in attributes
              if name.lower() in directives.QSUB_IDENTITY_ATTRIBUTES)]


def check_not_refused(settings: Iterable[Setting]) -> None:
    """Raise :class:`ValidationError` listing every refused option in ``settings``."""
    problems = [p for setting in settings if (p := refusal(setting))]
    if problems:
        raise ValidationError("det qsub cannot honour " + "; ".join(dict.fromkeys(problems)))


def render_setting(setting: Setting) -> list[str]:
    """A setting as qsub argv words: ``["-l", "walltime=1:00"]`` or ``["-h"]``."""
    letter, value = setting
    return [f"-{letter}"] if value is None else [f"-{letter}", value]


def is_set(settings: Iterable[Setting], letter: str) -> bool:
    return any(key == letter for key, _ in settings)


def attribute(settings: Iterable[Setting], name: str) -> str | None:
    """The value of ``-W name=value`` (the last one), or None."""
    found = [value.split("=", 1)[1] for key, value in settings
             if key == "W" and value is not None and value.split("=", 1)[0] == name]
    return found[-1] if found else None
