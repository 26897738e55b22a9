"""``det experiment create --local CONFIG CONTEXT``: one trial in this process, no master.

Determined's ``--local`` (deprecated there, but users know it) for quick debugging of model
code. The configuration is checked like any other (``hpcdet.expconf`` sanity checks,
errors printed as by the other commands), then the searcher the master would run picks
the first trial's hyperparameters and seed: from ``reproducibility.experiment_seed``, or
seed 0 when the config has none (it is said so). Then :mod:`hpcdet.harness.local` trains
that trial with CONTEXT as the working directory; metrics go to stderr as the dummy Core
API contexts print them, checkpoints to ``CONTEXT/checkpoints``.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import click

from hpcdet.cli.main import CliError
from hpcdet.errors import ConfigError

LOCAL_SEED = 0
ROOT = "<config>"
SEARCHERS = ("single", "random", "grid", "adaptive_asha")


def run_local_experiment(config_file: str, context_dir: str, overrides: Sequence[str]) -> None:
    """Check the config, pick the first trial and train it here; exit 1 if it fails."""
    from hpcdet.harness.local import run_local

    trial = local_trial(_load(config_file, overrides), context_dir)
    code = run_local(trial)
    if code != 0:
        raise CliError(f"the local trial failed (exit code {code})")
    click.echo("Local trial completed.", err=True)


def _load(config_file: str, overrides: Sequence[str]) -> dict[str, Any]:
    from hpcdet.cli.config_file import load_config_file
    from hpcdet.cli.overrides import apply_overrides, parse_override

    doc = load_config_file(config_file).data
    parsed = [parse_override(arg) for arg in overrides]
    return apply_overrides(doc, parsed) if parsed else doc


def local_trial(doc: Mapping[str, Any], context_dir: str) -> Any:
    """The :class:`~hpcdet.harness.local.LocalTrial` for ``doc``: the searcher's first trial.

    Raises :class:`ConfigError` listing every problem of ``doc``.
    """
    from hpcdet.harness.local import LocalTrial

    context = pathlib.Path(context_dir)
    if not context.is_dir():
        raise CliError(f"context directory {context_dir!r} does not exist or is not a directory")
    check_local_config(doc)
    seed, pinned = experiment_seed(doc)
    request = first_trial(doc, seed)
    config = complete_config(doc, seed, context)
    click.echo(f"Training the first trial locally in {context.absolute()}: hyperparameters "
               f"{dict(request.hparams)}, trial seed {request.seed}"
               + ("" if pinned else f" (the config sets no reproducibility.experiment_seed: "
                  f"using experiment seed {LOCAL_SEED})"), err=True)
    return LocalTrial(config, dict(request.hparams), request.seed, context)


def check_local_config(doc: Mapping[str, Any]) -> None:
    """The sanity checks of ``det experiment create``, plus what a local run needs."""
    from hpcdet.expconf import validate

    errors = validate(doc, phase="sanity") or _local_problems(doc)
    if errors:
        raise ConfigError(errors, title="the experiment config is invalid")


def _local_problems(doc: Mapping[str, Any]) -> list[str]:
    problems = []
    if not doc.get("entrypoint"):
        problems.append(f"{ROOT}.entrypoint: is required (a script, or model_def:TrialClass)")
    section = doc.get("searcher")
    searcher: Mapping[str, Any] = section if isinstance(section, Mapping) else {}
    name = searcher.get("name")
    if name not in SEARCHERS:
        problems.append(f"{ROOT}.searcher.name: {name!r} cannot pick a trial locally "
                        f"(supported: {', '.join(SEARCHERS)})")
    elif name in ("random", "adaptive_asha") and searcher.get("max_trials") is None:
        problems.append(f"{ROOT}.searcher.max_trials: is required by the {name} searcher")
    return problems


def experiment_seed(doc: Mapping[str, Any]) -> tuple[int, bool]:
    """``(seed, True)`` for a pinned ``reproducibility.experiment_seed``, else ``(0, False)``."""
    seed = (doc.get("reproducibility") or {}).get("experiment_seed")
    return (int(seed), True) if seed is not None else (LOCAL_SEED, False)


def first_trial(doc: Mapping[str, Any], seed: int) -> Any:
    """The first :class:`~hpcdet.searcher.TrialRequest` the searcher creates."""
    from hpcdet.searcher import make_searcher

    hparams = dict(doc.get("hyperparameters") or {})
    return make_searcher(dict(doc["searcher"]), hparams, seed).initial_trials()[0]


def complete_config(doc: Mapping[str, Any], seed: int,
                    context: pathlib.Path) -> dict[str, Any]:
    """``doc`` as the master would complete it: every default, the seed, and checkpoint
    storage in ``CONTEXT/checkpoints`` (a local run keeps off the cluster's storage)."""
    from hpcdet.expconf import with_defaults
    from hpcdet.harness.local import CHECKPOINTS

    out = dict(doc)
    out["name"] = out.get("name") or "local"
    out["reproducibility"] = {**(out.get("reproducibility") or {}), "experiment_seed": seed}
    out["checkpoint_storage"] = {"type": "shared_fs",
                                 "host_path": str(context.absolute() / CHECKPOINTS)}
    return dict(with_defaults(out))
