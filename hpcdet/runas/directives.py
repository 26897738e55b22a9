"""The options a batch script's directives give sbatch or qsub, read exactly as they read them.

One reader for the run-as helper and the master, so that they cannot disagree about what a
script asks for. It is standard library only and imports nothing from hpcdet: the helper
(:mod:`hpcdet.runas.helper`), which runs as every user through sudo as ``python3 -I``, loads
the root-owned copy ``scripts/install-runas-helper`` puts beside it; the master's ``det sbatch``
and ``det qsub`` readers (:mod:`hpcdet.dispatcher.slurm.sbatch_options`,
:mod:`hpcdet.dispatcher.pbs.qsub_options`) import it.

**sbatch** (Slurm 22.05, ``src/sbatch/opt.c``): lines that *begin* with ``#SBATCH`` (or
``#SLURM``), until the first line holding anything but blanks before a ``#``. Each line is
split by ``get_argument``: blanks separate words, quotes group, a backslash escapes the next
character (but not a blank), an unquoted ``#`` ends the line, and so does a word that is
empty (``""``) or the word ``hetjob``/``packjob``; a line starting with that word begins the
next component of a heterogeneous job. The words of a component go through ``getopt_long``
with a leading ``+``: long names may be abbreviated to a prefix only one option has, and
sbatch fails ("Invalid directive") at the first word that is not an option.

**qsub** (OpenPBS, ``src/cmds/qsub_sup.c`` ``get_script``, ``qsub.c`` ``make_argv`` and
``process_opts``): lines whose first non-blank text is the prefix (``#PBS``; nothing needs
to follow it), until the first executable line (its first non-blank character is not ``#``;
a line starting with ``:`` or ``#!`` never is). A directive ending in a backslash continues on
the next line. Each is split by ``make_argv`` (quotes group, a backslash escapes, ``#`` is an
ordinary character) and read by its own ``getopt`` call, which skips words that are not
options, after which qsub fails ("directive error"); ``-W`` holds ``name=value`` attributes.

Each reader raises :class:`DirectiveError` wherever the scheduler would refuse the script, so
a caller that refuses on it never lets through what the scheduler would read differently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

Setting = tuple[str, "str | None"]
Word = tuple[int, str]  # (line number, text)

FLAG, VALUE, OPTIONAL = "flag", "value", "optional value"
# C's isspace() in the C locale: what both schedulers split on (str.isspace knows more).
BLANKS = " \t\n\v\f\r"


class DirectiveError(ValueError):
    """The scheduler would refuse (or fail on) the script's directives.

    ``line``: the script's line (0: unknown); ``index``: the word, for :func:`sbatch_getopt`.
    """

    def __init__(self, reason: str, *, line: int = 0, index: int = -1) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.index = index

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}" if self.line else self.reason


def _names(kind: str, names: str) -> dict[str, str]:
    return dict.fromkeys(names.split(), kind)


# Every long option of sbatch 22.05.8: src/common/slurm_opt.c's options with an sbatch
# setter, the list `sbatch --a=x` ... `sbatch --z=x` name as possibilities (hidden ones too:
# they make prefixes ambiguous), with whether each takes a value.
SBATCH_LONG: Mapping[str, str] = MappingProxyType({
    **_names(FLAG, "contiguous help hold ignore-pbs no-requeue overcommit oversubscribe "
             "parsable quiet reboot spread-job test-only use-min-nodes verbose "
             "version usage wait"),
    # requeue: a flag in 22.05; 25.11 takes --requeue=expedite (its only value), which an
    # older sbatch refuses on its own.
    **_names(OPTIONAL, "exclusive get-user-env nice no-kill propagate requeue"),
    **_names(VALUE, "account acctg-freq array batch begin bb bbf cluster-constraint chdir "
             "cluster clusters comment container context constraint core-spec "
             "cores-per-socket cpu-freq cpus-per-gpu cpus-per-task deadline delay-boot "
             "dependency distribution error exclude export export-file extra-node-info gid "
             "gpu-bind gpu-freq gpus gpus-per-node gpus-per-socket gpus-per-task gres "
             "gres-flags hint input job-name kill-on-invalid-dep licenses mail-type "
             "mail-user mcs-label mem mem-bind mem-per-cpu mem-per-gpu mincpus network "
             "nodefile nodelist nodes ntasks ntasks-per-core ntasks-per-gpu ntasks-per-node "
             "ntasks-per-socket ntasks-per-tres open-mode output partition power prefer "
             "priority profile qos reservation signal sockets-per-node switches "
             "tasks-per-node thread-spec threads-per-core time time-min tmp uid "
             "wait-all-nodes wckey wrap"),
})  # fmt: skip
# Hidden spellings and what they set: --cluster runs --clusters' setter (under another
# getopt value, so --cluste is ambiguous); --tasks-per-node is --ntasks-per-node's value.
SBATCH_ALIASES: Mapping[str, str] = MappingProxyType(
    {"cluster": "clusters", "tasks-per-node": "ntasks-per-node"})
_SAME_GETOPT_VALUE = {"tasks-per-node": "ntasks-per-node"}
# sbatch's short options and the long option each is (its getopt string:
# "+A:a:b:D:M:C:S:c:d:m:e:x:B:G:hHi:J:L:k::F:w:N:n:o:OsQp:q:t:vVW").
SBATCH_SHORT: Mapping[str, str] = MappingProxyType({
    "A": "account", "a": "array", "b": "begin", "D": "chdir", "M": "clusters",
    "C": "constraint", "S": "core-spec", "c": "cpus-per-task", "d": "dependency",
    "m": "distribution", "e": "error", "x": "exclude", "B": "extra-node-info", "G": "gpus",
    "h": "help", "H": "hold", "i": "input", "J": "job-name", "L": "licenses", "k": "no-kill",
    "F": "nodefile", "w": "nodelist", "N": "nodes", "n": "ntasks", "o": "output",
    "O": "overcommit", "s": "oversubscribe", "p": "partition", "q": "qos", "Q": "quiet",
    "t": "time", "v": "verbose", "V": "version", "W": "wait",
})  # fmt: skip
# qsub's options (OpenPBS qsub_sup.c GETOPT_ARGS): a letter, ":" when it takes a value.
QSUB_GETOPT = "a:A:c:C:e:fhIj:J:k:l:m:M:N:o:p:q:r:R:S:u:v:VW:XzP:"
QSUB_OPTIONS: Mapping[str, str] = MappingProxyType({
    letter: VALUE if QSUB_GETOPT[i + 1:i + 2] == ":" else FLAG
    for i, letter in enumerate(QSUB_GETOPT) if letter != ":"})
QSUB_PREFIX = "#PBS"
_QSUB_MAX_WORDS = 128  # make_argv fills a static array of 129 entries, "qsub" first

# What would change who the job runs as (sbatch: --get-user-env loads --uid's login
# environment; PBS attribute names are matched without regard to case, as the server does).
SBATCH_IDENTITY = frozenset({"uid", "gid", "get-user-env"})
QSUB_IDENTITY = frozenset({"u"})
QSUB_IDENTITY_ATTRIBUTES = frozenset(
    {"user_list", "group_list", "run_as", "euser", "egroup", "job_owner"})
# The sbatch options the run-as helper's submit verb takes on its command line (exact names):
# every one but those that change the job's identity, read files as the submitter
# (export-file, nodefile, bbf), or change what sbatch itself does or prints.
SBATCH_SUBMIT_OPTIONS = frozenset(SBATCH_LONG) - SBATCH_IDENTITY - set(SBATCH_ALIASES) - {
    "export-file", "nodefile", "bbf", "wrap", "wait", "test-only", "parsable", "quiet",
    "verbose", "help", "usage", "version", "ignore-pbs", "clusters", "context",
    "ntasks-per-tres"}


# ---- sbatch ---------------------------------------------------------------------------------


class Parsed(NamedTuple):
    """Settings ``(long name, value or None)``; words from ``stop`` on are not options."""

    settings: list[Setting]
    stop: int
    after_dashes: bool  # ``--`` ended the options (it is not among the operands)


def resolve_sbatch_long(name: str, *, index: int = -1) -> str:
    """What ``--name`` means to sbatch: an exact name, else the one option it is a prefix
    of (getopt_long's rule); an unknown or ambiguous name is an error there and here."""
    if name in SBATCH_LONG:
        return SBATCH_ALIASES.get(name, name)
    found = sorted(option for option in SBATCH_LONG if option.startswith(name))
    if len({_SAME_GETOPT_VALUE.get(option, option) for option in found}) == 1:
        return SBATCH_ALIASES.get(found[0], found[0])
    if not found:
        raise DirectiveError(f"unknown sbatch option --{name} (see man sbatch)", index=index)
    listed = ", ".join(f"--{option}" for option in found)
    raise DirectiveError(f"option --{name} is ambiguous (could be {listed})", index=index)


def sbatch_getopt(words: Sequence[str]) -> Parsed:
    """Read ``words`` as sbatch's ``getopt_long("+...")``: stop at the first word that is not
    an option, or after ``--``."""
    settings: list[Setting] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            return Parsed(settings, index + 1, True)
        if not word.startswith("-") or word == "-":
            break
        reader = _sbatch_long if word.startswith("--") else _sbatch_short
        index = reader(words, index, settings)
    return Parsed(settings, index, False)


def _sbatch_long(words: Sequence[str], index: int, settings: list[Setting]) -> int:
    name, has_value, value = words[index][2:].partition("=")
    option = resolve_sbatch_long(name, index=index)
    kind = SBATCH_LONG[option]
    if has_value and kind == FLAG:
        raise DirectiveError(f"option --{option} takes no value", index=index)
    if kind == VALUE and not has_value:
        if index + 1 >= len(words):
            raise DirectiveError(f"option --{option} needs a value", index=index)
        settings.append((option, words[index + 1]))
        return index + 2
    settings.append((option, value if has_value else None))
    return index + 1


def _sbatch_short(words: Sequence[str], index: int, settings: list[Setting]) -> int:
    letters = words[index][1:]
    for position, letter in enumerate(letters):
        option = SBATCH_SHORT.get(letter)
        if option is None:
            raise DirectiveError(f"unknown sbatch option -{letter} (see man sbatch)",
                                 index=index)
        kind, rest = SBATCH_LONG[option], letters[position + 1:]
        if kind == FLAG:
            settings.append((option, None))
        elif rest or kind == OPTIONAL:  # an optional value is only ever attached
            settings.append((option, rest or None))
            return index + 1
        elif index + 1 >= len(words):
            raise DirectiveError(f"option -{letter} needs a value", index=index)
        else:
            settings.append((option, words[index + 1]))
            return index + 2
    return index + 1


def sbatch_components(script: str) -> list[list[Word]]:
    """The words of the ``#SBATCH``/``#SLURM`` lines before the first command, one list per
    component of a heterogeneous job (one list for any other job)."""
    if "\x00" in script:  # sbatch refuses such a script; C would cut lines short at it
        raise DirectiveError("the script contains a NUL byte")
    components: list[list[Word]] = [[]]
    for number, line in enumerate(script.split("\n"), start=1):
        rest = next((line[len(magic):] for magic in ("#SBATCH", "#SLURM")
                     if line.startswith(magic)), None)
        if rest is None:
            if line.lstrip(BLANKS)[:1] not in ("", "#"):
                break  # the first command
            continue
        if _het_word(rest.lstrip(BLANKS)):
            components.append([])  # the separator's line gives no words (see _sbatch_word)
            continue
        components[-1] += [(number, word) for word in sbatch_line_words(rest, number)]
    return components


def sbatch_line_words(text: str, line: int = 0) -> list[str]:
    """The words of one ``#SBATCH`` line after the magic word, as ``get_argument`` finds
    them: it stops at an unquoted ``#``, and at a word that has no characters."""
    words: list[str] = []
    position = 0
    while True:
        word, position = _sbatch_word(text, position, line)
        if word is None:
            return words
        words.append(word)


def _sbatch_word(text: str, position: int, line: int) -> tuple[str | None, int]:
    """One ``get_argument`` call: the word from ``position`` and where the next one starts."""
    while position < len(text) and text[position] in BLANKS:
        position += 1
    if _het_word(text[position:]):
        return None, position  # sbatch blanks the word out, leaving nothing to copy
    if text[position:position + 1] == ":":
        raise DirectiveError("a word starts with ':' (sbatch stops: Unexpected `:`)",
                             line=line)
    chars: list[str] = []
    quote, escaped = "", False
    while position < len(text) and (quote or text[position] not in BLANKS):
        char = text[position]
        position += 1
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True  # the loop's blank test comes first: "\ " still ends the word
            continue
        elif quote:
            if char == quote:
                quote = ""
                continue
        elif char in "\"'":
            quote = char
            continue
        elif char == "#":
            position -= 1
            break
        chars.append(char)
    if quote:
        raise DirectiveError(f"unmatched {quote} in an #SBATCH line", line=line)
    return ("".join(chars) if chars else None), position


def _het_word(text: str) -> bool:
    """``hetjob`` or ``packjob`` (any case) as the whole next word."""
    for word in ("hetjob", "packjob"):
        if text[:len(word)].lower() == word and text[len(word):len(word) + 1] in ("", *BLANKS):
            return True
    return False


def sbatch_settings(script: str) -> list[Setting]:
    """Every option the script's directives set, every component's; DirectiveError where
    sbatch would refuse the script (including a word that is not an option)."""
    settings: list[Setting] = []
    for words in sbatch_components(script):
        texts = [text for _, text in words]
        try:
            parsed = sbatch_getopt(texts)
        except DirectiveError as exc:
            exc.line = words[exc.index][0]
            raise
        if parsed.stop < len(texts):
            raise DirectiveError(f"{texts[parsed.stop]!r} is not an sbatch option (sbatch "
                                 "fails: Invalid directive)", line=words[parsed.stop][0])
        settings += parsed.settings
    return settings


def sbatch_identity(settings: Iterable[Setting]) -> list[str]:
    """The options among ``settings`` that would change who the job runs as."""
    return [f"--{name}" for name, _ in settings if name in SBATCH_IDENTITY]


# ---- qsub -----------------------------------------------------------------------------------


def qsub_directives(script: str, prefix: str = QSUB_PREFIX) -> list[Word]:
    """``(line number, text after the prefix)`` of each directive before the first
    executable line; continued lines joined as ``get_script`` joins them."""
    if "\x00" in script:  # C would cut the line short at it
        raise DirectiveError("the script contains a NUL byte")
    if not prefix:
        return []  # an empty prefix turns directives off
    lines = script.split("\n")
    found: list[Word] = []
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        stripped = line.lstrip(BLANKS)
        if not stripped.startswith(prefix):
            if line[:1] != ":" and not line.startswith("#!") and stripped[:1] not in ("", "#"):
                break  # the first executable line
            continue
        start, text = number, stripped[len(prefix):]
        while (cut := _continued(text)) is not None and number < len(lines):
            text = text[:cut] + lines[number] + "\n"  # the rest of a line keeps its newline
            number += 1
        found.append((start, text[:cut] if cut is not None else text))
    return found


def _continued(text: str) -> int | None:
    """Where a line ending in a backslash (and blanks) is cut to be continued, or None."""
    stripped = text.rstrip(BLANKS)
    return len(stripped) - 1 if stripped.endswith("\\") else None


def qsub_line_words(text: str, line: int = 0) -> list[str]:
    """The words of one directive, as ``make_argv`` splits them."""
    words: list[str] = []
    chars: list[str] | None = None
    position = len(text) - len(text.lstrip(BLANKS))
    while position < len(text):
        char = text[position]
        position += 1
        if char in "\"'":
            end = text.find(char, position)
            if end < 0:
                raise DirectiveError(f"unmatched {char} in a directive", line=line)
            chars = (chars or []) + list(text[position:end])
            position = end + 1
        elif char == "\\":
            if position >= len(text):
                raise DirectiveError("a directive ends in an escape", line=line)
            chars = (chars or []) + [text[position]]
            position += 1
        elif char in BLANKS:
            if chars is not None:
                words.append("".join(chars))
            chars = None
        else:
            chars = (chars or []) + [char]
    if chars is not None:
        words.append("".join(chars))
    if len(words) >= _QSUB_MAX_WORDS:
        raise DirectiveError(f"more than {_QSUB_MAX_WORDS - 1} words in one directive "
                             "(qsub's limit)", line=line)
    return words


def qsub_getopt(words: Sequence[str], line: int = 0) -> list[Setting]:
    """One directive's options, read as qsub's ``getopt``; anything else is an error."""
    settings: list[Setting] = []
    index = 0
    while index < len(words):
        word = words[index]
        if not word.startswith("-") or word in ("-", "--"):
            raise DirectiveError(f"{word!r} is not a qsub option (qsub fails: directive "
                                 "error)", line=line)
        for position, letter in enumerate(word[1:], start=1):
            kind = QSUB_OPTIONS.get(letter)
            if kind is None:
                raise DirectiveError(f"unknown qsub option -{letter} (see man qsub)", line=line)
            if kind == FLAG:
                settings.append((letter, None))
                continue
            value = word[position + 1:]
            if not value:
                index += 1
                if index >= len(words):
                    raise DirectiveError(f"option -{letter} needs a value", line=line)
                value = words[index]
            settings.append((letter, value))
            break
        index += 1
    return settings


def qsub_settings(script: str, prefix: str = QSUB_PREFIX) -> list[Setting]:
    """Every option the script's directives set; DirectiveError where qsub would refuse."""
    settings: list[Setting] = []
    for line, text in qsub_directives(script, prefix):
        settings += qsub_getopt(qsub_line_words(text, line), line)
    return settings


def qsub_attribute_names(value: str) -> list[str]:
    """The attribute names of a ``-W`` value (``name=value[,name=value]...``), split as qsub's
    ``parse_equal_string`` splits it (a value may hold commas, or be quoted)."""
    names: list[str] = []
    text, position = value, 0
    while True:
        while position < len(text) and text[position] in BLANKS:
            position += 1
        if position >= len(text):
            if not names:
                raise DirectiveError(f"-W {value!r}: expected attribute=value")
            return names
        position = _attribute(text, position, names, value)


def _attribute(text: str, position: int, names: list[str], value: str) -> int:
    """Read one ``name=value`` from ``position`` into ``names``; where the next one starts."""
    bad = DirectiveError(f"-W {value!r}: expected attribute=value[,attribute=value]")
    start = position
    while position < len(text) and text[position] not in BLANKS and text[position] != "=":
        position += 1
    name = text[start:position]
    position = len(text) - len(text[position:].lstrip(BLANKS))
    if not name or name[0] == "," or text[position:position + 1] != "=":
        raise bad
    names.append(name)
    position = len(text) - len(text[position + 1:].lstrip(BLANKS))
    start, rest = position, text
    if text[position:position + 1] in ("'", '"'):
        end = text.find(text[position], position + 1)
        if end < 0:
            raise bad
        start, position = position + 1, end
        rest = f"{text[:end]} {text[end + 1:]}"  # qsub blanks the closing quote out
    equals = text.find("=", position)
    if equals < 0:
        if rest.rstrip(BLANKS).endswith(","):
            raise bad  # a trailing comma
        return len(text)
    comma = text.rfind(",", start, equals)
    if comma < 0:
        raise bad
    return comma + 1


def qsub_identity(settings: Iterable[Setting]) -> list[str]:
    """The options among ``settings`` that would change who the job runs as."""
    found: list[str] = []
    for letter, value in settings:
        if letter in QSUB_IDENTITY:
            found.append(f"-{letter}")
        elif letter == "W" and value is not None:
            found += [f"-W {name}" for name in qsub_attribute_names(value)
                      if name.lower() in QSUB_IDENTITY_ATTRIBUTES]
    return found


def refused_directives(script: str, scheduler: str, *, environment: bool = False) -> list[str]:
    """The options ``script``'s directives give ``scheduler`` (slurm, pbs) that would change
    who the job runs as; with ``environment``, PBS's ``-V`` too (the submitter's variables)."""
    if scheduler == "pbs":
        settings = qsub_settings(script)
        return qsub_identity(settings) + [f"-{letter}" for letter, _ in settings
                                          if environment and letter == "V"]
    return sbatch_identity(sbatch_settings(script))
