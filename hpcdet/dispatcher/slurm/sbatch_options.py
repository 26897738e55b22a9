"""sbatch's options, read the way sbatch reads them (Slurm 22.05), for ``det sbatch``.

sbatch takes options from three places, later ones winning for the same option
(``man sbatch``, "INPUT ENVIRONMENT VARIABLES"): ``#SBATCH`` lines of the script, read until
the first line that is neither blank nor a comment; ``SBATCH_*`` environment variables;
the command line, up to the script's name. Options are parsed as getopt_long does: long
names may be abbreviated to any unique prefix (``--part`` is ``--partition``), short ones
take their value attached or as the next word (``-pdebug``, ``-p debug``) and flags can be
bundled (``-HQ``). Every option is reduced to one :data:`Setting`, ``(long name, value)``
with ``None`` for a flag, so ``-p x``, ``--partition=x``, ``--part x`` and
``SBATCH_PARTITION=x`` all read ``("partition", "x")``.

Pure functions of text only: both the CLI (which knows the user's environment and
script) and the master (which validates what the CLI sent) use this table. What hpcdet
does with each option, one list per purpose (owned by hpcdet in a trial's job, refused by
det sbatch, handled by det sbatch, replaced by the master), is :data:`SBATCH`, a table over
:mod:`hpcdet.dispatcher.options`, the engine qsub's table shares. The ``#SBATCH``
lines and getopt_long's reading of them are :mod:`hpcdet.runas.directives`'s, the reader
the run-as helper shares, so the two cannot disagree about what a script asks for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from hpcdet.dispatcher import options as engine
from hpcdet.dispatcher.options import ArgKind, CommandLine, Setting, Word, is_set, value_of
from hpcdet.errors import ValidationError
from hpcdet.runas import directives

__all__ = ["BY_NAME", "BY_SHORT", "CLI_ONLY", "CONTROLLED_OPTIONS", "MASTER_HANDLED",
           "OPTIONS", "OWNED_BY_HPCDET", "REFUSED", "SBATCH", "ArgKind", "CommandLine",
           "SbatchOption", "Setting", "Word", "check_not_refused", "directive_words",
           "environment_settings", "identity_settings", "is_set", "merge", "option_named",
           "parse_command_line", "parse_words", "refusal", "render_settings",
           "script_settings", "script_words", "value_of"]


@dataclass(frozen=True)
class SbatchOption:
    """One sbatch option: its long name, short letter and input environment variables."""

    name: str
    kind: ArgKind
    short: str | None = None
    env: tuple[str, ...] = ()

    def render(self, value: str | None) -> str:
        """The option as one argv word: ``--name=value`` or ``--name``."""
        return f"--{self.name}" if value is None else f"--{self.name}={value}"


_N, _R, _O = ArgKind.NONE, ArgKind.REQUIRED, ArgKind.OPTIONAL


def _opt(name: str, kind: ArgKind, short: str | None = None, *env: str) -> SbatchOption:
    names = tuple(e if e.startswith("SLURM_") else f"SBATCH_{e}" for e in env)
    return SbatchOption(name, kind, short, names)


# Every option of sbatch 22.05.8 (its man page and the hidden --context, --ntasks-per-tres;
# --requeue with 25.11's optional value, --requeue=expedite;
# --cluster and --tasks-per-node read as --clusters and --ntasks-per-node: the reader's
# SBATCH_ALIASES), with the SBATCH_* variables that set it.
OPTIONS: tuple[SbatchOption, ...] = (
    _opt("account", _R, "A", "ACCOUNT"), _opt("acctg-freq", _R, None, "ACCTG_FREQ"),
    _opt("array", _R, "a", "ARRAY_INX"), _opt("batch", _R, None, "BATCH"),
    _opt("bb", _R), _opt("bbf", _R), _opt("begin", _R, "b"), _opt("chdir", _R, "D"),
    _opt("cluster-constraint", _R), _opt("clusters", _R, "M", "CLUSTERS", "SLURM_CLUSTERS"),
    _opt("comment", _R), _opt("constraint", _R, "C", "CONSTRAINT"),
    _opt("container", _R, None, "CONTAINER"), _opt("context", _R), _opt("contiguous", _N),
    _opt("core-spec", _R, "S", "CORE_SPEC"), _opt("cores-per-socket", _R),
    _opt("cpu-freq", _R), _opt("cpus-per-gpu", _R, None, "CPUS_PER_GPU"),
    _opt("cpus-per-task", _R, "c"), _opt("deadline", _R),
    _opt("delay-boot", _R, None, "DELAY_BOOT"), _opt("dependency", _R, "d"),
    _opt("distribution", _R, "m", "DISTRIBUTION"), _opt("error", _R, "e", "ERROR"),
    _opt("exclude", _R, "x"), _opt("exclusive", _O, None, "EXCLUSIVE"),
    _opt("export", _R, None, "EXPORT"), _opt("export-file", _R),
    _opt("extra-node-info", _R, "B"), _opt("get-user-env", _O, None, "GET_USER_ENV"),
    _opt("gid", _R), _opt("gpu-bind", _R, None, "GPU_BIND"),
    _opt("gpu-freq", _R, None, "GPU_FREQ"), _opt("gpus", _R, "G", "GPUS"),
    _opt("gpus-per-node", _R, None, "GPUS_PER_NODE"), _opt("gpus-per-socket", _R),
    _opt("gpus-per-task", _R, None, "GPUS_PER_TASK"), _opt("gres", _R, None, "GRES"),
    _opt("gres-flags", _R, None, "GRES_FLAGS"), _opt("help", _N, "h"),
    _opt("hint", _R, None, "HINT", "SLURM_HINT"), _opt("hold", _N, "H"),
    _opt("ignore-pbs", _N, None, "IGNORE_PBS"), _opt("input", _R, "i", "INPUT"),
    _opt("job-name", _R, "J", "JOB_NAME"), _opt("kill-on-invalid-dep", _R),
    _opt("licenses", _R, "L"), _opt("mail-type", _R), _opt("mail-user", _R),
    _opt("mcs-label", _R), _opt("mem", _R, None, "MEM_PER_NODE"),
    _opt("mem-bind", _R, None, "MEM_BIND"), _opt("mem-per-cpu", _R, None, "MEM_PER_CPU"),
    _opt("mem-per-gpu", _R, None, "MEM_PER_GPU"), _opt("mincpus", _R),
    _opt("network", _R, None, "NETWORK"), _opt("nice", _O),
    _opt("no-kill", _O, "k", "NO_KILL"), _opt("no-requeue", _N, None, "NO_REQUEUE"),
    _opt("nodefile", _R, "F"), _opt("nodelist", _R, "w"), _opt("nodes", _R, "N"),
    _opt("ntasks", _R, "n"), _opt("ntasks-per-core", _R), _opt("ntasks-per-gpu", _R),
    _opt("ntasks-per-node", _R), _opt("ntasks-per-socket", _R), _opt("ntasks-per-tres", _R),
    _opt("open-mode", _R, None, "OPEN_MODE"), _opt("output", _R, "o", "OUTPUT"),
    _opt("overcommit", _N, "O", "OVERCOMMIT"), _opt("oversubscribe", _N, "s"),
    _opt("parsable", _N), _opt("partition", _R, "p", "PARTITION"),
    _opt("power", _R, None, "POWER"), _opt("prefer", _R), _opt("priority", _R),
    _opt("profile", _R, None, "PROFILE"), _opt("propagate", _O),
    _opt("qos", _R, "q", "QOS"), _opt("quiet", _N, "Q"), _opt("reboot", _N),
    _opt("requeue", _O, None, "REQUEUE"), _opt("reservation", _R, None, "RESERVATION"),
    _opt("signal", _R, None, "SIGNAL"), _opt("sockets-per-node", _R),
    _opt("spread-job", _N, None, "SPREAD_JOB"), _opt("switches", _R, None, "REQ_SWITCH"),
    _opt("test-only", _N), _opt("thread-spec", _R, None, "THREAD_SPEC"),
    _opt("threads-per-core", _R, None, "THREADS_PER_CORE"),
    _opt("time", _R, "t", "TIMELIMIT"), _opt("time-min", _R), _opt("tmp", _R),
    _opt("uid", _R), _opt("usage", _N), _opt("use-min-nodes", _N, None, "USE_MIN_NODES"),
    _opt("verbose", _N, "v", "DEBUG"), _opt("version", _N, "V"),
    _opt("wait", _N, "W", "WAIT"), _opt("wait-all-nodes", _R, None, "WAIT_ALL_NODES"),
    _opt("wckey", _R, None, "WCKEY"), _opt("wrap", _R),
)  # fmt: skip

BY_NAME: Mapping[str, SbatchOption] = MappingProxyType({o.name: o for o in OPTIONS})
BY_SHORT: Mapping[str, SbatchOption] = MappingProxyType(
    {o.short: o for o in OPTIONS if o.short})
# Options that set the same thing: setting one drops the others (sbatch does the same,
# so that e.g. --mem-per-cpu on the command line replaces an #SBATCH --mem).
_EXCLUSIVE_GROUPS = (("requeue", "no-requeue"), ("exclusive", "oversubscribe"),
                     ("mem", "mem-per-cpu", "mem-per-gpu"), ("nodelist", "nodefile"))
_GROUP_OF: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {name: group for group in _EXCLUSIVE_GROUPS for name in group})


def option_named(name: str, where: str) -> SbatchOption:
    """The option called ``name`` (no dashes), or one of which it is a unique prefix, as
    sbatch's getopt_long resolves it (the reader the run-as helper shares)."""
    with engine.located(where):
        return BY_NAME[directives.resolve_sbatch_long(name)]


def parse_words(words: Sequence[Word]) -> CommandLine:
    """Read options as getopt_long does with sbatch's ``+`` rule: stop at the first word
    that is not an option (the script), or after ``--``."""
    try:
        parsed = directives.sbatch_getopt([word.text for word in words])
    except directives.DirectiveError as exc:
        raise ValidationError(f"{words[exc.index].where}: {exc.reason}") from exc
    if not parsed.after_dashes and words[parsed.stop:][:1] and words[parsed.stop].text == ":":
        raise ValidationError(f"{words[parsed.stop].where}: heterogeneous jobs (':') are not "
                              "supported by det sbatch")
    return CommandLine(parsed.settings, [word.text for word in words[parsed.stop:]])


def parse_command_line(argv: Sequence[str]) -> CommandLine:
    """The options and operands of ``det sbatch``'s arguments."""
    return parse_words([Word(arg, "command line") for arg in argv])


# ---- #SBATCH lines -------------------------------------------------------------------------


def script_words(script: str, where: str = "script") -> list[Word]:
    """The words of the ``#SBATCH`` (or ``#SLURM``) lines before the first command, split
    as sbatch splits them (:mod:`hpcdet.runas.directives`: quotes group, a backslash escapes
    the next character but a blank, an unquoted ``#`` or an empty word ends the line)."""
    with engine.located(where, line=True):
        components = directives.sbatch_components(script)
    if len(components) > 1:
        raise ValidationError(f"{where}: heterogeneous jobs (#SBATCH hetjob) are not "
                              "supported by det sbatch")
    return [Word(text, f"{where} line {line}") for line, text in components[0]]


def script_settings(script: str, where: str = "script") -> list[Setting]:
    """The settings of the script's ``#SBATCH`` lines (det sbatch stops at a word that is
    not an option, with a warning: see sbatch_command.script_directives)."""
    return parse_words(script_words(script, where)).settings


def directive_words(text: str, where: str) -> list[str]:
    """Split one directive line's options as Slurm's ``get_argument`` does."""
    with engine.located(where):
        return directives.sbatch_line_words(text)


# ---- SBATCH_* variables --------------------------------------------------------------------


def environment_settings(environ: Mapping[str, str]) -> list[Setting]:
    """The options ``SBATCH_*`` variables set, as sbatch reads them: a flag is on when its
    variable is empty, ``yes`` or a non-zero number (any other value leaves it off)."""
    settings: list[Setting] = []
    for option in OPTIONS:
        value = next((environ[name] for name in option.env if name in environ), None)
        if value is None:
            continue
        if option.kind is ArgKind.NONE or _env_flag(option.name, value):
            if _flag_on(value):
                settings.append((option.name, None))
        elif option.kind is ArgKind.OPTIONAL:
            settings.append((option.name, value or None))
        else:
            settings.append((option.name, _with_wait(option, value, environ)))
    return settings


def _env_flag(name: str, value: str) -> bool:
    """``SBATCH_REQUEUE`` stays the flag 22.05 reads (``1``, ``yes``), unless it holds the one
    value 25.11 adds (``expedite``): rendered as ``--requeue=1``, 22.05 would refuse it."""
    return name == "requeue" and value.strip().lower() != "expedite"


def _flag_on(value: str) -> bool:
    text = value.strip().lower()
    if text in ("", "yes"):
        return True
    try:
        return float(text) != 0
    except ValueError:
        return False


def _with_wait(option: SbatchOption, value: str, environ: Mapping[str, str]) -> str:
    """``SBATCH_REQ_SWITCH`` and ``SBATCH_WAIT4SWITCH`` make one ``--switches=N@time``."""
    wait = environ.get("SBATCH_WAIT4SWITCH")
    return f"{value}@{wait}" if option.name == "switches" and wait else value


# ---- merging -------------------------------------------------------------------------------


def merge(*sources: Iterable[Setting]) -> list[Setting]:
    """One setting per option, later sources (and later settings) winning; the result is
    ordered by when each option was last set."""
    return engine.merge_settings(sources, lambda s: (s[0], *_GROUP_OF.get(s[0], ())))


def render_settings(settings: Iterable[Setting]) -> list[str]:
    """Settings as argv words (``--name=value``/``--name``), in order."""
    return [BY_NAME[name].render(value) for name, value in settings]


# ---- what hpcdet does with each option, by purpose (docs/sbatch.md) ----------------------

# Owned: options a trial's job may never set in slurm.sbatch_args, with the reason. Their
# spellings in CONTROLLED_OPTIONS are also refused Determined's way: by prefix on the name
# as given, so that the abbreviation --part is refused like --partition.
CONTROLLED_OPTIONS: tuple[str, ...] = (
    "--ntasks-per-node", "--gpus", "-G", "--nodes", "-N", "--ntasks", "-n", "--chdir", "-D",
    "--error", "-e", "--output", "-o", "--partition", "-p", "--no-requeue", "--requeue",
    "--job-name", "-J", "--signal", "--wrap", "--parsable",
)  # fmt: skip
_OWNED: dict[str, str] = {
    "uid": "the job runs as the experiment's owner; it cannot choose another user",
    "gid": "the job runs with its owner's group; it cannot choose another group",
    "comment": "hpcdet marks its jobs with their comment (hpcdet:<cluster>:...) to track them",
    "job-name": "hpcdet names its jobs to track them", "array": "one trial is one Slurm job",
    "clusters": "the master submits to its own cluster only",
    "output": "hpcdet writes the job's output into its job directory",
    "error": "hpcdet writes the job's errors into its job directory",
    "open-mode": "hpcdet owns the job's log files", "input": "the job reads no standard input",
    "chdir": "the job starts in its job directory", "wrap": "hpcdet writes the job script",
    "export": "hpcdet sets the job's environment", "export-file": "hpcdet sets the job's "
    "environment", "get-user-env": "hpcdet sets the job's environment",
    "parsable": "hpcdet reads sbatch's answer itself", "wait": "the master does not wait "
    "for jobs to end", "test-only": "the master submits real jobs",
    "nodefile": "the file would be read on the master's host; use --nodelist",
    "bbf": "the file would be read on the master's host; use --bb",
    "help": "sbatch would print its help instead of submitting",
    "usage": "sbatch would print its usage instead of submitting",
    "version": "sbatch would print its version instead of submitting",
    "quiet": "hpcdet reads sbatch's answer itself", "verbose": "hpcdet reads sbatch's answer",
    "batch": "hpcdet writes the job script",
}  # fmt: skip
for _option in CONTROLLED_OPTIONS:
    if _option.startswith("--"):
        _OWNED.setdefault(_option[2:], "hpcdet sets this option itself")
# Refused: options det sbatch refuses, with the reason given to the user.
_REFUSED = {
    "array": "job arrays are not supported: one task tracks one Slurm job (submit one task "
             "per element, or use plain sbatch)",
    "clusters": "the master submits to its own cluster only",
    "uid": "jobs run as the master's Slurm user; they cannot be submitted as another user",
    "gid": "jobs run as the master's Slurm user and group; another group cannot be chosen",
    "get-user-env": "the job's environment is the one det sbatch sends (see --export); a "
                    "login environment cannot be loaded instead",
    "bbf": "the file would be read on the master's host; give the specification with --bb",
    "comment": "hpcdet sets the job's comment (hpcdet:<cluster>:task-<id>) to track the job",
}  # fmt: skip

SBATCH = engine.OptionTable(
    command="sbatch", spell=lambda name: f"--{name}",
    kinds=MappingProxyType({o.name: o.kind for o in OPTIONS}),
    owned=MappingProxyType(_OWNED), refused=MappingProxyType(_REFUSED),
    # Options det sbatch handles itself; they never reach the master.
    cli_only=frozenset({"parsable", "wait", "test-only", "quiet", "verbose", "ignore-pbs",
                        "export", "export-file", "wrap", "nodefile", "help", "usage",
                        "version"}),
    # Options the master reads and replaces by its own (see
    # hpcdet.master.scheduling.task_submission): the job name, working directory, pool and
    # account are used as given, the output and error files are honoured next to the
    # master's own copy.
    master_handled=frozenset({"job-name", "chdir", "partition", "account", "output", "error",
                              "open-mode"}),
    key_noun="name", unknown_hint="long names without dashes, e.g. 'time'",
    cli_only_text="{option} is handled by det sbatch itself, not by the master",
)
# The table's lists under the names the rest of hpcdet (and its tests) use.
OWNED_BY_HPCDET, REFUSED = SBATCH.owned, SBATCH.refused
CLI_ONLY, MASTER_HANDLED = SBATCH.cli_only, SBATCH.master_handled


def refusal(name: str) -> str | None:
    """Why det sbatch refuses option ``name``, as ``--name: reason``; None if it does not."""
    return SBATCH.refusal(name)


def identity_settings(script: str) -> list[Setting]:
    """The settings of ``script``'s directives that would change who the job runs as, read
    as sbatch reads them (:mod:`hpcdet.runas.directives`); none where sbatch would refuse the
    directives outright (det sbatch reports those, naming the script)."""
    try:
        settings = directives.sbatch_settings(script)
    except directives.DirectiveError:
        return []
    return [setting for setting in settings if setting[0] in directives.SBATCH_IDENTITY]


def check_not_refused(settings: Iterable[Setting]) -> None:
    """Raise :class:`ValidationError` listing every refused option in ``settings``."""
    engine.check_not_refused(SBATCH, settings, lambda setting: refusal(setting[0]))
