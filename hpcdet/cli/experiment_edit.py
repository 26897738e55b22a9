"""``det experiment set|label|move|delete|continue|fork|download-model-def``.

Flags and output follow Determined's ``det experiment`` where they apply:

* ``set description|name|labels|max-slots|weight|priority|gc-policy`` change the setting
  in the experiment's config (``gc-policy`` shows what it would delete and asks, unless
  ``--yes``, then runs checkpoint garbage collection at once with the new policy).
* ``label add|remove``; ``move ID WORKSPACE PROJECT``; ``delete ID [--yes]`` (only an ended
  experiment; its checkpoint files and job directories go with it).
* ``continue ID``: an ended single-trial experiment trains on from its latest checkpoint,
  with ``--config-file``/``--config`` overrides (e.g. a larger ``searcher.max_length``).
* ``fork ID`` or ``fork --trial ID``: a new experiment from a copy of the source's config
  (with a trial: its hyperparameters as constants and the ``single`` searcher) and its
  stored model definition, with the same overrides; it starts from scratch.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import print_json, warn

_CONFIG_OPTION = click.option(
    "--config", "overrides", multiple=True, metavar="KEY=VALUE",
    help="Override one config key (dotted path, VALUE is YAML). Repeatable.")
_CONFIG_FILE_OPTION = click.option(
    "--config-file", type=click.Path(dir_okay=False), metavar="FILE",
    help="A YAML file of config keys to use (before the --config overrides).")


def _patch(state: CliState, experiment_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = state.client().patch(f"/experiments/{experiment_id}", dict(body))
    for note in answer.get("notes") or []:
        click.echo(f"Note: {note}", err=True)
    return answer


# ---- set ---------------------------------------------------------------------------------


@click.group("set")
def set_group() -> None:
    """Change an experiment's settings."""


def _set_command(name: str, key: str, value_type: Any, help_text: str) -> click.Command:
    @click.command(name, help=help_text)
    @click.argument("experiment_id", type=int)
    @click.argument("value", type=value_type, metavar=key.upper())
    @pass_state
    def run(state: CliState, experiment_id: int, value: Any) -> None:
        _patch(state, experiment_id, {key: value})
        shown = "none" if value is None else value
        click.echo(f"Set `{key}` of experiment {experiment_id} to {shown}")

    return run


class _SlotsType(click.ParamType[int | None]):
    """An integer >= 1, or ``none`` for no limit (as Determined's ``none_or_int``)."""

    name = "N|none"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int | None:
        if isinstance(value, int) or value is None:
            return value
        if str(value).lower() == "none":
            return None
        try:
            number = int(value)
        except ValueError:
            self.fail(f"{value!r} is not an integer or 'none'", param, ctx)
        if number < 1:
            self.fail(f"{number} is not >= 1", param, ctx)
        return number


for _name, _key, _type, _help in (
        ("description", "description", str, "Set the description."),
        ("name", "name", str, "Set the name."),
        ("max-slots", "max_slots", _SlotsType(),
         "Set resources.max_slots (stored; hpcdet does not act on it)."),
        ("weight", "weight", click.FloatRange(min=0, min_open=True),
         "Set resources.weight (fair share) of the jobs submitted from now on."),
        ("priority", "priority", click.IntRange(1, 99),
         "Set resources.priority (1-99) of the jobs submitted from now on.")):
    set_group.add_command(_set_command(_name, _key, _type, _help))


@set_group.command("labels")
@click.argument("experiment_id", type=int)
@click.argument("labels", nargs=-1)
@pass_state
def set_labels(state: CliState, experiment_id: int, labels: tuple[str, ...]) -> None:
    """Replace all labels with LABELS (none given: remove every label)."""
    answer = _patch(state, experiment_id, {"labels": list(labels)})
    shown = ", ".join(answer["experiment"].get("labels") or []) or "none"
    click.echo(f"Set labels of experiment {experiment_id} to {shown}")


@set_group.command("gc-policy")
@click.argument("experiment_id", type=int)
@click.option("--save-experiment-best", type=click.IntRange(min=0), required=True,
              metavar="N", help="Number of best checkpoints per experiment to keep.")
@click.option("--save-trial-best", type=click.IntRange(min=0), required=True, metavar="N",
              help="Number of best checkpoints per trial to keep.")
@click.option("--save-trial-latest", type=click.IntRange(min=0), required=True, metavar="N",
              help="Number of latest checkpoints per trial to keep.")
@click.option("--yes", is_flag=True, help="Do not show the preview or ask.")
@pass_state
def set_gc_policy(state: CliState, experiment_id: int, save_experiment_best: int,
                  save_trial_best: int, save_trial_latest: int, yes: bool) -> None:
    """Set the checkpoint GC policy and run garbage collection with it now.

    Only checkpoints of ended trials are deleted (as Determined's checkpoint GC).
    """
    policy = {"save_experiment_best": save_experiment_best,
              "save_trial_best": save_trial_best, "save_trial_latest": save_trial_latest}
    if not yes:
        _preview_gc(state, experiment_id, policy)
        if not click.confirm("Changing the checkpoint garbage collection policy of an "
                             "experiment may result in the unrecoverable deletion of "
                             "checkpoints. Do you wish to proceed?", err=True):
            raise CliError("aborted; the policy is unchanged")
    answer = _patch(state, experiment_id, {"gc_policy": policy})
    gc = answer.get("gc") or {}
    click.echo(f"Set GC policy of experiment {experiment_id} to "
               + ", ".join(f"{k}={v}" for k, v in policy.items()))
    click.echo(f"Deleted {len(gc.get('deleted') or [])} checkpoint(s)")
    if gc.get("failed"):
        raise CliError(f"{len(gc['failed'])} checkpoint(s) could not be deleted (the master "
                       "retries; see `det master logs`): " + ", ".join(gc["failed"]))


def _preview_gc(state: CliState, experiment_id: int, policy: Mapping[str, int]) -> None:
    from hpcdet.cli.checkpoint import checkpoints_table

    answer = state.client().get(f"/experiments/{experiment_id}/preview-gc", params=dict(policy))
    doomed = answer.get("checkpoints") or []
    if doomed:
        click.echo("The following checkpoints will be deleted by applying this GC policy:")
        click.echo(checkpoints_table(doomed, answer.get("searcher_metric")))
    click.echo(f"This policy will delete {len(doomed)} checkpoint(s).")


# ---- label, move, delete -----------------------------------------------------------------


@click.group("label")
def label_group() -> None:
    """Add or remove an experiment's labels."""


def _label_command(action: str) -> click.Command:
    @click.command(action, help=f"{action.capitalize()} one label.")
    @click.argument("experiment_id", type=int)
    @click.argument("label")
    @pass_state
    def run(state: CliState, experiment_id: int, label: str) -> None:
        answer = state.client().post(f"/experiments/{experiment_id}/labels/{action}",
                                     {"label": label})
        quoted = repr(label)
        if answer.get("changed"):
            where = "to" if action == "add" else "from"
            done = "Added" if action == "add" else "Removed"
            click.echo(f"{done} label {quoted} {where} experiment {experiment_id}")
        elif action == "add":
            click.echo(f"Experiment {experiment_id} already has label {quoted}")
        else:
            click.echo(f"Experiment {experiment_id} has no label {quoted}")

    return run


label_group.add_command(_label_command("add"))
label_group.add_command(_label_command("remove"))


@click.command("move")
@click.argument("experiment_id", type=int)
@click.argument("workspace_name")
@click.argument("project_name")
@pass_state
def move(state: CliState, experiment_id: int, workspace_name: str, project_name: str) -> None:
    """Move an experiment into a project of a workspace (editor role there needed)."""
    state.client().post(f"/experiments/{experiment_id}/move",
                        {"workspace": workspace_name, "project": project_name})
    click.echo(f'Moved experiment {experiment_id} to project "{project_name}"')


@click.command("delete")
@click.argument("experiment_id", type=int)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_state
def delete(state: CliState, experiment_id: int, yes: bool) -> None:
    """Delete an ended experiment: its checkpoints, logs, metrics and job directories.

    For a recoverable alternative, see `det experiment archive`.
    """
    if not yes and not click.confirm(
            "Deleting an experiment will result in the unrecoverable deletion of all "
            "associated logs, checkpoints, and other metadata associated with the "
            "experiment. For a recoverable alternative, see the 'det experiment archive' "
            "command. Do you still wish to proceed?", err=True):
        raise CliError("aborted; nothing was deleted")
    answer = state.client().delete(f"/experiments/{experiment_id}")
    for what in answer.get("left_behind") or []:
        warn(f"left behind (remove it yourself): {what}")
    click.echo(f"Deleted experiment {experiment_id} "
               f"({answer.get('checkpoints_deleted', 0)} checkpoint(s))")


# ---- continue, fork, model definition ---------------------------------------------------


def _config_doc(config_file: str | None, overrides: tuple[str, ...],
                base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``base``, then the config file's keys merged over it, then the ``--config``s."""
    from hpcdet.cli.config_file import load_config_file
    from hpcdet.cli.overrides import apply_overrides, parse_override

    doc = dict(base or {})
    if config_file is not None:
        doc = _merged(doc, load_config_file(config_file).data)
    return apply_overrides(doc, [parse_override(arg) for arg in overrides])


def _merged(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _yaml(doc: Mapping[str, Any]) -> str:
    import yaml

    return str(yaml.safe_dump(dict(doc), sort_keys=False))


@click.command("continue")
@click.argument("experiment_id", type=int)
@_CONFIG_FILE_OPTION
@_CONFIG_OPTION
@click.option("-f", "--follow-first-trial", "follow", is_flag=True,
              help="Follow the continued trial's logs until the experiment ends.")
@pass_state
def continue_experiment(state: CliState, experiment_id: int, config_file: str | None,
                        overrides: tuple[str, ...], follow: bool) -> None:
    """Resume or recover training of an ended single-trial experiment.

    Its trial is resubmitted from its latest checkpoint with the config changed by
    --config-file and --config (e.g. --config searcher.max_length.batches=2000).
    """
    override = _config_doc(config_file, overrides)
    answer = state.client().post(f"/experiments/{experiment_id}/continue",
                                 {"config": _yaml(override) if override else ""})
    start = answer.get("latest_checkpoint") or "scratch (no checkpoint left)"
    click.echo(f"Continued experiment {experiment_id}")
    click.echo(f"Trial {answer.get('trial_id')} resumes from {start}", err=True)
    if follow:
        from hpcdet.cli.experiment import Progress, wait_for_end

        final = wait_for_end(state, experiment_id, Progress())
        click.echo(f"Experiment {experiment_id} ended {final}", err=True)
        if final != "COMPLETED":
            click.get_current_context().exit(1)


@click.command("fork")
@click.argument("experiment_id", type=int, required=False)
@click.option("--trial", "trial_id", type=int, metavar="ID",
              help="Fork this trial: its hyperparameters become constants and the searcher "
                   "single.")
@_CONFIG_FILE_OPTION
@_CONFIG_OPTION
@click.option("-w", "--workspace", metavar="NAME", help="Put the fork in workspace NAME.")
@click.option("-p", "--project", metavar="NAME", help="Put the fork in project NAME.")
@JSON_OPTION
@pass_state
def fork(state: CliState, experiment_id: int | None, trial_id: int | None,
         config_file: str | None, overrides: tuple[str, ...], workspace: str | None,
         project: str | None, as_json: bool) -> None:
    """Create a new experiment from a copy of EXPERIMENT_ID's (or a trial's) config and
    model definition, changed by --config-file and --config. It starts from scratch."""
    if (experiment_id is None) == (trial_id is None):
        raise click.UsageError("name an EXPERIMENT_ID or --trial ID (one of them)")
    if project is not None and workspace is None:
        raise click.UsageError("--project needs --workspace (projects live in a workspace)")
    client = state.client()
    hparams: Mapping[str, Any] | None = None
    if trial_id is not None:
        trial = client.get(f"/trials/{trial_id}")["trial"]
        experiment_id, hparams = int(trial["experiment_id"]), trial.get("hparams") or {}
    assert experiment_id is not None
    base = client.get(f"/experiments/{experiment_id}")["experiment"]["config"]
    if hparams is not None:
        from hpcdet.expconf import single_trial_config  # lazy: det --help stays light

        base = single_trial_config(base, hparams)
    doc = _config_doc(config_file, overrides, base)
    body = {"config": _yaml(doc), "workspace": workspace, "project": project}
    answer = client.post(f"/experiments/{experiment_id}/fork", body)
    for warning in answer.get("warnings") or []:
        warn(str(warning))
    if as_json:
        print_json(answer)
        return
    click.echo(f"Created experiment {answer['experiment']['id']}")
    source = f"trial {trial_id} of experiment {experiment_id}" if trial_id is not None \
        else f"experiment {experiment_id}"
    click.echo(f"Forked from {source}", err=True)




@click.command("download-model-def")
@click.argument("experiment_id", type=int)
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), default=".",
              show_default=True, metavar="DIR", help="Where to write the .tgz.")
@pass_state
def download_model_def(state: CliState, experiment_id: int, output_dir: Path) -> None:
    """Download the model definition the experiment was created with, as
    DIR/experiment_ID_model_def.tgz."""
    target = output_dir / f"experiment_{experiment_id}_model_def.tgz"
    output_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    try:
        with state.client().stream(f"/experiments/{experiment_id}/model-def") as response, \
                partial.open("wb") as out:
            for chunk in response.iter_bytes(1024 * 1024):
                out.write(chunk)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    click.echo(str(target))
