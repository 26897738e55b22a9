"""Configs derived from another experiment's: one more run of a trial (``det experiment fork
--trial`` and the trial page's *Fork trial*), and a config without its unset fields (what the
pages show and offer for editing)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def single_trial_config(config: Mapping[str, Any],
                        hparams: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` for one more run of a trial: its hyperparameter values as constants and
    the ``single`` searcher with the same metric and length."""
    searcher = dict(config.get("searcher") or {})
    kept = {key: searcher[key] for key in ("metric", "smaller_is_better", "max_length")
            if key in searcher}
    return {**config, "hyperparameters": constants(hparams),
            "searcher": {"name": "single", **kept}}


def constants(hparams: Mapping[str, Any]) -> dict[str, Any]:
    """Trial hyperparameter values as a ``hyperparameters`` section of constants (nested
    mappings become nested groups)."""
    return {key: constants(value) if isinstance(value, Mapping)
            else {"type": "const", "val": value} for key, value in hparams.items()}


def without_nulls(value: Any) -> Any:
    """``value`` without the settings nobody set: null entries, and mappings left empty by
    removing them, at every depth."""
    if isinstance(value, Mapping):
        kept = {key: without_nulls(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item is not None and item != {}}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value
