"""``det checkpoint``: describe and download checkpoints.

``download`` copies the checkpoint's directory straight from its storage path when this host
can read it (the shared filesystem of the cluster); otherwise the master streams it as a tar.
Either way the files land in a temporary directory beside the target that is renamed into
place only once complete, so an interrupted download never leaves half a checkpoint.
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from hpcdet.cli._lazy import AliasedGroup
from hpcdet.cli.main import CliError, CliState, pass_state
from hpcdet.cli.output import format_size, format_time, print_json, render_fields, render_table
from hpcdet.cli.trial import JSON_OPTION

# Show a progress bar for downloads larger than this.
PROGRESS_THRESHOLD = 10 * 1024 * 1024
_CHUNK = 1024 * 1024


@click.group(cls=AliasedGroup)
def checkpoint() -> None:
    """Inspect and download checkpoints."""


@checkpoint.command("describe")
@click.argument("uuid")
@JSON_OPTION
@pass_state
def describe(state: CliState, uuid: str, as_json: bool) -> None:
    """Show a checkpoint: trial, experiment, steps, state, metrics, metadata, path."""
    answer = state.client().get(f"/checkpoints/{uuid}")
    if as_json:
        print_json(answer)
    else:
        click.echo(describe_text(answer["checkpoint"]))


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


def checkpoints_table(checkpoints: Sequence[Mapping[str, Any]], metric: str | None) -> str:
    """The table ``det experiment list-checkpoints`` shows."""
    rows = [[c.get("uuid"), c.get("trial_id"), c.get("steps_completed"), c.get("state"),
             (c.get("validation_metrics") or {}).get(metric or ""),
             format_time(c.get("reported_at"))] for c in checkpoints]
    return render_table(["UUID", "Trial", "Steps", "State", metric or "Metric", "Reported"],
                        rows)


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
    target = output_dir or Path("checkpoints") / uuid
    _check_target(target, force=force)
    info = state.client().get(f"/checkpoints/{uuid}")["checkpoint"]
    if info.get("state") == "DELETED":
        raise CliError(f"checkpoint {uuid} was deleted by checkpoint garbage collection")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        files = staging / "files"
        source = _readable_dir(info.get("storage_path"))
        if source is not None:
            shutil.copytree(source, files, symlinks=True)
        else:
            _fetch_tar(state, uuid, staging / "checkpoint.tar", files)
        _move_into_place(files, target, force=force)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    how = "copied from " + str(source) if source is not None else "from the master"
    click.echo(f"Downloaded checkpoint {uuid} to {target} ({how})")


def _check_target(target: Path, *, force: bool) -> None:
    if target.exists() and not target.is_dir():
        raise CliError(f"{target} exists and is not a directory")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise CliError(f"{target} is not empty: choose another -o/--output-dir, or pass "
                       "--force to replace it")


def _readable_dir(path: Any) -> Path | None:
    if not isinstance(path, str) or not path:
        return None
    candidate = Path(path)
    return candidate if candidate.is_dir() and os.access(candidate, os.R_OK | os.X_OK) else None


def _fetch_tar(state: CliState, uuid: str, archive: Path, files: Path) -> None:
    """Stream the master's tar of the checkpoint to ``archive`` and unpack it into ``files``."""
    with state.client().stream(f"/checkpoints/{uuid}/download") as response:
        total = int(response.headers.get("Content-Length") or 0)
        with archive.open("wb") as out, _progress(total, uuid) as bar:
            for chunk in response.iter_bytes(_CHUNK):
                out.write(chunk)
                bar.update(len(chunk))
    files.mkdir()
    with tarfile.open(archive, mode="r:") as tar:
        tar.extractall(files, filter="data")


class _NoProgress:
    def update(self, n: int) -> None:
        """Small downloads show no bar."""

    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _progress(total: int, uuid: str) -> Any:
    if total < PROGRESS_THRESHOLD:
        return _NoProgress()
    return click.progressbar(length=total, label=f"Downloading {uuid}", file=sys.stderr,
                             show_pos=False, show_percent=True)


def _move_into_place(files: Path, target: Path, *, force: bool) -> None:
    """Rename ``files`` to ``target``; with ``force`` the old ``target`` goes only after."""
    if target.is_dir() and any(target.iterdir()):
        if not force:  # it filled up while we downloaded
            raise CliError(f"{target} is not empty")
        old = files.parent / "replaced"
        target.rename(old)
    elif target.is_dir():
        target.rmdir()
    files.rename(target)
