"""``det preview-search CONFIG``: what a search would run, worked out on the login node.

Nothing is sent to a master. The configuration is read and sanity-checked as
``det experiment create`` would, then the same searcher code the master runs
(:mod:`hpcdet.searcher`) is asked for its trials:

* ``single``, ``random`` and ``grid``: every trial, in creation order. The searcher is
  driven to completion by reporting each trial as completed, so a random search's
  replacement trials are sampled in the same order as on the master.
* ``adaptive_asha``: the brackets, the rungs of each bracket, the training budget, and the
  trials created at the start (later ones are created as trials are stopped).

The trials depend on ``reproducibility.experiment_seed``. Without one, the master draws a
seed at submission; the preview then uses seed 0 and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from hpcdet.cli.output import format_value, print_answer, render_fields, render_table
from hpcdet.errors import ConfigError
from hpcdet.searcher import (
    AdaptiveAshaSearch,
    Create,
    GridSearch,
    RandomSearch,
    Searcher,
    TrialRequest,
    make_searcher,
)
from hpcdet.searcher.asha import AshaBracket, num_continue
from hpcdet.searcher.grid import grid_axis
from hpcdet.searcher.sampling import hp_kind

PREVIEW_SEED = 0
TRIAL_LIMIT = 2000  # a preview lists at most this many trials (a grid can be huge)
SEARCHERS = ("single", "random", "grid", "adaptive_asha")
ROOT = "<config>"


@click.command("preview-search")
@click.argument("config_file", metavar="CONFIG")
@click.option("--json", "as_json", is_flag=True,
              help="Print the preview as one JSON document, for scripts.")
def preview_search(config_file: str, as_json: bool) -> None:
    """Show the trials a search would run; submits nothing.

    Reads the experiment configuration CONFIG and works locally, no master needed. For
    single, random and grid searches it lists every trial (hyperparameters and trial
    seed) in the order the master creates them. For adaptive_asha it shows the brackets,
    the rungs of each bracket (how much training a trial needs to reach a rung, and how
    many trials reach it when every rung lets only its best 1/divisor continue), the
    total budget, and the initial trials.

    The trials follow from reproducibility.experiment_seed; without one, the master draws a
    seed at submission and this preview uses seed 0. Pin a seed to preview the exact trials.
    """
    from hpcdet.cli.config_file import load_config_file

    preview = build_preview(load_config_file(config_file).data)
    print_answer(preview, as_json, render_preview)


def build_preview(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The preview of the search configured in ``doc`` (an experiment configuration).

    Raises :class:`ConfigError` listing every problem when ``doc`` is invalid.
    """
    check_config(doc)
    seed, pinned = experiment_seed(doc)
    section: Mapping[str, Any] = doc["searcher"]
    hparams: dict[str, Any] = dict(doc.get("hyperparameters") or {})
    searcher = make_searcher(dict(section), hparams, seed)
    preview: dict[str, Any] = {
        "searcher": searcher_summary(section, searcher),
        "seed": seed,
        "seed_from_config": pinned,
        "hyperparameter_columns": hparam_columns(hparams),
    }
    if isinstance(searcher, AdaptiveAshaSearch):
        preview.update(asha_preview(searcher, time_metric(section)))
    else:
        preview.update(trials_preview(searcher))
    if isinstance(searcher, GridSearch):
        preview["grid_axes"] = grid_axes(hparams)
    return preview


def check_config(doc: Mapping[str, Any]) -> None:
    """Sanity-validate ``doc``, then check what a preview needs; raise :class:`ConfigError`."""
    from hpcdet.expconf import validate

    errors = validate(doc, phase="sanity") or _preview_problems(doc)
    if errors:
        raise ConfigError(errors, title="the experiment config is invalid")


def _preview_problems(doc: Mapping[str, Any]) -> list[str]:
    """What the searcher needs and a sanity check lets through (the master fills it later
    or rejects it at submission)."""
    searcher = doc.get("searcher")
    if not isinstance(searcher, Mapping):
        return [f"{ROOT}.searcher: is required to preview a search"]
    name = searcher.get("name")
    if name not in SEARCHERS:
        return [f"{ROOT}.searcher.name: {name!r} cannot be previewed "
                f"(supported: {', '.join(SEARCHERS)})"]
    problems = []
    if name in ("random", "adaptive_asha") and searcher.get("max_trials") is None:
        problems.append(f"{ROOT}.searcher.max_trials: is required by the {name} searcher")
    if name == "adaptive_asha" and _max_time(searcher) is None:
        problems.append(f"{ROOT}.searcher.max_time: is required by the adaptive_asha searcher")
    return problems


def _max_time(searcher: Mapping[str, Any]) -> Any:
    """``max_time``, else the legacy ``max_length``; None when neither is set."""
    value = searcher.get("max_time")
    return value if value is not None else searcher.get("max_length")


def time_metric(searcher: Mapping[str, Any]) -> str:
    """What ``max_time`` counts: ``time_metric``, else the legacy ``max_length``'s unit."""
    if searcher.get("time_metric"):
        return str(searcher["time_metric"])
    legacy = searcher.get("max_length")
    return str(next(iter(legacy))) if isinstance(legacy, Mapping) and legacy else "batches"


def experiment_seed(doc: Mapping[str, Any]) -> tuple[int, bool]:
    """``(seed, True)`` for a pinned ``reproducibility.experiment_seed``, else
    ``(PREVIEW_SEED, False)``."""
    seed = (doc.get("reproducibility") or {}).get("experiment_seed")
    return (int(seed), True) if seed is not None else (PREVIEW_SEED, False)


def searcher_summary(section: Mapping[str, Any], searcher: Searcher) -> dict[str, Any]:
    """Name, metric and the settings that shape the search."""
    summary: dict[str, Any] = {
        "name": section["name"],
        "metric": section.get("metric"),
        "smaller_is_better": section.get("smaller_is_better", True) is not False,
    }
    if isinstance(searcher, AdaptiveAshaSearch):
        config = searcher.config
        summary.update(max_trials=config.max_trials, max_time=config.max_time,
                       time_metric=time_metric(section), divisor=config.divisor,
                       mode=config.mode, max_rungs=config.max_rungs,
                       bracket_rungs=list(config.bracket_rungs),
                       max_concurrent_trials=config.max_concurrent_trials)
    elif isinstance(searcher, (GridSearch, RandomSearch)) and section["name"] != "single":
        summary["max_concurrent_trials"] = searcher.max_concurrent_trials
        if isinstance(searcher, RandomSearch):
            summary["max_trials"] = searcher.max_trials
    return summary


# --- the trials -----------------------------------------------------------------------


Path = tuple[str, ...]


def hparam_leaves(hparams: Mapping[str, Any], prefix: Path = ()) -> list[tuple[Path, Any]]:
    """``(path, spec)`` of every hyperparameter, in the config's order; nested groups are
    walked into (their leaves are shown as ``group.name``)."""
    leaves: list[tuple[Path, Any]] = []
    for name, spec in hparams.items():
        if hp_kind(spec) == "nested" and spec:
            leaves.extend(hparam_leaves(spec, (*prefix, name)))
        else:
            leaves.append(((*prefix, name), spec))
    return leaves


def hparam_columns(hparams: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each hyperparameter's path and whether it is constant."""
    return [{"name": ".".join(path), "path": list(path),
             "constant": hp_kind(spec) in ("const", "nested")}
            for path, spec in hparam_leaves(hparams)]


def grid_axes(hparams: Mapping[str, Any]) -> list[dict[str, Any]]:
    """How many values each non-constant hyperparameter takes in a grid search."""
    return [{"name": ".".join(path), "size": len(grid_axis(spec))}
            for path, spec in hparam_leaves(hparams)
            if hp_kind(spec) not in ("const", "nested")]


def trial_entry(number: int, request: TrialRequest) -> dict[str, Any]:
    """A trial as shown: its creation number, request id, hyperparameters and seed."""
    return {"number": number, "request_id": request.request_id, "hparams": request.hparams,
            "seed": request.seed}


def all_trials(searcher: Searcher, limit: int = TRIAL_LIMIT) -> list[TrialRequest]:
    """Every trial ``searcher`` creates (at most ``limit``), reporting each as completed."""
    created = list(searcher.initial_trials())
    waiting = list(created)
    while waiting and len(created) < limit:
        request = waiting.pop(0)
        for action in searcher.on_trial_exited(request.request_id, "completed"):
            if isinstance(action, Create):
                created.append(action.request)
                waiting.append(action.request)
    return created[:limit]


def trials_preview(searcher: Searcher) -> dict[str, Any]:
    """The ``trials`` section for single, random and grid searches."""
    total = _trial_count(searcher)
    trials = all_trials(searcher)
    return {"trial_count": total,
            "trials": [trial_entry(i, r) for i, r in enumerate(trials, start=1)]}


def _trial_count(searcher: Searcher) -> int:
    """How many trials the search creates when none has invalid hyperparameters."""
    if isinstance(searcher, GridSearch):
        return searcher.total
    return searcher.max_trials if isinstance(searcher, RandomSearch) else 1


# --- adaptive ASHA -----------------------------------------------------------------------


def rung_table(bracket: AshaBracket, divisor: float) -> list[dict[str, int]]:
    """Per rung: units of training needed, and how many trials reach it when every rung
    lets only its best 1/divisor continue (at least one)."""
    rows, reaching = [], bracket.max_trials
    for index, rung in enumerate(bracket.rungs):
        if index:
            reaching = num_continue(reaching, divisor)
        rows.append({"rung": index + 1, "units_needed": rung.units_needed, "trials": reaching})
    return rows


def bracket_budget(rungs: list[dict[str, int]]) -> int:
    """Training units a bracket spends when only :func:`rung_table`'s trials go on."""
    spent, previous = 0, 0
    for rung in rungs:
        spent += rung["trials"] * (rung["units_needed"] - previous)
        previous = rung["units_needed"]
    return spent


def asha_preview(searcher: AdaptiveAshaSearch, unit: str) -> dict[str, Any]:
    """Brackets with their rung tables, the budget, and the initial trials."""
    config = searcher.config
    tables = [rung_table(bracket, config.divisor) for bracket in searcher.brackets]
    brackets = [
        {"bracket": index, "num_rungs": len(b.rungs), "max_trials": b.max_trials,
         "max_concurrent_trials": b.max_concurrent, "rungs": table}
        for index, (b, table) in enumerate(zip(searcher.brackets, tables, strict=True), 1)
    ]
    initial = [{**trial_entry(i, r), "bracket": searcher.owner[r.request_id] + 1}
               for i, r in enumerate(searcher.initial_trials(), start=1)]
    budget = {"unit": unit, "stopped_early": sum(bracket_budget(t) for t in tables),
              "none_stopped": config.max_trials * config.max_time}
    return {"trial_count": config.max_trials, "brackets": brackets, "budget": budget,
            "initial_trials": initial}


# --- rendering for people ------------------------------------------------------------------


def render_preview(preview: Mapping[str, Any]) -> str:
    """The preview as text: a header, then the method's tables."""
    parts = [render_fields(_header(preview), indent=0)]
    constants = _constant_line(preview)
    if "brackets" in preview:
        parts += _asha_sections(preview)
    else:
        parts.append(_trials_title(preview) + "\n" + _trial_table(preview, preview["trials"]))
    if constants:
        parts.append(constants)
    return "\n\n".join(parts)


def _trials_title(preview: Mapping[str, Any]) -> str:
    total, shown = preview["trial_count"], len(preview["trials"])
    title = f"Trials: {total}"
    if "grid_axes" in preview:
        axes = " x ".join(f"{a['size']} {a['name']}" for a in preview["grid_axes"])
        title += f", the whole grid ({axes or 'no axes'})"
    title += ", in the order they are created"
    return title + (f"; the first {shown} are shown" if shown < total else "")


def _header(preview: Mapping[str, Any]) -> list[tuple[str, Any]]:
    searcher = preview["searcher"]
    order = "smaller is better" if searcher["smaller_is_better"] else "larger is better"
    metric = f"{searcher['metric']} ({order})" if searcher["metric"] else "-"
    seed = str(preview["seed"])
    if not preview["seed_from_config"]:
        seed += (" (the config sets no reproducibility.experiment_seed: the master draws one "
                 "at submission, so the trials will differ; set one to preview the exact "
                 "trials)")
    return [("Searcher", searcher["name"]), ("Metric", metric), ("Seed", seed)]


def _columns(preview: Mapping[str, Any], constant: bool) -> list[Mapping[str, Any]]:
    return [c for c in preview["hyperparameter_columns"] if c["constant"] == constant]


def _constant_line(preview: Mapping[str, Any]) -> str:
    columns = _columns(preview, constant=True)
    trials = preview.get("trials") or preview.get("initial_trials") or []
    if not columns or not trials:
        return ""
    hparams = trials[0]["hparams"]
    shown = ", ".join(f"{c['name']}={format_value(value_at(hparams, c['path']))}"
                      for c in columns)
    return f"Constant hyperparameters: {shown}"


def value_at(hparams: Mapping[str, Any], path: Sequence[str]) -> Any:
    """The value at ``path`` in a trial's (nested) hyperparameters."""
    value: Any = hparams
    for name in path:
        value = value.get(name) if isinstance(value, Mapping) else None
    return value


def _trial_table(preview: Mapping[str, Any], trials: list[Mapping[str, Any]],
                 extra: tuple[str, ...] = ()) -> str:
    columns = _columns(preview, constant=False)
    rows = [[t["number"], *(t[k] for k in extra),
             *(value_at(t["hparams"], c["path"]) for c in columns), t["seed"]]
            for t in trials]
    return render_table(["#", *extra, *(c["name"] for c in columns), "seed"], rows)


def _asha_sections(preview: Mapping[str, Any]) -> list[str]:
    searcher, budget = preview["searcher"], preview["budget"]
    unit = budget["unit"]
    brackets = render_table(
        ["bracket", "rungs", "max trials", "max concurrent trials"],
        [[b["bracket"], b["num_rungs"], b["max_trials"], b["max_concurrent_trials"]]
         for b in preview["brackets"]])
    rungs = render_table(
        ["bracket", "rung", f"{unit} needed", "trials reaching it"],
        [[b["bracket"], r["rung"], r["units_needed"], r["trials"]]
         for b in preview["brackets"] for r in b["rungs"]])
    initial = preview["initial_trials"]
    shape = (f"bracket_rungs {searcher['bracket_rungs']}"
             if searcher["bracket_rungs"] else f"mode {searcher['mode']}")
    return [
        f"Brackets: {len(preview['brackets'])} ({shape}, divisor "
        f"{format_value(searcher['divisor'])}, max_time {searcher['max_time']} {unit}, "
        f"{searcher['max_trials']} trials in all)\n{brackets}",
        f"Rungs: a trial that reaches a rung goes on only if it ranks in the best 1/"
        f"{format_value(searcher['divisor'])} of the trials seen there so far\n{rungs}",
        f"Budget: {budget['stopped_early']} {unit} if each rung lets only its best "
        f"1/{format_value(searcher['divisor'])} continue (more if later trials beat earlier "
        f"ones); {budget['none_stopped']} {unit} if no trial is stopped",
        f"Initial trials: {len(initial)} (more are created as trials are stopped)\n"
        + _trial_table(preview, initial, extra=("bracket",)),
    ]
