"""``det qsub``: submit an unmodified PBS batch script through the master, as qsub would.

The options are read exactly as qsub reads them (the script's #PBS directives, then the
command line, which wins) by the command's client side, which
:func:`hpcdet.dispatcher.batch_commands.batch_command` loads; the master runs qsub and
tracks the job as a command task (``det task``). See docs/qsub.md.
"""

from __future__ import annotations

import click

from hpcdet.cli.sbatch import RawArguments, submit_batch

USAGE = "[QSUB OPTIONS] [SCRIPT | -- EXECUTABLE [ARGS]...]"


@click.command("qsub", cls=RawArguments, add_help_option=False, options_metavar=USAGE)
@click.pass_context
def qsub(ctx: click.Context, argv: list[str]) -> None:
    """Submit a batch script to PBS through the master, as qsub does.

    Takes qsub's options from the script's #PBS directives (or the prefix -C or PBS_DPREFIX
    names) and the command line, which wins, and prints the job id (nothing with -z). The
    master runs qsub and follows the job as a command task: det task list, describe,
    logs, kill. The master must run PBS (resource_manager.type: pbs).

    The job starts with the PBS_O_* values of your shell, PBS_O_WORKDIR being the directory
    you ran det qsub in, plus your variables with -V and those named with -v. -o/-e/-j
    files are written as PBS writes them (default NAME.oSEQ in that directory), and the
    master keeps its own copy for det task logs. -J (arrays), -I (interactive), -X, -G,
    -u and -W group_list/run_as are refused (docs/qsub.md says why); -W block=true waits
    for the job and exits with its exit code. --help shows this help.
    With DET_WORKSPACE=NAME the task is shared with workspace NAME's members.
    """
    submit_batch(ctx, "qsub", argv)
