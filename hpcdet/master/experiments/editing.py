"""What ``det experiment set|label|move`` change on an experiment, checked value by value.

Each setting lives in the experiment's effective config as in Determined (``name``,
``description``, ``labels``, ``resources.max_slots|weight|priority``,
``checkpoint_storage.save_*``); the columns that mirror some of them (name, description,
labels) change with it, so the list, the page and the config never disagree. A bad value
is Invalid, naming the key and what is allowed; nothing is changed then.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from hpcdet.master.errors import Invalid
from hpcdet.master.models import Experiment
from hpcdet.master.security.workspaces import placement_for
from hpcdet.master.settings.core import MasterSettings

MAX_NAME = 256
MAX_DESCRIPTION = 10_000
MAX_LABEL = 128
MAX_LABELS = 100
PRIORITY_RANGE = (1, 99)
GC_KEYS = ("save_experiment_best", "save_trial_best", "save_trial_latest")
EDITABLE = ("name", "description", "labels", "max_slots", "weight", "priority", "gc_policy")
# What hpcdet stores but does not act on (docs/configuration.md: "warned").
NOT_ACTED_ON = {"max_slots": "resources.max_slots is stored but not acted on by hpcdet "
                             "(Slurm limits an experiment's jobs, not the master)"}
# When a changed setting takes effect.
TAKES_EFFECT = {
    "weight": "resources.weight applies to the experiment's jobs submitted from now on",
    "priority": "resources.priority applies to the experiment's jobs submitted from now on; "
                "move a job already queued with `det job update`",
}


def bad(key: str, problem: str) -> Invalid:
    """The Invalid refusal for one bad value."""
    return Invalid("bad_request", f"{key}: {problem}")


@dataclasses.dataclass(frozen=True)
class Edit:
    """The checked changes of one ``PATCH /experiments/<id>`` (only the keys given)."""

    values: Mapping[str, Any]

    @property
    def gc_policy(self) -> dict[str, int] | None:
        policy = self.values.get("gc_policy")
        return dict(policy) if policy is not None else None


def parse_edit(body: Mapping[str, Any]) -> Edit:
    """Check every key of the body; Invalid for an unknown key or a bad value."""
    unknown = sorted(set(body) - set(EDITABLE))
    if unknown:
        raise bad(unknown[0], f"not a setting that can be changed (known: {', '.join(EDITABLE)})")
    if not body:
        raise Invalid("bad_request", f"the body names nothing to change (known: "
                      f"{', '.join(EDITABLE)})")
    checks = {"name": _name, "description": _description, "labels": labels_value,
              "max_slots": _max_slots, "weight": _weight, "priority": _priority,
              "gc_policy": gc_policy_value}
    return Edit({key: checks[key](value) for key, value in body.items()})


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise bad("name", "must be a non-empty string")
    if len(value) > MAX_NAME:
        raise bad("name", f"at most {MAX_NAME} characters, got {len(value)}")
    return value


def _description(value: Any) -> str:
    if not isinstance(value, str):
        raise bad("description", "must be a string")
    if len(value) > MAX_DESCRIPTION:
        raise bad("description", f"at most {MAX_DESCRIPTION} characters, got {len(value)}")
    return value


def label_value(value: Any, key: str = "label") -> str:
    """One label: a non-empty printable string of at most :data:`MAX_LABEL` characters."""
    if not isinstance(value, str) or not value.strip():
        raise bad(key, "a label must be a non-empty string")
    if len(value) > MAX_LABEL:
        raise bad(key, f"a label has at most {MAX_LABEL} characters, got {len(value)}")
    if not value.isprintable():
        raise bad(key, f"label {value!r} has a control character")
    return value


def labels_value(value: Any) -> list[str]:
    """A whole label list (duplicates dropped, order kept)."""
    if not isinstance(value, list):
        raise bad("labels", "must be a list of strings")
    if len(value) > MAX_LABELS:
        raise bad("labels", f"at most {MAX_LABELS} labels, got {len(value)}")
    out: list[str] = []
    for index, item in enumerate(value):
        label = label_value(item, f"labels[{index}]")
        if label not in out:
            out.append(label)
    return out


def _max_slots(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise bad("max_slots", "must be an integer >= 1, or null for no limit")
    return value


def _weight(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 \
            or value != value or value == float("inf"):
        raise bad("weight", "must be a number > 0")
    return float(value)


def _priority(value: Any) -> int:
    lo, hi = PRIORITY_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise bad("priority", f"must be an integer {lo}..{hi}")
    return value


def gc_policy_value(value: Any) -> dict[str, int]:
    """``{save_experiment_best, save_trial_best, save_trial_latest}``: all three, each >= 0."""
    if not isinstance(value, dict):
        raise bad("gc_policy", f"must be an object with {', '.join(GC_KEYS)}")
    missing = [k for k in GC_KEYS if k not in value]
    extra = sorted(set(value) - set(GC_KEYS))
    if missing or extra:
        raise bad("gc_policy", f"needs exactly {', '.join(GC_KEYS)}"
                  + (f"; missing {', '.join(missing)}" if missing else "")
                  + (f"; unknown {', '.join(extra)}" if extra else ""))
    for key in GC_KEYS:
        count = value[key]
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= 10**6:
            raise bad(f"gc_policy.{key}", "must be an integer >= 0")
    return {key: int(value[key]) for key in GC_KEYS}


def apply_edit(exp: Experiment, edit: Edit) -> list[str]:
    """Change the experiment's config (and mirrored columns); return notes for the caller."""
    config = copy.deepcopy(exp.config)
    resources = config.setdefault("resources", {})
    notes: list[str] = []
    for key, value in edit.values.items():
        if key in ("name", "description", "labels"):
            config[key] = value
        elif key == "gc_policy":
            config.setdefault("checkpoint_storage", {}).update(value)
        else:
            resources[key] = value
        notes += [n for n in (NOT_ACTED_ON.get(key), TAKES_EFFECT.get(key)) if n]
    set_config(exp, config)
    return notes


def set_config(exp: Experiment, config: dict[str, Any]) -> None:
    """Store a new effective config and the columns that mirror it."""
    exp.config = config
    exp.name = str(config.get("name") or exp.name)
    exp.description = str(config.get("description") or "")
    exp.labels = list(config.get("labels") or [])


def change_labels(exp: Experiment, label: str, *, add: bool) -> bool:
    """Add or remove one label; False when there was nothing to do."""
    labels = list(exp.labels or [])
    if add == (label in labels):
        return False
    if add and len(labels) >= MAX_LABELS:
        raise bad("label", f"experiment {exp.id} already has {MAX_LABELS} labels")
    labels = labels + [label] if add else [x for x in labels if x != label]
    config = copy.deepcopy(exp.config)
    config["labels"] = labels
    set_config(exp, config)
    return True


def move(session: Session, settings: MasterSettings, exp: Experiment, actor: str,
         workspace: Any, project: Any) -> None:
    """Put the experiment into ``workspace``/``project`` (editor role there needed).

    ``workspace`` None takes it out of any workspace: it is its owner's (and admins') alone.
    """
    if workspace is None and project is not None:
        raise Invalid("bad_request", "project: name its workspace too")
    exp.workspace_id, exp.project_id = placement_for(session, settings, actor, workspace,
                                                     project)
