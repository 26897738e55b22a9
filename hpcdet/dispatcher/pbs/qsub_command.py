"""``det qsub``'s client side: qsub's options read as qsub reads them, and the request body.

The options come from the script's ``#PBS`` directives, then the command line, which wins
(:mod:`hpcdet.dispatcher.pbs.qsub_options`); the environment is read here as qsub reads it
(``-V``, ``-v``, the ``PBS_O_*`` values of the user's shell). The master runs qsub and
tracks the job as a command task. ``det`` reaches this module through
:func:`hpcdet.dispatcher.batch_commands.batch_command`. See docs/qsub.md.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence

from hpcdet.dispatcher.batch_commands import (
    ENV_NAME,
    BatchCommand,
    Prepared,
    exportable,
    read_script,
)
from hpcdet.dispatcher.options import Setting
from hpcdet.dispatcher.pbs.qsub_options import (
    CLI_ATTRIBUTES,
    CLI_ONLY,
    PREFIX_VARIABLE,
    CommandLine,
    attribute,
    check_not_refused,
    directive_prefix,
    is_set,
    merge,
    parse_command_line,
    parse_words,
    render_setting,
    script_words,
)
from hpcdet.dispatcher.pbs.task import check_script
from hpcdet.errors import ValidationError

# What qsub copies from the submitter's shell into the job as PBS_O_<NAME>.
ORIGIN_VARIABLES = ("HOME", "LANG", "LOGNAME", "PATH", "MAIL", "SHELL", "TZ")
# Never exported with -V: PBS sets its own for the job; DET_* may hold credentials.
_EXCLUDED_PREFIXES = ("PBS_", "DET_")


class QsubCommand(BatchCommand):
    """``det qsub``: qsub's options, a PBS master."""

    name = "qsub"
    scheduler = "pbs"

    def local_answer(self, argv: Sequence[str]) -> str | None:
        """``--help`` and ``--version`` (qsub's one long option) before the script."""
        for word in argv:
            if word in ("--help", "--version"):
                return word[2:]
            if word == "--" or not word.startswith("-"):
                break
        return None

    def prepare(self, argv: Sequence[str], environ: Mapping[str, str], cwd: str,
                read_stdin: Callable[[], bytes | None]) -> Prepared:
        return prepare(argv, environ, cwd, read_stdin)

    def submitted_line(self, job_id: str) -> str:
        return job_id  # qsub prints the job id alone


def prepare(argv: Sequence[str], environ: Mapping[str, str], cwd: str,
            read_stdin: Callable[[], bytes | None]) -> Prepared:
    """Read the script and the options, merge them and build the request body."""
    command = parse_command_line(argv)
    check_not_refused(command.settings)  # qsub -I needs no script: say so first
    warnings: list[str] = []
    script, wrap, name = _script_or_command(command, cwd, read_stdin)
    directives: list[Setting] = []
    if script is not None:
        prefix = directive_prefix(command.settings, environ.get(PREFIX_VARIABLE))
        directives = script_directives(script, prefix, name)
        warnings += _foreign_directives(script)
    settings = merge(directives, command.settings)
    check_not_refused(settings)
    body = {"scheduler": "pbs", "script": script, "wrap": wrap, "script_name": name,
            "args": [], "options": master_options(settings), "cwd": cwd,
            "environment": job_environment(settings, environ, cwd, warnings),
            "test_only": False}
    flags = {"wait"} if attribute(settings, "block") == "true" else set()
    if is_set(settings, "z"):
        flags.add("silent")
    return Prepared(body, settings, warnings, frozenset(flags),
                    [" ".join(render_setting(setting)) for setting in settings])


def _script_or_command(command: CommandLine, cwd: str, read_stdin: Callable[[], bytes | None],
                       ) -> tuple[str | None, str | None, str]:
    """(script, None, name) or, for ``-- executable [args]``, (None, command, name)."""
    if command.executable:
        if not command.operands:
            raise ValidationError("qsub --: give the executable to run")
        return None, shlex.join(command.operands), os.path.basename(command.operands[0])
    if len(command.operands) > 1:
        raise ValidationError(f"qsub takes one script, not {shlex.join(command.operands)}; "
                              "a command with arguments goes after --")
    script, name = read_script(command.operands, cwd, read_stdin, stdin_name="STDIN",
                               check=check_script)
    return script, None, name


def script_directives(script: str, prefix: str, name: str) -> list[Setting]:
    """The settings of the script's directives; anything but options there is refused."""
    words = script_words(script, prefix, name)
    parsed = parse_words(words)
    if parsed.operands or parsed.executable:
        stray = words[len(words) - len(parsed.operands) - int(parsed.executable)]
        raise ValidationError(f"{stray.where}: {stray.text!r} is not a qsub option (a "
                              f"{prefix} line holds options only)")
    return parsed.settings


def _foreign_directives(script: str) -> list[str]:
    """det qsub reads #PBS lines only; #SBATCH ones are someone else's."""
    if any(line.startswith("#SBATCH") for line in script.split("\n")):
        return ["the script's #SBATCH lines are ignored: det qsub reads #PBS lines only "
                "(det sbatch reads #SBATCH lines)"]
    return []


def master_options(settings: Sequence[Setting]) -> list[list[str | None]]:
    """The settings the master acts on (det qsub's own ones left out)."""
    return [[letter, value] for letter, value in settings
            if letter not in CLI_ONLY
            and not (letter == "W" and (value or "").split("=")[0] in CLI_ATTRIBUTES)]


def job_environment(settings: Sequence[Setting], environ: Mapping[str, str], cwd: str,
                    warnings: list[str]) -> dict[str, str]:
    """The variables the job starts with, as qsub gives them: the PBS_O_* values, all of
    the user's variables with ``-V``, and the ``-v`` ones (a named variable without a value
    takes the user's; ``-v`` wins over ``-V``)."""
    exported = exportable(environ, warnings, _EXCLUDED_PREFIXES) if is_set(settings, "V") \
        else {}
    for letter, item in settings:
        if letter != "v" or item is None:
            continue
        name, has_value, value = item.partition("=")
        if not ENV_NAME.match(name):
            raise ValidationError(f"-v: {name!r} is not a valid variable name")
        if has_value:
            exported[name] = value
        elif name in environ:
            exported[name] = environ[name]
    for name in ORIGIN_VARIABLES:
        if name in environ and not any(char in environ[name] for char in "\n\r\x00"):
            exported[f"PBS_O_{name}"] = environ[name]
    exported["PBS_O_WORKDIR"] = cwd
    return exported


COMMAND = QsubCommand()
