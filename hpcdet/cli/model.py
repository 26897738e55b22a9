"""``det model`` (alias ``m``): the model registry, as Determined's ``det model``.

A model has a name unique on the cluster and numbered versions, each pointing at one
checkpoint (registered from, e.g., the best checkpoint of a search); a registered checkpoint
is never deleted by checkpoint GC. ``det model download`` fetches a version's checkpoint as
``det checkpoint download`` does. Tables for people, ``--json`` for scripts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.actions import verb_command
from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import format_time, print_answer, print_json, render_fields, render_table

SORT_KEYS = ("name", "description", "creation_time", "last_updated_time", "num_versions",
             "workspace")


def _path(name: str, *rest: str) -> str:
    """``/models/NAME/...`` with the name quoted (a name never changes the route)."""
    return "/models/" + "/".join([quote(name, safe=""), *rest])


@click.group(cls=AliasedGroup, aliases={"ls": "list", "versions": "list-versions"})
def model() -> None:
    """Manage the model registry: models and their versions (checkpoints)."""


@model.command("create")
@click.argument("name")
@click.option("-d", "--description", default="", help="What the model is.")
@click.option("-w", "--workspace", metavar="NAME",
              help="Share it in this workspace (editor role needed); default: yours alone.")
@JSON_OPTION
@pass_state
def create(state: CliState, name: str, description: str, workspace: str | None,
           as_json: bool) -> None:
    """Create model NAME (names are unique on the cluster)."""
    body: dict[str, Any] = {"name": name, "description": description}
    if workspace is not None:
        body["workspace"] = workspace
    answer = state.client().post("/models", body)
    print_answer(answer, as_json, lambda a: model_text(a["model"]))


@model.command("list")
@click.option("-w", "--workspace-names", "workspaces", metavar="NAMES",
              help="Only models in these comma-separated workspaces.")
@click.option("--sort-by", type=click.Choice(SORT_KEYS), default="last_updated_time",
              show_default=True, help="Sort models by this field.")
@click.option("--order-by", type=click.Choice(("asc", "desc")), default="asc",
              show_default=True, help="Ascending or descending.")
@click.option("--archived/--no-archived", default=None,
              help="Only archived (or only unarchived) models; default: both.")
@JSON_OPTION
@pass_state
def list_models(state: CliState, workspaces: str | None, sort_by: str, order_by: str,
                archived: bool | None, as_json: bool) -> None:
    """List the models you may see."""
    params: dict[str, Any] = {"sort_by": sort_by, "order_by": order_by}
    if workspaces:
        params["workspace"] = workspaces
    if archived is not None:
        params["archived"] = "true" if archived else "false"
    answer = state.client().get("/models", params)
    print_answer(answer, as_json, lambda a: models_table(a.get("models") or []))


def models_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det model list`` shows."""
    return render_table(
        ["ID", "Name", "Workspace", "Owner", "Versions", "Labels", "Archived", "Created",
         "Last updated", "Description"],
        [[m.get("id"), m.get("name"), m.get("workspace"), m.get("owner"),
          m.get("num_versions"), m.get("labels"), m.get("archived"),
          format_time(m.get("created_at")), format_time(m.get("updated_at")),
          m.get("description")] for m in rows])


def model_text(m: Mapping[str, Any]) -> str:
    """One model as ``key: value`` lines (``det model describe``)."""
    metadata = m.get("metadata") or {}
    fields = [("ID", m.get("id")), ("Name", m.get("name")),
              ("Description", m.get("description")), ("Workspace", m.get("workspace")),
              ("Owner", m.get("owner")), ("Labels", m.get("labels")),
              ("Archived", m.get("archived")), ("Versions", m.get("num_versions")),
              ("Created", format_time(m.get("created_at"))),
              ("Last updated", format_time(m.get("updated_at"))),
              ("Metadata", json.dumps(metadata, sort_keys=True) if metadata else None),
              ("Notes", m.get("notes"))]
    return f"Model {m.get('name')}\n" + render_fields(fields)


def versions_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The table of versions ``det model list-versions`` and ``describe`` show."""
    def row(v: Mapping[str, Any]) -> list[Any]:
        c = v.get("checkpoint") or {}
        return [v.get("version"), v.get("name"), c.get("trial_id"), c.get("experiment_id"),
                c.get("steps_completed"), v.get("checkpoint_uuid"), c.get("state"),
                c.get("validation_metrics"), v.get("comment"),
                format_time(v.get("created_at"))]
    return render_table(["Version", "Name", "Trial", "Experiment", "Steps", "Checkpoint UUID",
                         "State", "Validation metrics", "Comment", "Registered"],
                        [row(v) for v in rows])


@model.command("describe")
@click.argument("name")
@click.option("--version", type=click.IntRange(min=-1), default=-1, show_default=True,
              help="Which version to show with the model (-1: the latest).")
@JSON_OPTION
@pass_state
def describe(state: CliState, name: str, version: int, as_json: bool) -> None:
    """Show model NAME (a name or an id) and one of its versions."""
    answer = state.client().get(_path(name, "versions"))
    chosen = _pick_version(answer.get("model_versions") or [], version, name)
    if as_json:
        print_json({"model": answer["model"], "model_version": chosen})
        return
    click.echo(model_text(answer["model"]))
    if chosen is not None:
        click.echo("\n" + versions_table([chosen]))


def _pick_version(versions: Sequence[Mapping[str, Any]], number: int,
                  name: str) -> Mapping[str, Any] | None:
    """Version ``number`` (-1: the latest; None when there is none yet)."""
    if number == -1:
        return max(versions, key=lambda v: int(v.get("version") or 0), default=None)
    for v in versions:
        if v.get("version") == number:
            return v
    raise CliError(f"model {name} has no version {number} (det model list-versions {name})")


@model.command("register-version")
@click.argument("name")
@click.argument("uuid")
@click.option("--name", "version_name", default="", help="A name for the version.")
@click.option("--comment", default="", help="A comment on the version.")
@JSON_OPTION
@pass_state
def register_version(state: CliState, name: str, uuid: str, version_name: str, comment: str,
                     as_json: bool) -> None:
    """Register checkpoint UUID as the next version of model NAME.

    The checkpoint is then kept by checkpoint garbage collection for as long as a version
    points at it.
    """
    answer = state.client().post(_path(name, "versions"), {
        "checkpoint_uuid": uuid, "name": version_name, "comment": comment})
    if as_json:
        print_json(answer)
        return
    v = answer["model_version"]
    click.echo(f"Registered checkpoint {uuid} as version {v.get('version')} of model "
               f"{v.get('model_name')}\n")
    click.echo(versions_table([v]))


@model.command("list-versions")
@click.argument("name")
@JSON_OPTION
@pass_state
def list_versions(state: CliState, name: str, as_json: bool) -> None:
    """List the versions of model NAME."""
    answer = state.client().get(_path(name, "versions"))
    if as_json:
        print_json(answer)
        return
    click.echo(model_text(answer["model"]) + "\n")
    versions = answer.get("model_versions") or []
    click.echo(versions_table(versions) if versions else
               f"No versions yet: det model register-version {name} CHECKPOINT_UUID")


@model.command("delete")
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@pass_state
def delete(state: CliState, name: str, yes: bool) -> None:
    """Delete model NAME and its versions (their checkpoints stay, no longer kept for it)."""
    if not yes:
        click.confirm(f"Delete model {name} and all its versions?", abort=True)
    state.client().delete(_path(name))
    click.echo(f"Deleted model {name}")


@model.command("move")
@click.argument("name")
@click.option("-w", "--workspace", "workspace", required=True, metavar="NAME",
              help="The workspace to move it to (editor role needed there).")
@pass_state
def move(state: CliState, name: str, workspace: str) -> None:
    """Move model NAME to a workspace."""
    state.client().post(_path(name, "move"), {"workspace": workspace})
    click.echo(f"Moved model {name} to workspace {workspace}")


model.add_command(verb_command("archive", "Archive model NAME (no new versions until "
                               "unarchived).", "name", _path, "Archived model {}"))
model.add_command(verb_command("unarchive", "Unarchive model NAME.", "name", _path,
                               "Unarchived model {}"))


@model.command("download")
@click.argument("name")
@click.option("--version", type=click.IntRange(min=-1), default=-1, show_default=True,
              help="Which version (-1: the latest).")
@click.option("-o", "--output-dir", type=click.Path(file_okay=False, path_type=Path),
              metavar="DIR", help="Where to put the files [default: checkpoints/UUID].")
@click.option("--force", is_flag=True, help="Replace DIR if it exists and is not empty.")
@click.pass_context
def download(ctx: click.Context, name: str, version: int, output_dir: Path | None,
             force: bool) -> None:
    """Download the checkpoint of a version of model NAME (as det checkpoint download)."""
    from hpcdet.cli.checkpoint import download as checkpoint_download

    state = ctx.find_object(CliState)
    assert state is not None
    answer = state.client().get(_path(name, "versions"))
    chosen = _pick_version(answer.get("model_versions") or [], version, name)
    if chosen is None:
        raise CliError(f"model {name} has no versions yet")
    ctx.invoke(checkpoint_download, uuid=chosen["checkpoint_uuid"], output_dir=output_dir,
               force=force)
