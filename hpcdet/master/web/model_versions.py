"""What ``/models/<name>`` adds to each version and to its register form.

* :func:`load_snippet`: the Python that loads a version (the SDK's
  ``client.get_model(NAME).get_version(N).checkpoint.download()``), shown per version.
* :func:`checkpoint_choices`: the register form's checkpoint picker. ``?experiment=N`` (or
  ``?trial=N``) lists that experiment's (trial's) checkpoints whose files are kept, best
  first by the searcher metric, each with its trial, steps and validation metrics; the
  checkpoint UUID field stays as the fallback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from hpcdet.master.api.common import db
from hpcdet.master.models import Checkpoint, Experiment, Trial
from hpcdet.master.reports.checkpoint_gc import ACTIVE
from hpcdet.master.reports.searcher_metric import SearcherMetric
from hpcdet.master.web.checkpoints import best_first
from hpcdet.master.web.formatting import number_text
from hpcdet.master.web.identity import page_sees

MAX_ID_DIGITS = 12  # a longer "id" names nothing (and int() of a huge one is slow)
MAX_CHOICES = 200  # the picker's options: the best ones


def load_snippet(model_name: str, version: int) -> str:
    """Python that downloads version ``version`` of the model and loads its trial
    (``DET_MASTER`` and the user come from the environment, as for ``det``)."""
    return (
        "from hpcdet.experimental import client\n"
        "from hpcdet.pytorch import load_trial_from_checkpoint_path\n"
        "\n"
        f"version = client.get_model({model_name!r}).get_version({int(version)})\n"
        "path = version.checkpoint.download()  # into ./checkpoints/<uuid>\n"
        "trial = load_trial_from_checkpoint_path(path)  # its model_def must be importable\n"
        "trial.model.eval()\n")


@dataclass
class Picker:
    """The picker's state: what was asked (``source``: "experiment"/"trial", ``raw``), the
    checkpoints to choose from, and an error in words (with its HTTP status) if any."""

    source: str = ""
    raw: str = ""
    choices: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    status: int = 200


def checkpoint_choices(args: Mapping[str, str]) -> Picker:
    """The picker for ``?experiment=N`` or ``?trial=N`` (neither: empty, no error)."""
    trial, experiment = (args.get("trial") or "").strip(), (args.get("experiment") or "").strip()
    source, raw = ("trial", trial) if trial else ("experiment", experiment)
    picker = Picker(source=source, raw=raw)
    if not raw:
        return picker
    if not (raw.isascii() and raw.isdigit() and len(raw) <= MAX_ID_DIGITS):
        picker.error, picker.status = f"{source} must be a number (its ID), not {raw!r}", 400
        return picker
    exp, trial_id = _experiment_of(source, int(raw))
    if exp is None or not page_sees(exp.owner, exp.workspace_id):
        picker.error, picker.status = f"{source} {raw} not found", 404
        return picker
    picker.choices = _choices(exp, trial_id)
    return picker


def _experiment_of(source: str, number: int) -> tuple[Experiment | None, int | None]:
    if source == "experiment":
        return db().get(Experiment, number), None
    trial = db().get(Trial, number)
    return (None, None) if trial is None else (db().get(Experiment, trial.experiment_id),
                                               trial.id)


def _choices(exp: Experiment, trial_id: int | None) -> list[dict[str, Any]]:
    """The kept checkpoints, best first: uuid and the words of its option."""
    query = select(Checkpoint).join(Trial, Trial.id == Checkpoint.trial_id).where(
        Trial.experiment_id == exp.id, Checkpoint.state == ACTIVE)
    if trial_id is not None:
        query = query.where(Checkpoint.trial_id == trial_id)
    metric = SearcherMetric.of(exp.config)
    rows = best_first(list(db().scalars(query)), metric)[:MAX_CHOICES]
    return [{"uuid": c.uuid, "text": _option_text(c, metric)} for c in rows]


def _option_text(c: Checkpoint, metric: SearcherMetric) -> str:
    """``trial 7 · step 200 · validation_loss 0.2 · 3f0c1a2b``: what tells them apart."""
    value = metric.value_in(c.validation_metrics)
    parts = [f"trial {c.trial_id}", f"step {c.steps_completed}"]
    if value is not None:
        parts.append(f"{metric.name} {number_text(value)}")
    else:
        parts.append("no validation")
    return " · ".join([*parts, c.uuid[:8]])
