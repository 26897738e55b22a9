"""``python3 -m hpcdet.launch.torch_distributed [--] (--trial MODULE:CLASS | SCRIPT...)``.

hpcdet's counterpart of Determined's ``determined.launch.torch_distributed``, so an
experiment written for Determined keeps its ``entrypoint``. Unlike Determined's, this
launcher spawns no workers: srun already started one rank per slot, and the harness
(``python -m hpcdet.harness``) has joined them into a ``torch.distributed`` group before
the entrypoint runs. So the launcher only selects what every rank runs:

* ``--trial model_def:MyTrial``: the ``PyTorchTrial`` subclass, loaded from the working
  directory and trained by :func:`hpcdet.pytorch.run_trial_class`;
* ``SCRIPT...``: a command (``python3 train.py --epochs 3``), run as the harness runs
  script entrypoints (a Python script or module in this process).

Arguments before a ``--`` are ``torch.distributed.run`` overrides in Determined
(``--nproc_per_node`` ...); there is no torchrun here, so they are refused with a message.

In a job, the harness translates an ``entrypoint`` naming this module (or Determined's)
without running it as a module. Run directly (``python3 -m hpcdet.launch.torch_distributed
--trial model_def:MyTrial`` in the context directory), it trains in this one process:
with the job's ranks inside a job, with the Core API's dummy contexts elsewhere.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hpcdet.errors import HpcdetError
from hpcdet.harness.entrypoint import EXIT_USAGE, Entrypoint, parse_entrypoint, run_entrypoint
from hpcdet.launch._command import command_args


def translate(args: Sequence[str]) -> Entrypoint:
    """The entrypoint the launcher's ``args`` stand for (raises EntrypointError)."""
    return parse_entrypoint(["python3", "-m", "hpcdet.launch.torch_distributed", *args])


def main(argv: Sequence[str] | None = None) -> int:
    """Run what the launcher's arguments name in this process; returns the exit code."""
    args = command_args(argv, __doc__)
    if args is None:
        return 0
    try:
        entry = translate(args)
    except HpcdetError as exc:
        print(f"hpcdet launcher: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return run_entrypoint(entry)


if __name__ == "__main__":
    sys.exit(main())
