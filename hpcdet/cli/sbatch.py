"""``det sbatch``: submit an unmodified batch script through the master, as sbatch would.

The options are read exactly as sbatch reads them (#SBATCH lines, then ``SBATCH_*``
variables, then the command line; :mod:`hpcdet.dispatcher.slurm.sbatch_options`), merged here,
where the user's environment and working directory are known, and sent to the master,
which runs sbatch and tracks the job as a command task (``det task``). See docs/sbatch.md.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from hpcdet import __version__
from hpcdet.cli.main import CliState
from hpcdet.cli.output import warn
from hpcdet.dispatcher.slurm.sbatch_options import (
    CLI_ONLY,
    Setting,
    check_not_refused,
    environment_settings,
    is_set,
    merge,
    parse_command_line,
    parse_words,
    render_settings,
    script_words,
    value_of,
)
from hpcdet.dispatcher.slurm.task import ENV_NAME, MAX_SCRIPT_BYTES, check_script
from hpcdet.errors import ValidationError

USAGE = "[SBATCH OPTIONS] SCRIPT [ARGS]..."
# Variables never exported to the job: Slurm's own (it sets them for the job) and sbatch's
# input variables (already read); DET_* ones except these, as they may hold credentials.
_EXCLUDED_PREFIXES = ("SLURM_", "SBATCH_", "DET_")
_KEPT_DET = frozenset({"DET_MASTER", "DET_USER", "DET_MASTER_CERT_FILE"})
# Read-only in bash, which would complain when the job's environment file sets them.
_BASH_READ_ONLY = frozenset({"SHELLOPTS", "BASHOPTS", "BASH_VERSINFO", "EUID", "PPID", "UID"})
_FINISHED = frozenset({"COMPLETED", "CANCELED", "ERROR"})


@dataclasses.dataclass(frozen=True)
class Prepared:
    """What ``det sbatch`` sends to the master, and how it behaves afterwards."""

    body: dict[str, Any]
    settings: list[Setting]
    warnings: list[str]

    def flag(self, name: str) -> bool:
        return is_set(self.settings, name)


# Names the workspace a task is shared with (det sbatch takes only sbatch's own options).
WORKSPACE_VARIABLE = "DET_WORKSPACE"


class RawArguments(click.Command):
    """Hands every argument to the command untouched: sbatch's options are not click's
    (``-phigh`` must not read as ``-h``), so they are parsed by sbatch's own rules."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.params["argv"] = list(args)
        return []


@click.command("sbatch", cls=RawArguments, add_help_option=False, options_metavar=USAGE)
@click.pass_context
def sbatch(ctx: click.Context, argv: list[str]) -> None:
    """Submit a batch script to Slurm through the master, as sbatch does.

    Takes sbatch's options (long, short or abbreviated) from the script's #SBATCH lines,
    SBATCH_* variables and the command line, in sbatch's order of precedence, and prints
    "Submitted batch job N" (just N with --parsable). The master runs sbatch and follows
    the job as a command task: det task list, describe, logs, kill.

    The job runs as the master's Slurm user, not as you: files it writes belong to that
    user. It starts with your environment (--export), in the directory you ran det sbatch
    from (or --chdir), which must exist on the master's host. --output/--error files are
    written as sbatch writes them, and the master keeps its own copy for det task logs.
    --array, --clusters, --uid, --gid, --get-user-env, --bbf and --comment are refused
    (docs/sbatch.md says why); --wait waits for the job and exits with its exit code;
    --test-only shows what would be submitted. -h/--help shows this help.
    With DET_WORKSPACE=NAME the task is shared with workspace NAME's members.
    """
    state = ctx.ensure_object(CliState)
    command = parse_command_line(argv)
    if _answered_locally(ctx, command.settings):
        return
    prepared = prepare(argv, os.environ, os.getcwd(), _read_stdin)
    for message in prepared.warnings:
        warn(message)
    if prepared.flag("verbose"):
        for word in render_settings(prepared.settings):
            click.echo(f"det sbatch: {word}", err=True)
    body = dict(prepared.body)
    if os.environ.get(WORKSPACE_VARIABLE):  # sbatch's options leave no room for one of ours
        body["workspace"] = os.environ[WORKSPACE_VARIABLE]
    answer = state.client().post("/tasks", body)
    if prepared.flag("test-only"):
        click.echo(test_only_text(answer))
        return
    _report(prepared, answer["task"])
    if prepared.flag("wait"):
        raise click.exceptions.Exit(wait_for(state, answer["task"]["id"]))


def _answered_locally(ctx: click.Context, settings: Sequence[Setting]) -> bool:
    """--help, --usage and --version need no master."""
    if is_set(settings, "help"):
        click.echo(ctx.get_help())
    elif is_set(settings, "usage"):
        click.echo(ctx.get_usage())
    elif is_set(settings, "version"):
        click.echo(f"det sbatch (hpcdet {__version__})")
    else:
        return False
    return True


def _read_stdin() -> bytes | None:
    return None if sys.stdin.isatty() else sys.stdin.buffer.read(MAX_SCRIPT_BYTES + 1)


# ---- preparing the request -----------------------------------------------------------------


def prepare(argv: Sequence[str], environ: Mapping[str, str], cwd: str,
            read_stdin: Callable[[], bytes | None]) -> Prepared:
    """Read the script and every option source, merge them and build the request body."""
    command = parse_command_line(argv)
    wrap = value_of(command.settings, "wrap")
    warnings: list[str] = []
    if wrap is not None:
        if command.operands:
            raise ValidationError("script arguments are not permitted with --wrap")
        script, name, args = None, "wrap", []
        directives: list[Setting] = []
    else:
        script, name = read_script(command.operands[:1], cwd, read_stdin)
        args = command.operands[1:]
        directives = script_directives(script, name, warnings)
    settings = merge(directives, environment_settings(environ), command.settings)
    check_not_refused(settings)
    if script is not None and not is_set(settings, "ignore-pbs"):
        warnings += _foreign_directives(script)
    body = {"script": script, "wrap": wrap, "script_name": name, "args": list(args),
            "options": master_options(settings, cwd), "cwd": cwd,
            "environment": export_environment(settings, environ, cwd, warnings),
            "test_only": is_set(settings, "test-only")}
    return Prepared(body, settings, warnings)


def read_script(operand: Sequence[str], cwd: str,
                read_stdin: Callable[[], bytes | None]) -> tuple[str, str]:
    """The script's text and file name (``sbatch`` when it comes from standard input)."""
    if operand:
        path = Path(cwd, operand[0])
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_SCRIPT_BYTES + 1)
        except OSError as exc:
            raise ValidationError(f"cannot read the batch script {operand[0]}: "
                                  f"{exc.strerror}") from exc
        where = operand[0]
    else:
        stdin = read_stdin()
        if stdin is None:
            raise ValidationError("no batch script: give SCRIPT, --wrap=COMMAND, or the "
                                  "script on standard input")
        data, where = stdin, "sbatch"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{where}: the batch script is not UTF-8 text") from exc
    try:
        check_script(text)
    except ValidationError as exc:
        raise ValidationError(f"{where}: {exc}") from exc
    return text, os.path.basename(where)


def script_directives(script: str, name: str, warnings: list[str]) -> list[Setting]:
    """The script's #SBATCH settings; a stray word ends them, as it does for sbatch."""
    words = script_words(script, name)
    parsed = parse_words(words)
    if parsed.operands:
        stray = words[len(words) - len(parsed.operands)]
        warnings.append(f"{stray.where}: sbatch stops reading #SBATCH options at "
                        f"{stray.text!r}; the options after it are ignored")
    return parsed.settings


def _foreign_directives(script: str) -> list[str]:
    """sbatch translates #PBS and #BSUB lines; det sbatch reads only #SBATCH ones."""
    found = {magic for line in script.split("\n") for magic in ("#PBS", "#BSUB")
             if line.startswith(magic)}
    return [f"the script's {magic} lines are ignored: det sbatch reads #SBATCH lines only "
            "(--ignore-pbs silences this)" for magic in sorted(found)]


def master_options(settings: Sequence[Setting], cwd: str) -> list[list[str | None]]:
    """The settings the master acts on, ``--nodefile`` read here as a ``--nodelist``."""
    options: list[list[str | None]] = []
    for name, value in settings:
        if name == "nodefile" and value is not None:
            options.append(["nodelist", read_nodefile(value, cwd)])
        elif name not in CLI_ONLY:
            options.append([name, value])
    return options


def read_nodefile(path: str, cwd: str) -> str:
    """The hosts of a ``--nodefile`` (one or more per line, or comma-separated)."""
    try:
        text = Path(cwd, path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"--nodefile={path}: cannot read it: {exc.strerror}") from exc
    hosts = [host for host in text.replace(",", " ").split() if host]
    if not hosts:
        raise ValidationError(f"--nodefile={path}: lists no hosts")
    return ",".join(hosts)


# ---- the environment -----------------------------------------------------------------------


def export_environment(settings: Sequence[Setting], environ: Mapping[str, str], cwd: str,
                       warnings: list[str]) -> dict[str, str] | None:
    """The variables the job starts with (``--export``), or None for ``--export=NONE``."""
    export = value_of(settings, "export") or "ALL"
    items = [item for item in export.split(",") if item]
    words = {item.upper() for item in items}
    if "NONE" in words:
        if len(items) > 1 or is_set(settings, "export-file"):
            raise ValidationError("--export=NONE cannot be combined with other variables")
        return None
    exported = _exportable(environ, warnings) if "ALL" in words else {}
    for item in items:
        name, has_value, value = item.partition("=")
        if item.upper() == "ALL" or ("ALL" in words and name in exported):
            continue  # with ALL, the caller's own value wins (man sbatch)
        _check_name(name, "--export")
        if has_value:
            exported[name] = value
        elif name in environ:
            exported[name] = environ[name]
    exported.update(_export_file(value_of(settings, "export-file"), cwd))
    return exported


def _exportable(environ: Mapping[str, str], warnings: list[str]) -> dict[str, str]:
    exported: dict[str, str] = {}
    unsafe: list[str] = []
    for name, value in environ.items():
        if not _exportable_name(name):
            continue
        if any(char in value for char in "\n\r\x00"):
            unsafe.append(name)
        else:
            exported[name] = value
    if unsafe:
        warnings.append(f"not exported to the job (the value holds a line break): "
                        f"{', '.join(sorted(unsafe))}")
    return exported


def _exportable_name(name: str) -> bool:
    if not ENV_NAME.match(name) or name in _BASH_READ_ONLY:
        return False
    return not name.startswith(_EXCLUDED_PREFIXES) or name in _KEPT_DET


def _export_file(path: str | None, cwd: str) -> dict[str, str]:
    """``--export-file``: NAME=value definitions separated by NUL characters."""
    if path is None:
        return {}
    if path.isdigit():
        raise ValidationError("--export-file: give a file name; file descriptors are not "
                              "passed to the master")
    try:
        text = Path(cwd, path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"--export-file={path}: cannot read it: {exc.strerror}") from exc
    exported: dict[str, str] = {}
    for item in filter(None, text.split("\x00")):
        name, _, value = item.partition("=")
        _check_name(name.strip(), "--export-file")
        exported[name.strip()] = value
    return exported


def _check_name(name: str, where: str) -> None:
    if not ENV_NAME.match(name):
        raise ValidationError(f"{where}: {name!r} is not a valid variable name")


# ---- after submitting ----------------------------------------------------------------------


def _report(prepared: Prepared, task: Mapping[str, Any]) -> None:
    if prepared.flag("parsable"):
        click.echo(task["job_id"])
    else:
        click.echo(f"Submitted batch job {task['job_id']}")
    if not prepared.flag("quiet"):
        click.echo(f"det sbatch: task {task['id']} (det task logs {task['id']} -f)", err=True)


def test_only_text(answer: Mapping[str, Any]) -> str:
    """What ``--test-only`` prints: where the task would go and what would run."""
    import shlex

    argv = " ".join(shlex.quote(str(word)) for word in answer.get("argv") or [])
    return (f"det sbatch: --test-only, nothing was submitted.\n"
            f"pool: {answer.get('pool') or '(Slurm default)'}  account: "
            f"{answer.get('account') or '(Slurm default)'}  working directory: "
            f"{answer.get('workdir')}\nthe master would run:\n  {argv}\n"
            f"with this wrapper script (task-NEW stands for the task's id):\n"
            f"{answer.get('script', '')}")


def wait_for(state: CliState, task_id: int) -> int:
    """Poll the task until it ends; its exit status as sbatch --wait gives it."""
    while True:
        task = state.client().get(f"/tasks/{task_id}")["task"]
        if task["state"] in _FINISHED:
            return exit_status(task)
        time.sleep(state.poll_interval)


def exit_status(task: Mapping[str, Any]) -> int:
    """0 for COMPLETED; the job's exit code; 1 when a signal (or nothing) ended it."""
    if task["state"] == "COMPLETED":
        return 0
    code = task.get("exit_code")
    return code if isinstance(code, int) and 0 < code < 128 else 1

