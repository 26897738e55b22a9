"""Pure searcher arithmetic (Determined's ``master/pkg/searcher``): no I/O.

Use :func:`make_searcher` with the experiment's ``searcher`` and
``hyperparameters`` sections and ``reproducibility.experiment_seed``.
"""

from __future__ import annotations

from typing import Any

from hpcdet.searcher.asha import AdaptiveAshaSearch, AshaBracket, AshaConfig
from hpcdet.searcher.base import Action, Create, Searcher, Stop, TrialRequest
from hpcdet.searcher.grid import grid_axis, grid_points
from hpcdet.searcher.methods import GridSearch, RandomSearch, single_search
from hpcdet.searcher.sampling import NpRand, sample_all

__all__ = [
    "Action",
    "AdaptiveAshaSearch",
    "AshaBracket",
    "AshaConfig",
    "Create",
    "GridSearch",
    "NpRand",
    "RandomSearch",
    "Searcher",
    "Stop",
    "TrialRequest",
    "asha_config",
    "grid_axis",
    "grid_points",
    "make_searcher",
    "sample_all",
    "single_search",
]


def _max_time(cfg: dict[str, Any]) -> int:
    """``max_time``, falling back to legacy ``max_length`` (int or ``{unit: n}``)."""
    if cfg.get("max_time") is not None:  # the effective config holds unset fields as None
        return int(cfg["max_time"])
    legacy = cfg["max_length"]
    return int(next(iter(legacy.values())) if isinstance(legacy, dict) else legacy)


def asha_config(cfg: dict[str, Any]) -> AshaConfig:
    """Build :class:`AshaConfig` from an ``adaptive_asha`` searcher section."""
    return AshaConfig(
        max_trials=int(cfg["max_trials"]),
        max_time=_max_time(cfg),
        divisor=float(cfg.get("divisor", 4.0)),
        max_rungs=int(cfg.get("max_rungs", 5)),
        mode=str(cfg.get("mode", "standard")),
        bracket_rungs=tuple(int(r) for r in cfg.get("bracket_rungs") or ()),
        max_concurrent_trials=int(cfg.get("max_concurrent_trials", 16)),
        smaller_is_better=bool(cfg.get("smaller_is_better", True)),
    )


def make_searcher(cfg: dict[str, Any], hparams: dict[str, Any], seed: int) -> Searcher:
    """Build the searcher named by ``cfg["name"]``."""
    name = cfg.get("name")
    concurrent = int(cfg.get("max_concurrent_trials", 16))
    if name == "single":
        return single_search(hparams, seed)
    if name == "random":
        return RandomSearch(hparams, seed, int(cfg["max_trials"]), concurrent)
    if name == "grid":
        return GridSearch(hparams, seed, concurrent)
    if name == "adaptive_asha":
        return AdaptiveAshaSearch(hparams, seed, asha_config(cfg))
    raise ValueError(f"unknown searcher {name!r}")
