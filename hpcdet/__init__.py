"""hpcdet: a Determined-style training platform for Slurm (and later PBS) clusters.

Components live in subpackages: ``master`` (Flask REST API, database, reconciler),
``dispatcher`` (scheduler backends and job-script rendering), ``harness`` (runs inside
the job), ``cli`` (the ``det`` command) and ``core`` (the trial-side Core API).

What Determined's ``determined`` package offers at the top level is here too, so
``import hpcdet as det`` is the only change a Determined script needs: ``det.core``,
``det.pytorch``, ``det.LOG_FORMAT``, ``det.get_cluster_info()`` (``ClusterInfo``,
``TrialInfo``), ``det.InvalidHP``.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hpcdet._info import ClusterInfo, TrialInfo, get_cluster_info
    from hpcdet.job.early_exit import InvalidHP as InvalidHP

__version__ = "0.1.0"

# The format Determined's tutorials pass to logging.basicConfig: level first, so that
# log viewers (Determined's WebUI, hpcdet's log filters) can filter lines by level.
LOG_FORMAT = "%(levelname)s: [%(process)s] %(name)s: %(message)s"

_SUBPACKAGES = ("pytorch", "core", "launch")
_INFO_NAMES = ("get_cluster_info", "ClusterInfo", "TrialInfo")
# Where the other names of the top level live, imported on first use: `det` imports
# hpcdet (its package) at every start, and needs none of them.
_LAZY_NAMES = {"InvalidHP": "hpcdet.job.early_exit",
               **{name: "hpcdet._info" for name in _INFO_NAMES}}

__all__ = ["LOG_FORMAT", "ClusterInfo", "InvalidHP", "TrialInfo", "get_cluster_info"]


def __getattr__(name: str) -> object:
    """``hpcdet.pytorch`` (and ``hpcdet.core``, the ClusterInfo API, InvalidHP) on first use, as
    ``import determined as det; det.pytorch.PyTorchTrial`` works: ``import hpcdet`` itself
    must not import torch."""
    import importlib

    if name in _SUBPACKAGES:
        return importlib.import_module(f"hpcdet.{name}")
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    raise AttributeError(f"module 'hpcdet' has no attribute {name!r}")
