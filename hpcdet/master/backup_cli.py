"""``det-master backup``, ``restore``, ``migrate`` and ``checkpoints reconcile``: the
database's care around upgrades (docs/admin/backups.md, docs/admin/upgrades.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import click

from hpcdet.master.settings.core import MasterSettings


def _emit(answer: dict[str, Any], as_json: bool, lines: list[str]) -> None:
    """One JSON object for scripts, or the lines for people."""
    if as_json:
        click.echo(json.dumps(answer, indent=2, sort_keys=True))
    else:
        for line in lines:
            click.echo(line)


def _say(line: str) -> None:
    """Progress goes to stderr, so that stdout is the summary (or the JSON) alone."""
    click.echo(line, err=True)


def _run(action: Any, settings: MasterSettings, path: Path, force: bool) -> Any:
    """Run backup or restore; its refusal is one line (exit status 1), no traceback."""
    from hpcdet.master.backups.manifest import BackupError

    try:
        return action(settings, path, force=force, say=_say)
    except BackupError as exc:
        raise click.ClickException(str(exc)) from None


def _format_size(size: int) -> str:
    """Bytes for people (what det's tables show)."""
    from hpcdet.cli.output import format_size

    return format_size(size)


def _path_command(name: str,
                  force_help: str) -> Callable[[Callable[..., None]], click.Command]:
    """The shape of backup and restore: PATH, --force, --json, the master's settings."""
    def decorate(function: Any) -> click.Command:
        for option in (click.pass_obj,
                       click.option("--json", "as_json", is_flag=True,
                                    help="Print one JSON object."),
                       click.option("--force", is_flag=True, help=force_help),
                       click.argument("path", type=click.Path(dir_okay=False, path_type=Path)),
                       click.command(name)):
            function = option(function)
        return cast(click.Command, function)
    return decorate


@_path_command("backup", "Replace PATH if it exists.")
def backup_command(settings: MasterSettings, path: Path, force: bool, as_json: bool) -> None:
    """Back the master's database up into PATH (0600) and PATH.manifest.json (schema
    revision, hpcdet version, checksum). Safe while the master runs: the copy is one
    consistent state of the database."""
    from hpcdet.master.backups.service import backup

    outcome = _run(backup, settings, path, force)
    _emit(outcome.as_json(), as_json, [
        f"backed up the {outcome.database} database at schema {outcome.schema_revision} "
        f"into {path} ({_format_size(outcome.size)}, {outcome.seconds:.1f} s)"])


@_path_command("restore", "Replace a database that is not empty (SQLite: the old file is "
               "kept as NAME.pre-restore; PostgreSQL: its tables are dropped in the restore's "
               "transaction).")
def restore_command(settings: MasterSettings, path: Path, force: bool, as_json: bool) -> None:
    """Restore a backup made by det-master backup into the master's database (stop the
    master first). Refuses a backup of a newer schema than this hpcdet's, and a database
    that is not empty unless --force; then reports checkpoints on disk that the database
    does not know, and the reverse (it deletes nothing)."""
    from hpcdet.master.backups.service import restore

    outcome = _run(restore, settings, path, force)
    _emit(outcome.as_json(), as_json, [
        f"restored {path} (schema {outcome.schema_revision}, made "
        f"{outcome.details['backup_created_at']}) into the {outcome.database} database "
        f"({outcome.seconds:.1f} s)"])


class _NoUpgrade(click.ClickException):
    """``migrate --check``'s own status for a database it cannot plan an upgrade of."""

    exit_code = 2  # schema_check.TOO_NEW


@click.command("migrate")
@click.option("--check", is_flag=True,
              help="Only say what an upgrade would do; exit 0 up to date, 1 an upgrade is "
                   "pending, 2 none is possible (the database is newer than this hpcdet, or "
                   "cannot be read).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_obj
def migrate_command(settings: MasterSettings, check: bool, as_json: bool) -> None:
    """Upgrade the database to this hpcdet's schema (the master does it too, at its start);
    with --check, only list the pending migrations."""
    from hpcdet.master.db import DatabaseBusyError, SchemaTooNewError, migrate
    from hpcdet.master.schema_check import UnreadableDatabase, describe, plan_upgrade

    try:
        plan = plan_upgrade(settings.db_url)
    except UnreadableDatabase as exc:
        raise (_NoUpgrade if check else click.ClickException)(str(exc)) from None
    if not check:
        try:
            migrate(settings.db_url)
        except (SchemaTooNewError, DatabaseBusyError) as exc:
            raise click.ClickException(str(exc)) from None
    lines = describe(plan)
    if not check and plan.pending:
        lines = [*lines[:2], f"applied {len(plan.pending)} migration(s): now at {plan.head}"]
    _emit(plan.as_json() | {"applied": not check and bool(plan.pending)}, as_json, lines)
    if check:
        sys.exit(plan.status)


@click.group("checkpoints")
def checkpoints_group() -> None:
    """The checkpoint index against the checkpoint directories."""


@checkpoints_group.command("reconcile")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_obj
def reconcile_command(settings: MasterSettings, as_json: bool) -> None:
    """List checkpoints on disk that the database does not know (e.g. after a restore) and
    ACTIVE checkpoints of the database missing on disk. It deletes and changes nothing."""
    from hpcdet.master.backups.service import reconcile_checkpoints
    from hpcdet.master.db import HEAD_REVISION, schema_revision

    revision = schema_revision(settings.db_url)
    if revision != HEAD_REVISION:
        raise click.ClickException(f"the database is at schema {revision}, not {HEAD_REVISION}:"
                                   " run det-master migrate first (this command changes "
                                   "nothing)")
    audit = reconcile_checkpoints(settings)
    lines = [f"unknown to the database: {path}" for path in audit.unknown_on_disk]
    lines += [f"missing on disk: {m['path']} (checkpoint {m['uuid']}, trial {m['trial_id']})"
              for m in audit.missing_on_disk]
    lines += [f"not readable by the master: {root}" for root in audit.unreadable]
    _emit(audit.as_json(), as_json, [*lines, audit.summary()])


def register(group: click.Group) -> None:
    """Add these commands to ``det-master``."""
    for command in (backup_command, restore_command, migrate_command, checkpoints_group):
        group.add_command(command)
