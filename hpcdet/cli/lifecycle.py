"""``det experiment pause|activate|cancel|kill|archive|unarchive``.

Each asks the master to change the experiment's lifecycle and prints the state it answers
with; the master does the work (asking running trials to checkpoint and stop, withdrawing
queued jobs from Slurm, resubmitting from the latest checkpoints).
"""

from __future__ import annotations

import click

from hpcdet.cli.main import CliState, pass_state

# command -> (route action, help text)
_ACTIONS = {
    "pause": "Checkpoint running trials and free their Slurm allocations; withdraw queued jobs.",
    "activate": "Resume a paused experiment: trials are resubmitted from their latest checkpoints.",
    "cancel": "Stop the experiment: running trials checkpoint, then stop; queued jobs withdrawn.",
    "kill": "Stop an experiment at once, cancelling its Slurm jobs.",
    "archive": "Hide an ended experiment from default lists (all its data is kept).",
    "unarchive": "Show an archived experiment in default lists again.",
}


def add_lifecycle_commands(group: click.Group) -> None:
    """Add one command per lifecycle action to ``group`` (``det experiment``)."""
    for action, help_text in _ACTIONS.items():
        group.add_command(_command(action, help_text))


def _command(action: str, help_text: str) -> click.Command:
    @click.command(action, help=help_text)
    @click.argument("experiment_id", type=int)
    @pass_state
    def run(state: CliState, experiment_id: int) -> None:
        answer = state.client().post(f"/experiments/{experiment_id}/{action}")
        experiment = answer["experiment"]
        archived = " (archived)" if experiment.get("archived") else ""
        click.echo(f"Experiment {experiment_id}: {experiment['state']}{archived}")

    return run
