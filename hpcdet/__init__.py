"""hpcdet: a Determined-style training platform for Slurm (and later PBS) clusters.

Components live in subpackages: ``master`` (Flask REST API, database, reconciler),
``dispatcher`` (scheduler backends and job-script rendering), ``harness`` (runs inside
the job), ``cli`` (the ``det`` command) and ``core`` (the trial-side Core API).
"""

from hpcdet.harness.early_exit import InvalidHP as InvalidHP  # light: standard library only

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``hpcdet.pytorch`` (and ``hpcdet.core``) on first use, as ``import determined as det;
    det.pytorch.PyTorchTrial`` works: ``import hpcdet`` itself must not import torch."""
    if name in ("pytorch", "core"):
        import importlib

        return importlib.import_module(f"hpcdet.{name}")
    raise AttributeError(f"module 'hpcdet' has no attribute {name!r}")
