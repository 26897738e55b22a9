"""Helpers of the checkpoint context's Determined calls: copying selected files, merging
the metadata of a sharded checkpoint, and :class:`DownloadMode`.

Kept apart from :mod:`hpcdet.core._checkpoint` so that module stays about the
single-writer path.
"""

from __future__ import annotations

import enum
import json
import pathlib
import shutil
from collections.abc import Callable, Mapping
from typing import Any

Selector = Callable[[str], bool]


def check_steps(metadata: Mapping[str, Any] | None) -> None:
    """Fail before the checkpoint is written, not when the master rejects it."""
    steps = (metadata or {}).get("steps_completed", 0)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"metadata['steps_completed'] must be an int >= 0, not {steps!r}")


class DownloadMode(enum.Enum):
    """How ``download()`` and ``restore_path()`` share work between the ranks of a node
    (Determined's names and values).

    hpcdet reads a ``shared_fs``/``directory`` checkpoint in place, so there is nothing to
    share; on an object store each calling rank downloads its own copy. Both modes are
    accepted and neither requires the ranks to call in step.
    """

    LocalWorkersShareDownload = "LOCAL_WORKERS_SHARE_DOWNLOAD"
    NoSharedDownload = "NO_SHARED_DOWNLOAD"


def copy_selected(src: pathlib.Path, dst: pathlib.Path, selector: Selector | None) -> None:
    """Copy the files under ``src`` whose relative POSIX path ``selector`` accepts (all
    when None) into ``dst``, keeping the layout; symlinks are copied as links."""
    dst.mkdir(parents=True, exist_ok=True)
    for file in sorted(src.rglob("*")):
        if file.is_dir() and not file.is_symlink():
            continue
        relative = file.relative_to(src).as_posix()
        if selector is not None and not selector(relative):
            continue
        target = dst / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, target, follow_symlinks=False)


def read_metadata(path: pathlib.Path) -> dict[str, Any]:
    """The ``metadata.json`` of the checkpoint directory ``path`` ({} when it has none)."""
    try:
        loaded = json.loads((path / "metadata.json").read_text())
    except FileNotFoundError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def merge_metadata(
    all_metadata: list[Mapping[str, Any]],
) -> tuple[dict[str, Any], dict[str, list[int]]]:
    """Merge each rank's metadata (Determined's rules); returns ``(merged, conflicts)``.

    Dictionaries under the same key merge recursively; any other key given by several
    ranks must hold equal values, else it is a conflict: ``{"/a/b": [ranks]}``.
    """
    merged: dict[str, Any] = {}
    owners: dict[str, list[int]] = {}
    conflicts: dict[str, list[int]] = {}
    for rank, metadata in enumerate(all_metadata):
        _merge_into(merged, metadata, rank, "", owners, conflicts)
    return merged, conflicts


def _merge_into(merged: dict[str, Any], metadata: Mapping[str, Any], rank: int, prefix: str,
                owners: dict[str, list[int]], conflicts: dict[str, list[int]]) -> None:
    for key, value in metadata.items():
        full_key = f"{prefix}/{key}"
        owners.setdefault(full_key, []).append(rank)
        if isinstance(value, Mapping) and isinstance(merged.get(key, {}), dict):
            _merge_into(merged.setdefault(key, {}), value, rank, full_key, owners, conflicts)
        elif key in merged and merged[key] != value:
            conflicts[full_key] = sorted(set(owners[full_key]))
        else:
            merged[key] = value


def conflict_message(conflicts: Mapping[str, list[int]]) -> str:
    """The error for metadata that ranks disagree on, one key a line."""
    lines = [f"    {key} given by ranks {ranks}" for key, ranks in sorted(conflicts.items())]
    return "refusing to store a sharded checkpoint with metadata conflicts:\n" + "\n".join(lines)
