"""``bench/harness.py checkpoint``: checkpoint save/restore MB/s, hpcdet vs plain torch.

What is measured
    One state dict of ``--sizes`` MB (float32 tensors of 4 MB, like a model's layers) is
    written and read back, alternately through the two paths, ``--repeats`` times each:

    * **hpcdet**: ``CheckpointContext.store_path()`` (a ``<uuid>.partial`` directory,
      ``torch.save`` into it, ``metadata.json``, fsync of every file and directory, rename,
      fsync of the parent) and ``restore_path(uuid)`` + ``torch.load``;
    * **plain**: ``torch.save`` to a file in the same directory, then ``fsync`` of that file
      (and of the directory, so the file's name is durable too), and ``torch.load``.

    Both sides fsync: a checkpoint that is not on disk is not a checkpoint, and timing one
    side without fsync would compare page-cache copies to disk writes. Before every read
    the files are evicted from the page cache (``posix_fadvise(DONTNEED)`` on each file,
    after its fsync), so both reads come from the disk, as a restore on another node or
    in a later job does. The checkpoint context is the one a job's chief gets, with no
    master to register with (registration is one small HTTP POST, not I/O).

    MB/s = state-dict bytes (the tensors' ``nbytes``) / seconds; medians over the repeats.
    The ratio hpcdet/plain has target >= 0.9 for both save and restore.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch

from hpcdet.core import DummyCheckpointContext, DummyDistributedContext, DummyTrainContext, Info

TENSOR_MB = 4
MB = 1_000_000
TARGET_RATIO = 0.9
FILE_NAME = "state.pt"


def make_state(size_mb: int) -> dict[str, torch.Tensor]:
    """A state dict of ``size_mb`` MB: float32 tensors of ``TENSOR_MB`` MB (the last smaller)."""
    floats = size_mb * MB // 4
    per_tensor = TENSOR_MB * MB // 4
    generator = torch.Generator().manual_seed(size_mb)
    state = {}
    for index, start in enumerate(range(0, floats, per_tensor)):
        count = min(per_tensor, floats - start)
        state[f"layer{index}.weight"] = torch.rand(count, generator=generator)
    return state


def state_bytes(state: dict[str, torch.Tensor]) -> int:
    return sum(t.nbytes for t in state.values())


def checkpoint_context(root: pathlib.Path) -> DummyCheckpointContext:
    """The chief's checkpoint context, writing under ``root`` and registering nowhere."""
    dist = DummyDistributedContext()
    return DummyCheckpointContext(root, dist, info=Info.dummy({}), train=DummyTrainContext(dist))


def fsync_path(path: pathlib.Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def evict(path: pathlib.Path) -> None:
    """Drop ``path`` (a file, or every file under a directory) from the page cache."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for file in files:
        fd = os.open(file, os.O_RDONLY)
        try:
            os.fsync(fd)  # dirty pages cannot be dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


class Sides:
    """The two ways to save and restore, writing under one directory."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root
        self.context = checkpoint_context(root / "hpcdet")
        (root / "plain").mkdir(parents=True, exist_ok=True)

    def save_hpcdet(self, state: dict[str, torch.Tensor]) -> str:
        with self.context.store_path({"steps_completed": 1}) as (path, storage_id):
            torch.save(state, path / FILE_NAME)
        return storage_id

    def restore_hpcdet(self, storage_id: str) -> dict[str, torch.Tensor]:
        with self.context.restore_path(storage_id) as path:
            loaded: dict[str, torch.Tensor] = torch.load(path / FILE_NAME, weights_only=True)
        return loaded

    def save_plain(self, state: dict[str, torch.Tensor]) -> pathlib.Path:
        path = self.root / "plain" / FILE_NAME
        torch.save(state, path)
        fsync_path(path)
        fsync_path(path.parent)
        return path

    def restore_plain(self, path: pathlib.Path) -> dict[str, torch.Tensor]:
        loaded: dict[str, torch.Tensor] = torch.load(path, weights_only=True)
        return loaded


def one_round(
    sides: Sides, state: dict[str, torch.Tensor], hpcdet_first: bool
) -> dict[str, float]:
    """Save and restore once through each side (order alternates); seconds per operation."""
    order = [round_hpcdet, round_plain] if hpcdet_first else [round_plain, round_hpcdet]
    return {key: value for side in order for key, value in side(sides, state).items()}


def round_plain(sides: Sides, state: dict[str, torch.Tensor]) -> dict[str, float]:
    save, path = timed(lambda: sides.save_plain(state))
    evict(path)
    restore, loaded = timed(lambda: sides.restore_plain(path))
    _check_equal(state, loaded)
    path.unlink()
    return {"plain_save": save, "plain_restore": restore}


def round_hpcdet(sides: Sides, state: dict[str, torch.Tensor]) -> dict[str, float]:
    save, storage_id = timed(lambda: sides.save_hpcdet(state))
    evict(sides.context.checkpoint_dir / storage_id)
    restore, loaded = timed(lambda: sides.restore_hpcdet(storage_id))
    _check_equal(state, loaded)
    shutil.rmtree(sides.context.checkpoint_dir / storage_id)
    return {"hpcdet_save": save, "hpcdet_restore": restore}


def _check_equal(state: dict[str, torch.Tensor], loaded: dict[str, torch.Tensor]) -> None:
    if state.keys() != loaded.keys() or not all(torch.equal(state[k], loaded[k]) for k in state):
        raise AssertionError("the restored state dict differs from the saved one")


def measure_size(root: pathlib.Path, size_mb: int, repeats: int) -> dict[str, Any]:
    """Medians of ``repeats`` rounds for one state-dict size."""
    state = make_state(size_mb)
    nbytes = state_bytes(state)
    sides = Sides(root)
    one_round(sides, state, True)  # warm-up: first-touch allocations, torch's lazy imports
    rounds = [one_round(sides, state, i % 2 == 1) for i in range(repeats)]
    row: dict[str, Any] = {"size_mb": nbytes / MB, "repeats": repeats}
    for key in ("plain_save", "plain_restore", "hpcdet_save", "hpcdet_restore"):
        row[f"{key}_mb_s"] = nbytes / MB / statistics.median(r[key] for r in rounds)
    for op in ("save", "restore"):
        row[f"{op}_ratio"] = row[f"hpcdet_{op}_mb_s"] / row[f"plain_{op}_mb_s"]
    row["met"] = min(row["save_ratio"], row["restore_ratio"]) >= TARGET_RATIO
    return row


def run(args: argparse.Namespace) -> dict[str, Any]:
    parent = pathlib.Path(args.dir).expanduser() if args.dir else None
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    root = pathlib.Path(tempfile.mkdtemp(prefix="hpcdet-bench-ckpt-", dir=parent))
    try:
        rows = [measure_size(root, size, args.repeats) for size in args.sizes]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"benchmark": "checkpoint", "directory": str(root.parent), "fsync": "both sides",
            "reads": "cold (page cache evicted)", "target_ratio": TARGET_RATIO, "rows": rows}


def render(result: dict[str, Any]) -> str:
    lines = [f"checkpoint save/restore in {result['directory']} (fsync on both sides; "
             "cold reads), MB/s medians",
             "| MB | plain save | hpcdet save | ratio | plain restore | hpcdet restore | "
             "ratio | target >= 0.9 |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for row in result["rows"]:
        lines.append(
            f"| {row['size_mb']:.0f} | {row['plain_save_mb_s']:.0f} | "
            f"{row['hpcdet_save_mb_s']:.0f} | {row['save_ratio']:.3f} | "
            f"{row['plain_restore_mb_s']:.0f} | {row['hpcdet_restore_mb_s']:.0f} | "
            f"{row['restore_ratio']:.3f} | {'met' if row['met'] else 'NOT met'} |")
    return "\n".join(lines)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("checkpoint", help="checkpoint save/restore MB/s",
                                   description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 500],
                        help="state-dict sizes in MB (default 10 100 500)")
    parser.add_argument("--repeats", type=int, default=5, help="rounds per size (default 5)")
    parser.add_argument("--dir", help="parent directory to write in (default $TMPDIR); use "
                        "the checkpoint storage's file system")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run, render=render)
