"""``det checkpoint``: list, describe, download and delete checkpoints.

``download`` is :func:`hpcdet.checkpoint_download.download` (shared with the Python SDK):
a direct copy from a readable storage path, else the master's tar, renamed into place only
once complete.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.actions import show_command
from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import format_size, format_time, print_answer, render_fields

# Show a progress bar for downloads larger than this.
PROGRESS_THRESHOLD = 10 * 1024 * 1024


@click.group(cls=AliasedGroup)
def checkpoint() -> None:
    """List, inspect, download and delete checkpoints."""


checkpoint.add_command(show_command(
    "describe", "Show a checkpoint: trial, experiment, steps, state, metrics, metadata, path.",
    lambda uuid: f"/checkpoints/{uuid}", lambda a: describe_text(a["checkpoint"]),
    click.argument("uuid")))


def describe_text(c: Mapping[str, Any]) -> str:
    """The text ``det checkpoint describe`` prints."""
    size = sum(v for v in (c.get("resources") or {}).values() if isinstance(v, int))
    fields = [("experiment", c.get("experiment_id")), ("trial", c.get("trial_id")),
              ("steps completed", c.get("steps_completed")), ("state", c.get("state")),
              ("reported", format_time(c.get("reported_at"))),
              ("storage path", c.get("storage_path")),
              ("size", format_size(size) if c.get("resources") else None),
              (f"searcher metric ({c.get('searcher_metric')})", c.get("searcher_metric_value"))]
    sections = [f"Checkpoint {c.get('uuid')}\n" + render_fields(fields)]
    sections.append(_fields_section("Validation metrics", c.get("validation_metrics")))
    sections.append(_fields_section("Metadata", c.get("metadata")))
    sections.append(_fields_section("Files", c.get("resources")))
    return "\n\n".join(sections)


def _fields_section(title: str, values: Mapping[str, Any] | None) -> str:
    if not values:
        return f"{title}:\n  none"
    return f"{title}:\n" + render_fields(sorted(values.items()))


def checkpoints_table(checkpoints: Sequence[Mapping[str, Any]], metric: str | None, *,
                      as_csv: bool = False) -> str:
    """The table (or CSV) ``det checkpoint list`` and ``det experiment list-checkpoints``
    show."""
    from hpcdet.cli.tables import table_or_csv

    show_time = (lambda v: v) if as_csv else format_time
    rows = [[c.get("uuid"), c.get("trial_id"), c.get("steps_completed"), c.get("state"),
             (c.get("validation_metrics") or {}).get(metric or ""),
             show_time(c.get("reported_at"))] for c in checkpoints]
    return table_or_csv(["UUID", "Trial", "Steps", "State", metric or "Metric", "Reported"],
                        rows, as_csv)


def print_checkpoints(state: CliState, experiment_id: int, *, best: int | None,
                      show_all: bool, as_csv: bool, as_json: bool) -> None:
    """Fetch and print an experiment's checkpoints (table, CSV or JSON)."""
    if as_csv and as_json:
        raise click.UsageError("--csv and --json cannot be used together")
    params: dict[str, Any] = {"state": "ALL" if show_all else "ACTIVE"}
    if best is not None:
        params["best"] = best
    answer = state.client().get(f"/experiments/{experiment_id}/checkpoints", params=params)
    print_answer(answer, as_json, lambda a: checkpoints_table(
        a.get("checkpoints") or [], a.get("searcher_metric"), as_csv=as_csv))


def list_command(name: str) -> click.Command:
    """The checkpoint listing, as ``det checkpoint list`` and ``det experiment
    list-checkpoints`` (Determined's two names for it)."""

    @click.command(name)
    @click.argument("experiment_id", type=int)
    @click.option("--best", type=click.IntRange(min=1), metavar="N",
                  help="Only the N best by the searcher metric, best first.")
    @click.option("--all", "show_all", is_flag=True,
                  help="Also those deleted by checkpoint garbage collection.")
    @click.option("--csv", "as_csv", is_flag=True, help="Print as CSV.")
    @JSON_OPTION
    @pass_state
    def list_checkpoints(state: CliState, experiment_id: int, best: int | None,
                         show_all: bool, as_csv: bool, as_json: bool) -> None:
        """List an experiment's checkpoints by trial and step (ACTIVE ones unless --all)."""
        print_checkpoints(state, experiment_id, best=best, show_all=show_all, as_csv=as_csv,
                          as_json=as_json)

    return list_checkpoints


checkpoint.add_command(list_command("list"))
experiment_list_checkpoints = list_command("list-checkpoints")


@checkpoint.command("delete")
@click.argument("uuids", nargs=-1, required=True)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_state
def delete(state: CliState, uuids: tuple[str, ...], yes: bool) -> None:
    """Delete checkpoints: their files go, their records stay as DELETED.

    UUIDS are one or more checkpoint UUIDs, separated by spaces or commas. The latest
    checkpoint of a trial that is still running cannot be deleted.
    """
    wanted = list(dict.fromkeys(u.strip() for arg in uuids for u in arg.split(",")
                                if u.strip()))
    if not wanted:
        raise click.UsageError("name at least one checkpoint UUID")
    if not yes and not click.confirm(f"Delete {len(wanted)} checkpoint(s) and their files? "
                                     "This cannot be undone", err=True):
        raise CliError("aborted; nothing was deleted")
    answer = state.client().delete("/checkpoints", {"uuids": wanted})
    deleted = answer.get("deleted") or []
    click.echo(f"Deleted {len(deleted)} checkpoint(s)" + (f": {', '.join(deleted)}"
                                                          if deleted else ""))


@checkpoint.command("download")
@click.argument("uuid")
@click.option("-o", "--output-dir", type=click.Path(file_okay=False, path_type=Path),
              metavar="DIR", help="Where to put the files [default: checkpoints/UUID].")
@click.option("--force", is_flag=True, help="Replace DIR if it exists and is not empty.")
@pass_state
def download(state: CliState, uuid: str, output_dir: Path | None, force: bool) -> None:
    """Download a checkpoint's files into DIR.

    Copies them from the checkpoint's storage path when this host can read it (a shared
    filesystem), else fetches them from the master.
    """
    from hpcdet import checkpoint_download

    target = output_dir or Path("checkpoints") / uuid
    try:
        how = checkpoint_download.download(
            state.client(), uuid, target, force=force, progress=_progress,
            force_hint="choose another -o/--output-dir, or pass --force to replace it")
    except checkpoint_download.DownloadError as exc:
        raise CliError(str(exc)) from None
    click.echo(f"Downloaded checkpoint {uuid} to {target} ({how})")


def _progress(total: int, uuid: str) -> Any:
    """A bar on stderr for large downloads (the SDK passes none)."""
    from hpcdet.checkpoint_download import NoProgress

    if total < PROGRESS_THRESHOLD:
        return NoProgress()
    return click.progressbar(length=total, label=f"Downloading {uuid}", file=sys.stderr,
                             show_pos=False, show_percent=True)
