"""``det sbatch``'s client side: sbatch's options read as sbatch reads them, and the body.

The options come from the script's ``#SBATCH`` lines, then ``SBATCH_*`` variables, then the
command line (:mod:`hpcdet.dispatcher.slurm.sbatch_options`), merged here, where the
user's environment and working directory are known; the master runs sbatch and tracks the
job as a command task. ``det`` reaches this module through
:func:`hpcdet.dispatcher.batch_commands.batch_command`. See docs/sbatch.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from hpcdet.dispatcher.batch_commands import BatchCommand, Prepared, exportable, read_script
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
from hpcdet.dispatcher.slurm.task import ENV_NAME, check_script
from hpcdet.errors import ValidationError

# Variables never exported to the job: Slurm's own (it sets them for the job) and sbatch's
# input variables (already read); DET_* ones too, but for a few (batch_commands).
_EXCLUDED_PREFIXES = ("SLURM_", "SBATCH_", "DET_")


class SbatchCommand(BatchCommand):
    """``det sbatch``: sbatch's options, a Slurm master."""

    name = "sbatch"
    scheduler = "slurm"

    def local_answer(self, argv: Sequence[str]) -> str | None:
        settings = parse_command_line(argv).settings
        return next((word for word in ("help", "usage", "version")
                     if is_set(settings, word)), None)

    def prepare(self, argv: Sequence[str], environ: Mapping[str, str], cwd: str,
                read_stdin: Callable[[], bytes | None]) -> Prepared:
        return prepare(argv, environ, cwd, read_stdin)

    def submitted_line(self, job_id: str) -> str:
        return f"Submitted batch job {job_id}"


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
        script, name = read_script(command.operands[:1], cwd, read_stdin,
                                   stdin_name="sbatch", check=check_script)
        args = command.operands[1:]
        directives = script_directives(script, name, warnings)
    settings = merge(directives, environment_settings(environ), command.settings)
    check_not_refused(settings)
    if script is not None and not is_set(settings, "ignore-pbs"):
        warnings += _foreign_directives(script)
    body = {"scheduler": "slurm", "script": script, "wrap": wrap, "script_name": name,
            "args": list(args), "options": master_options(settings, cwd), "cwd": cwd,
            "environment": export_environment(settings, environ, cwd, warnings),
            "test_only": is_set(settings, "test-only")}
    flags = frozenset(name for name in ("parsable", "wait", "test-only", "quiet", "verbose")
                      if is_set(settings, name))
    return Prepared(body, settings, warnings, flags,
                    [f"det sbatch: {word}" for word in render_settings(settings)])


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
    exported = exportable(environ, warnings, _EXCLUDED_PREFIXES) if "ALL" in words else {}
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


COMMAND = SbatchCommand()
