"""``/compare``: trials of any experiments side by side.

``/compare?trials=1,7,12`` compares those trials, whichever experiments they belong to;
``/compare?experiments=3,5`` compares the best trial of each experiment (the experiments
list's "Compare best trials"). Both may be given (up to :data:`MAX_TRIALS` trials in all).
The page lists each trial's experiment, state and best searcher metric and a table of the
hyperparameters, those that differ first and marked; ``static/compare_page.js`` overlays
a chosen metric of every trial in one chart from ``GET /api/v1/trials/<id>/metrics/series``.

Only trials the viewer may see are shown (the API's rule, :func:`page_sees`); an unseen
trial or experiment is named as not found, like an unknown one. A malformed list is a 400
page that names it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flask import render_template, request
from sqlalchemy import select

from hpcdet.master.api.common import db
from hpcdet.master.experiments import trial_pages
from hpcdet.master.models import Experiment, Trial
from hpcdet.master.reports.searcher_metric import SearcherMetric
from hpcdet.master.web.blueprint import bp
from hpcdet.master.web.experiment import flat_hparams, value_text
from hpcdet.master.web.formatting import number_text
from hpcdet.master.web.identity import page_sees

MAX_TRIALS = 10


class BadList(ValueError):
    """A query parameter that is not a comma-separated list of ids."""


@dataclass
class Picked:
    """The trials to compare, in the order asked, and what could not be shown."""

    trials: list[tuple[Trial, Experiment]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


@bp.get("/compare")
def compare() -> tuple[str, int]:
    """The comparison page; a malformed ``trials``/``experiments`` is a 400 naming it."""
    errors: list[str] = []
    lists: dict[str, list[int]] = {}
    for param in ("trials", "experiments"):
        try:
            lists[param] = id_list(param, request.args.get(param))
        except BadList as exc:
            errors.append(str(exc))
    bad = bool(errors)
    picked = Picked() if bad else pick(lists["trials"], lists["experiments"])
    if len(picked.trials) > MAX_TRIALS:
        picked.missing.append(f"at most {MAX_TRIALS} trials are compared at once: the "
                              f"first {MAX_TRIALS} are shown")
        picked.trials = picked.trials[:MAX_TRIALS]
    return render_template("compare.html", page="experiments", errors=errors,
                           **compare_context(picked)), 400 if bad else 200


def id_list(param: str, raw: str | None) -> list[int]:
    """``"1, 7,12"`` as ``[1, 7, 12]`` (duplicates dropped); empty or absent is ``[]``."""
    ids: list[int] = []
    for part in (raw or "").split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isascii() or not part.isdigit() or len(part) > 12:
            raise BadList(f"{param}: {part[:40]!r} is not an id; give ids separated by "
                          "commas, e.g. 1,7,12")
        if int(part) not in ids:
            ids.append(int(part))
    if len(ids) > 100:
        raise BadList(f"{param}: at most 100 ids")
    return ids


def pick(trial_ids: Sequence[int], exp_ids: Sequence[int]) -> Picked:
    """The visible trials of ``trial_ids`` then the best trial of each of ``exp_ids``."""
    picked = Picked()
    rows = {trial.id: (trial, exp) for trial, exp in db().execute(
        select(Trial, Experiment).join(Experiment, Experiment.id == Trial.experiment_id)
        .where(Trial.id.in_(list(trial_ids))))} if trial_ids else {}
    for trial_id in trial_ids:
        found = rows.get(trial_id)
        if found is None or not page_sees(found[1].owner, found[1].workspace_id):
            picked.missing.append(f"trial {trial_id}: not found")
        elif all(t.id != trial_id for t, _ in picked.trials):
            picked.trials.append(found)
    for exp_id in exp_ids:
        best = best_trial(exp_id)
        if best is None:
            picked.missing.append(f"experiment {exp_id}: not found or no trial with a "
                                  "best value yet")
        elif all(t.id != best[0].id for t, _ in picked.trials):
            picked.trials.append(best)
    return picked


def best_trial(exp_id: int) -> tuple[Trial, Experiment] | None:
    """The experiment's best trial by its searcher metric, if the viewer may see it."""
    exp = db().get(Experiment, exp_id)
    if exp is None or not page_sees(exp.owner, exp.workspace_id):
        return None
    best_id = trial_pages.best_trial_id(db(), exp_id, SearcherMetric.of(exp.config))
    trial = db().get(Trial, best_id) if best_id is not None else None
    return None if trial is None else (trial, exp)


def compare_context(picked: Picked) -> dict[str, Any]:
    """What compare.html renders and the JSON its script reads."""
    trials = [trial_facts(trial, exp) for trial, exp in picked.trials]
    flats = [flat_hparams(trial.hparams or {}) for trial, _ in picked.trials]
    metrics = [t["metric"] for t in trials if t["metric"]]
    return {"trials": trials, "missing": picked.missing,
            "hparam_rows": hparam_rows(flats),
            "ids_text": ",".join(str(t["id"]) for t in trials),
            "data": {"trials": [{"id": t["id"], "experiment_id": t["experiment_id"],
                                 "label": t["label"]} for t in trials],
                     "metric": metrics[0] if metrics else ""}}


def trial_facts(trial: Trial, exp: Experiment) -> dict[str, Any]:
    """One trial's column head: ids, names, state and best searcher metric."""
    metric = SearcherMetric.of(exp.config)
    best = (trial.best_validation or {}).get("metrics")
    return {"id": trial.id, "experiment_id": exp.id, "experiment_name": exp.name,
            "label": f"trial {trial.id} (exp {exp.id})", "state": trial.state,
            "metric": metric.name or "", "best_value": number_text(metric.value_in(best)),
            "steps": trial.steps_completed}


def hparam_rows(flats: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A row per hyperparameter name: its value per trial as text ("" where a trial has
    none) and whether they differ; differing ones first, each part sorted by name."""
    names = sorted({name for flat in flats for name in flat})
    rows = []
    for name in names:
        values = [value_text(flat.get(name)) if name in flat else "" for flat in flats]
        present = [name in flat for flat in flats]
        rows.append({"name": name, "values": values,
                     "differs": len(set(values)) > 1 or not all(present)})
    return sorted(rows, key=lambda row: (not row["differs"], row["name"]))
