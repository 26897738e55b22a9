"""Benchmarks of the training harness: the PyTorchTrial trainer and checkpoint I/O.

Subcommands (``bench/harness.py SUBCOMMAND --help`` describes each in full):

throughput
    samples/s of the digits model and of a larger synthetic MLP (about 1 s per epoch on
    one core) trained through ``hpcdet.pytorch.PyTorchTrial`` vs the same model in a
    hand-written ``torch.distributed`` (DDP) loop: same job shape, same run, alternating;
    the ratio trial/ddp has target >= 0.97. See ``bench/_harness_throughput.py``.

    How to reproduce
        .venv/bin/python bench/harness.py throughput   # both workloads, ~4.5 min on 2 cores
        .venv/bin/python bench/harness.py throughput --workloads mlp --repeats 6 --json

checkpoint
    MB/s of saving and restoring a state dict of 10, 100 and 500 MB through hpcdet's
    ``CheckpointContext`` (store_path/restore_path) vs plain ``torch.save``/``torch.load``
    on the same file system, fsync on both sides, cold reads; the ratio has target >= 0.9.
    See ``bench/_harness_checkpoint.py``.

    How to reproduce
        .venv/bin/python bench/harness.py checkpoint          # ~1 minute
        .venv/bin/python bench/harness.py checkpoint --sizes 10 100 --dir /shared/ckpt

Each prints the command that reproduces it first (stderr), then a table, or one JSON
object with ``--json``. Temporary files are removed at the end, also on Ctrl-C/SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # its sibling modules, also when loaded by path

import _harness_checkpoint as checkpoint  # noqa: E402
import _harness_throughput as throughput  # noqa: E402
from _common import terminate_as_interrupt  # noqa: E402

SUBCOMMANDS: dict[str, Callable[[Any], None]] = {
    "throughput": throughput.add_parser,
    "checkpoint": checkpoint.add_parser,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for add_parser in SUBCOMMANDS.values():
        add_parser(subparsers)
    return parser.parse_args(argv)


def machine() -> dict[str, Any]:
    """Where the figures were taken."""
    import torch

    return {"python": platform.python_version(), "torch": torch.__version__,
            "cpus": os.cpu_count(), "platform": platform.platform()}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    words = sys.argv[1:] if argv is None else list(argv)
    print(f"# reproduce: cd {shlex.quote(str(REPO))} && .venv/bin/python bench/harness.py "
          f"{shlex.join(words)}", file=sys.stderr, flush=True)
    with terminate_as_interrupt():
        result = args.run(args)
    result["machine"] = machine()
    print(json.dumps(result, indent=2) if args.json else args.render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
