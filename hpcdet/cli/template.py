"""``det template`` (alias ``tpl``): manage config templates, as Determined's CLI does.

A template is a partial experiment config stored on the master under a name;
``det experiment create --template NAME`` merges it under the experiment's own config.
``describe`` prints the template's config as YAML and nothing else, so
``det template describe NAME > NAME.yaml`` gives back a file ``set`` accepts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.main import CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import format_time, print_json, render_table

# The master's rule (docs/api.md); checked here too so a name that cannot be part of a URL
# path gets a clear message instead of a 404 for a route that does not exist.
NAME_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,128}")


def _check_name(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not NAME_PATTERN.fullmatch(value):
        raise click.BadParameter("a template name is 1 to 128 characters of letters, "
                                 "digits, '.', '_' and '-'", ctx=ctx, param=param)
    return value


NAME_ARGUMENT = click.argument("name", callback=_check_name)
WORKSPACE_OPTION = click.option(
    "-w", "--workspace", metavar="NAME",
    help="Share a new template with workspace NAME's members (needs the editor role there); "
         "without, it is yours and the admins' alone.")
FILE_ARGUMENT = click.argument("config_file", metavar="FILE",
                               type=click.Path(dir_okay=False))


@click.group(cls=AliasedGroup, aliases={"ls": "list", "rm": "remove"})
def template() -> None:
    """Manage config templates that experiments can start from."""


@template.command("list")
@click.option("-d", "--details", is_flag=True, help="Also show each template's config.")
@JSON_OPTION
@pass_state
def list_templates(state: CliState, details: bool, as_json: bool) -> None:
    """List the config templates, sorted by name."""
    answer = state.client().get("/templates")
    if as_json:
        print_json(answer)
        return
    templates = answer.get("templates") or []
    click.echo(templates_table(templates))
    if details:
        for t in templates:
            click.echo(f"\nTemplate {t.get('name')}:\n{indent(config_yaml(t.get('config')))}")


def templates_table(templates: Sequence[Mapping[str, Any]]) -> str:
    """The table ``det template list`` shows."""
    rows = [[t.get("name"), t.get("owner"), format_time(t.get("created_at")),
             format_time(t.get("updated_at"))] for t in templates]
    return render_table(["Name", "Owner", "Created", "Updated"], rows)


@template.command("describe")
@NAME_ARGUMENT
@JSON_OPTION
@pass_state
def describe(state: CliState, name: str, as_json: bool) -> None:
    """Print a template's config as YAML."""
    answer = state.client().get(f"/templates/{name}")
    if as_json:
        print_json(answer)
    else:
        click.echo(config_yaml(answer["template"].get("config")), nl=False)


@template.command("create")
@NAME_ARGUMENT
@FILE_ARGUMENT
@WORKSPACE_OPTION
@pass_state
def create(state: CliState, name: str, config_file: str, workspace: str | None) -> None:
    """Create template NAME from the config in FILE (YAML); fails if NAME exists."""
    text = _read_template(config_file)
    body = {"name": name, "config": text}
    state.client().post("/templates", body if workspace is None else
                        {**body, "workspace": workspace})
    click.echo(f"Created template {name}")


@template.command("set")
@NAME_ARGUMENT
@FILE_ARGUMENT
@WORKSPACE_OPTION
@pass_state
def set_template(state: CliState, name: str, config_file: str, workspace: str | None) -> None:
    """Create template NAME from FILE, or replace its config if it exists.

    Experiments already created from it keep the config they were created with;
    --workspace applies when it is created.
    """
    text = _read_template(config_file)
    body = {"config": text}
    state.client().put(f"/templates/{name}", body if workspace is None else
                       {**body, "workspace": workspace})
    click.echo(f"Set template {name}")


@template.command("remove")
@NAME_ARGUMENT
@pass_state
def remove(state: CliState, name: str) -> None:
    """Remove template NAME (experiments created from it are not affected)."""
    state.client().delete(f"/templates/{name}")
    click.echo(f"Removed template {name}")


def _read_template(path: str) -> str:
    """The file's text, after checking locally that it is a YAML mapping (errors name it)."""
    from hpcdet.cli.config_file import load_config_file

    return load_config_file(path).text


def config_yaml(config: Any) -> str:
    """A config as block-style YAML, keys in the stored order."""
    import yaml

    return str(yaml.safe_dump(config or {}, sort_keys=False, default_flow_style=False))


def indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.rstrip("\n").splitlines())
