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
master (which checks what the CLI sent) both use this table. What hpcdet does with each
option, one list per purpose, is :data:`QSUB`, a table over :mod:`hpcdet.dispatcher.options`,
the engine sbatch's table shares; the ``-l``/``-W`` item rules are PBS's own, here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import MappingProxyType
from typing import Final

from hpcdet.dispatcher import options as engine
from hpcdet.dispatcher.options import ArgKind, CommandLine, Setting, Word, is_set
from hpcdet.errors import ValidationError
from hpcdet.runas import directives

__all__ = ["CLI_ATTRIBUTES", "CLI_ONLY", "DEFAULT_PREFIX", "MASTER_HANDLED", "OPTIONS",
           "OWNED_ATTRIBUTES", "OWNED_RESOURCES", "PREFIX_VARIABLE", "QSUB", "REFUSED",
           "REFUSED_ATTRIBUTES", "ArgKind", "CommandLine", "Setting", "Word", "attribute",
           "check_not_refused", "directive_prefix", "directive_words", "identity_settings",
           "is_set", "merge", "merge_key", "parse_command_line", "parse_words", "refusal",
           "render_setting", "script_words", "split_setting"]

DEFAULT_PREFIX = "#PBS"
PREFIX_VARIABLE = "PBS_DPREFIX"


# Every option of OpenPBS 23.06's qsub, with whether it takes a value.
_FLAG, _VALUE = ArgKind.NONE, ArgKind.REQUIRED
OPTIONS: Final = MappingProxyType({
    "a": _VALUE, "A": _VALUE, "c": _VALUE, "C": _VALUE, "e": _VALUE, "f": _FLAG, "h": _FLAG,
    "I": _FLAG, "j": _VALUE, "J": _VALUE, "k": _VALUE, "l": _VALUE, "m": _VALUE, "M": _VALUE,
    "N": _VALUE, "o": _VALUE, "p": _VALUE, "P": _VALUE, "q": _VALUE, "r": _VALUE, "R": _VALUE,
    "S": _VALUE, "u": _VALUE, "v": _VALUE, "V": _FLAG, "W": _VALUE, "X": _FLAG, "z": _FLAG,
    "G": _FLAG,
})  # fmt: skip
# ---- what hpcdet does with each option, by purpose (docs/qsub.md) ------------------------

# Owned: options a trial's job may never set in pbs.pbsbatch_args, with the reason (the
# -l resources and -W attributes hpcdet sets are OWNED_RESOURCES and OWNED_ATTRIBUTES).
_OWNED = {
    "N": "hpcdet names its jobs to track them", "o": "hpcdet writes the job's output into "
    "its job directory", "e": "hpcdet writes the job's errors into its job directory",
    "j": "hpcdet owns the job's log files", "k": "hpcdet owns the job's log files",
    "R": "hpcdet owns the job's log files", "q": "the queue is the experiment's resource pool",
    "r": "hpcdet sets whether the job may be rerun", "p": "hpcdet orders jobs (det job update)",
    "A": "the account comes from the experiment's configuration",
    "P": "the project comes from the experiment's configuration",
    "v": "hpcdet sets the job's environment", "V": "hpcdet sets the job's environment",
    "u": "the job runs as the experiment's owner; it cannot choose another user",
    "I": "the master submits batch jobs, not interactive ones", "X": "no X11 for batch jobs",
    "J": "one trial is one PBS job", "h": "a held job would never start its trial",
    "S": "hpcdet writes a bash script", "C": "hpcdet writes the job script",
    "z": "hpcdet reads qsub's answer itself", "f": "the master does not wait for jobs",
}  # fmt: skip
# Resources (-l) hpcdet requests itself from the trial's slots and time limit.
OWNED_RESOURCES: Final = frozenset({"select", "place", "walltime", "ncpus", "mpiprocs",
                                    "ngpus", "nodes", "nodect", "ompthreads"})
# -W attributes hpcdet owns or that change who or how the job runs (every attribute the
# run-as helper's directive reader counts as identity: User_List, group_list, euser, ...).
OWNED_ATTRIBUTES: Final = frozenset({"umask", "block", "sandbox", "release_nodes_on_stageout",
                                     "pwd", "cred"}) | directives.QSUB_IDENTITY_ATTRIBUTES
# Refused: options det qsub refuses, with the reason given to the user.
_REFUSED = {
    "J": "job arrays are not supported: one task tracks one PBS job (submit one task per "
         "index, or use plain qsub)",
    "I": "interactive jobs are not supported: the master submits batch jobs (use plain "
         "qsub -I on a login node)",
    "X": "X11 forwarding needs an interactive job, which det qsub does not submit",
    "G": "GUI jobs need an interactive job, which det qsub does not submit",
    "u": "jobs run as the master's PBS user (or as you, in run-as-owner mode); they cannot "
         "be submitted as another user",
}  # fmt: skip
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
# -W attributes det qsub handles itself (block=true: wait for the job, as qsub does).
CLI_ATTRIBUTES: Final = frozenset({"block"})

QSUB = engine.OptionTable(
    command="qsub", spell=lambda letter: f"-{letter}", kinds=OPTIONS,
    owned=MappingProxyType(_OWNED), refused=MappingProxyType(_REFUSED),
    # Options det qsub handles itself; they never reach the master.
    cli_only=frozenset({"C", "V", "v", "z", "f"}),
    # Options the master reads and replaces by its own (name, queue, account, files,
    # shell); -k (keep files on the host) and -R (remove them) are moot: the wrapper writes
    # the user's files directly and the master keeps its own copy.
    master_handled=frozenset({"N", "q", "A", "o", "e", "j", "S", "k", "R"}),
    key_noun="letter", unknown_hint="single letters without a dash, e.g. 'l'",
    cli_only_text="{option_value} is handled by det qsub itself", empty_is_missing=True,
)
# The table's lists under the names the rest of hpcdet uses.
REFUSED, CLI_ONLY, MASTER_HANDLED = QSUB.refused, QSUB.cli_only, QSUB.master_handled
# Options whose value is a comma-separated list merged item by item.
_LISTS: Final = frozenset({"l", "W", "v"})


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
    bundle = engine.read_short_bundle(word.text[1:], OPTIONS.get)
    settings += [(letter, None) for letter in bundle.flags]
    if bundle.unknown is not None:
        raise ValidationError(f"{word.where}: unknown qsub option -{bundle.unknown} "
                              "(see man qsub)")
    letter = bundle.value_letter
    if letter is None:
        return index + 1
    if bundle.attached:
        settings += split_setting(letter, bundle.attached, word.where)
        return index + 1
    if index + 1 >= len(words):
        raise ValidationError(f"{word.where}: option -{letter} needs a value")
    settings += split_setting(letter, words[index + 1].text, word.where)
    return index + 2


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
    return engine.merge_settings(sources, lambda setting: (merge_key(setting),))


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
    with engine.located(where, line=True):
        return [Word(word, f"{where} line {line}")
                for line, text in directives.qsub_directives(script, prefix)
                for word in directives.qsub_line_words(text, line)]


def directive_words(text: str, where: str) -> list[str]:
    """Split one directive's options as qsub's ``make_argv`` does."""
    with engine.located(where):
        return directives.qsub_line_words(text)


# ---- what det qsub does with each option (docs/qsub.md) -----------------------------------


def refusal(setting: Setting) -> str | None:
    """Why det qsub refuses ``setting``, as ``-X: reason``; None if it does not."""
    letter, value = setting
    if (refused := QSUB.refusal(letter)) is not None:
        return refused
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
    engine.check_not_refused(QSUB, settings, refusal)


def render_setting(setting: Setting) -> list[str]:
    """A setting as qsub argv words: ``["-l", "walltime=1:00"]`` or ``["-h"]``."""
    letter, value = setting
    return [f"-{letter}"] if value is None else [f"-{letter}", value]


def attribute(settings: Iterable[Setting], name: str) -> str | None:
    """The value of ``-W name=value`` (the last one), or None."""
    found = [value.split("=", 1)[1] for key, value in settings
             if key == "W" and value is not None and value.split("=", 1)[0] == name]
    return found[-1] if found else None
