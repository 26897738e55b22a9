"""Config template routes: list, describe, create, set (create or replace), remove.

A template is a partial experiment config stored under a name; ``POST /experiments`` with
``"template": NAME`` merges it under the submitted config (``hpcdet.expconf.merge``) and
stores the merged result, so later edits to the template never touch past experiments.

Replacing or removing a template is its owner's alone, even in a workspace
(:func:`authz.require_runs_as_self`): whoever names it runs what it holds as themselves,
trusting its owner, and a removed name could be taken again with other content.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from hpcdet import expconf
from hpcdet.errors import ConfigError
from hpcdet.master.api.access import template_for
from hpcdet.master.api.auth import current_user
from hpcdet.master.api.blueprint import bp
from hpcdet.master.api.common import db, json_body, settings
from hpcdet.master.errors import Conflict, Invalid
from hpcdet.master.model_base import iso_time
from hpcdet.master.models import Template, utcnow
from hpcdet.master.scheduling.submission import check_sbatch_args, parse_config
from hpcdet.master.security import authz
from hpcdet.master.security.shown_config import owner_view, shown_config
from hpcdet.master.security.workspaces import placement_for

NAME_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,128}")


@bp.get("/templates")
def list_templates() -> Any:
    """The templates the caller may see, sorted by name (in Python, so SQLite and
    PostgreSQL agree)."""
    seen = authz.visible(settings(), current_user(), Template.owner, Template.workspace_id)
    rows = sorted(db().scalars(select(Template).where(*seen)).all(), key=lambda t: t.name)
    return {"templates": [template_json(t) for t in rows]}


@bp.get("/templates/<name>")
def describe_template(name: str) -> Any:
    """One template by name."""
    return {"template": template_json(template_for(name))}


@bp.post("/templates")
def create_template() -> Any:
    """Store a new template; 409 if the name is taken (names are one namespace for all).

    ``"workspace": NAME`` shares it with the workspace (editor role needed).
    """
    owner = current_user()
    body = json_body()
    name = _valid_name(body.get("name"))
    config = _template_config(body.get("config"))
    workspace_id, _ = placement_for(db(), settings(), owner, body.get("workspace"), None)
    if db().get(Template, name) is not None:
        raise _name_taken(name)
    now = utcnow()
    template = Template(name=name, config=config, owner=owner, workspace_id=workspace_id,
                        created_at=now, updated_at=now)
    db().add(template)
    _commit_or_conflict(name)
    return {"template": template_json(template)}, 201


@bp.put("/templates/<name>")
def set_template(name: str) -> Any:
    """Create the template, or replace its config (the owner stays its creator).

    Replacing is its owner's alone (403 for anyone else); one the caller cannot see is a 404.
    """
    owner = current_user()
    name = _valid_name(name)
    body = json_body()
    config = _template_config(body.get("config"))
    template = db().get(Template, name)
    now = utcnow()
    if template is None:
        workspace_id, _ = placement_for(db(), settings(), owner, body.get("workspace"), None)
        template = Template(name=name, owner=owner, workspace_id=workspace_id, created_at=now)
        db().add(template)
    else:
        template = _owners_template(name, "replace")
    template.config, template.updated_at = config, now
    _commit_or_conflict(name)
    return {"template": template_json(template)}


@bp.delete("/templates/<name>")
def remove_template(name: str) -> Any:
    """Remove the template; only its owner may (403), unseen ones are a 404."""
    db().delete(_owners_template(name, "remove"))
    db().commit()
    return {}


def _owners_template(name: str, doing: str) -> Template:
    """The template, for its owner only (404 if unseen, 403 for anyone else)."""
    template = template_for(name)
    authz.require_runs_as_self(settings(), current_user(), template.owner,
                               f"{doing} template {name!r}", "create a template of your own "
                               "under another name (det template create)")
    return template


def template_json(t: Template) -> dict[str, Any]:
    """The ``Template`` shape of docs/api.md (its config as the caller may see it)."""
    return {"name": t.name, "owner": t.owner, "workspace_id": t.workspace_id,
            "created_at": iso_time(t.created_at),
            "updated_at": iso_time(t.updated_at),
            "config": shown_config(t.config,
                                   to_owner=owner_view(settings(), current_user(), t.owner))}


def template_for_experiment(name: Any, actor: str) -> Template | None:
    """The template an experiment names (None if it names none); 400 if there is no such
    template or ``actor`` may not see it."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise Invalid("bad_request", "template: must be a template name (a string)")
    template = db().get(Template, name)
    if template is None or authz.access(db(), settings(), actor, template.owner,
                                        template.workspace_id) is authz.Access.NONE:
        raise Invalid("bad_request", f"template: no template named {name!r}")
    return template


def _valid_name(name: Any) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise Invalid("bad_request", "name: a template name is 1 to 128 characters "
                      f"of letters, digits, '.', '_' and '-', got {name!r}")
    return name


def _template_config(text: Any) -> dict[str, Any]:
    """Parse and sanity-check the YAML text; every problem goes into ``details``."""
    if not isinstance(text, str):
        raise Invalid("bad_request", "config: must be the template's YAML text")
    try:
        doc = parse_config(text)
    except ConfigError as exc:
        limit = "limit" in exc.title
        raise ConfigError(exc.errors, title="the template config is over a YAML limit" if limit
                          else "the template config is not a YAML mapping") from exc
    errors = expconf.validate(doc, phase="sanity")
    if errors:
        raise ConfigError(errors, title="the template config is invalid")
    check_sbatch_args(doc, "<template>")
    return doc


def _commit_or_conflict(name: str) -> None:
    """Commit; a concurrent create of the same name loses with 409, not 500."""
    try:
        db().commit()
    except IntegrityError:
        db().rollback()
        raise _name_taken(name) from None


def _name_taken(name: str) -> Conflict:
    return Conflict("conflict", f"template {name!r} already exists (replace it with "
                    "PUT /templates/<name>, `det template set`)")
