"""Determined's Python SDK usage patterns, from Determined's own docs, against a live master.

``tests/compat/sdk/sdk_workflow.py`` is assembled from Determined 0.38.1's snippets only
(``docs/reference/python-sdk/example-workflows.rst``, ``docs/model-dev-guide/
model-management/checkpoints.rst`` and ``model-registry-org.rst``, and two lines of
``e2e_tests/tests/experiment/test_noop.py`` for ``Trial.iter_metrics``, which the docs show
in no snippet), kept byte for byte under ``tests/data/determined/``. Each section of the
script names its file and lines; :func:`snippet_problems` checks that the section is those
lines (dedented) with only their imports changed, as the tutorials' diff does, and that the
lines between sections are the few "glue" lines listed in :data:`GLUE` (the placeholders
Determined's snippets leave to the reader).

The script, run against a master on the dev Slurm cluster, creates an experiment from
``my_config.yaml`` (examples/digits' PyTorchTrial, one slot, two epochs: two checkpoints),
waits for it, reads its logs, lists and sorts its checkpoints, downloads the best, lists
its files, streams its trial's training metrics, loads the trial back with
``pytorch.load_trial_from_checkpoint_path`` (the class found from the checkpoint, as in
Determined) and predicts, creates a model, registers the checkpoint and lists its
versions. The test compares what the script got with what the master holds.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from tutorials import REPO, describe, disallowed_changes, trial_log

pytestmark = pytest.mark.compat

SCRIPT = Path(__file__).resolve().parent / "sdk" / "sdk_workflow.py"
ORIGINALS = REPO / "tests" / "data" / "determined"
DIGITS = REPO / "examples" / "digits"
MARKER = re.compile(r"^# Determined: (?P<path>\S+), lines (?P<first>\d+)-(?P<last>\d+)$")
GLUE_MARKER = "# hpcdet-compat: glue"
# The only lines of the script that are not Determined's: values for the names that
# Determined's snippets leave to the reader (``id``, ``your_experiment_id``, ``exp_id``: the
# experiment or trial at hand; ``samples``: three 8x8 digit images for the loaded model).
GLUE = frozenset({
    "id = exp.id",
    "id = exp.list_trials()[0].id",
    "your_experiment_id = exp.id",
    "exp_id = exp.id",
    "import torch",
    "samples = torch.zeros(3, 64)",
})
EPOCHS = 2


@dataclass
class Section:
    """A run of script lines: a Determined snippet (``origin`` set) or glue."""

    origin: tuple[str, int, int] | None
    lines: list[str]
    at: int  # the marker's line number in the script


def sections(script: Sequence[str]) -> tuple[list[str], list[Section]]:
    """The header (the lines before the first marker) and the marked sections, each
    without its trailing blank lines."""
    header: list[str] = []
    found: list[Section] = []
    for number, line in enumerate(script, start=1):
        match = MARKER.match(line)
        if match:
            found.append(Section((match["path"], int(match["first"]), int(match["last"])),
                                 [], number))
        elif line == GLUE_MARKER:
            found.append(Section(None, [], number))
        elif found:
            found[-1].lines.append(line)
        else:
            header.append(line)
    for section in found:
        while section.lines and not section.lines[-1].strip():
            section.lines.pop()
    return header, found


def snippet_problems(script: Sequence[str]) -> list[str]:
    """Every line of the script that is neither a comment of the header, a Determined
    snippet changed only in its imports, nor listed glue."""
    header, found = sections(script)
    problems = [f"header line {n}: not a comment: {line!r}"
                for n, line in enumerate(header, start=1)
                if line.strip() and not line.startswith("#")]
    if not any(s.origin for s in found):
        problems.append("no Determined snippet in the script")
    for section in found:
        if section.origin is None:
            problems += [f"glue at line {section.at}: not allowed: {line!r}"
                         for line in section.lines if line.strip() and line not in GLUE]
            continue
        path, first, last = section.origin
        source = ORIGINALS / path
        if not source.is_file() or not 1 <= first <= last:
            problems.append(f"line {section.at}: no such original: {path} {first}-{last}")
            continue
        original = source.read_text().splitlines()[first - 1:last]
        if len(original) != last - first + 1:
            problems.append(f"line {section.at}: {path} has no lines {first}-{last}")
            continue
        expected = textwrap.dedent("\n".join(original)).splitlines()
        problems += [f"section at line {section.at} ({path} {first}-{last}): {p}"
                     for p in disallowed_changes(expected, section.lines)]
    return problems


def test_the_script_is_determined_snippets_and_listed_glue() -> None:
    problems = snippet_problems(SCRIPT.read_text().splitlines())
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("change", [
    ("exp = client.create_experiment(", "exp = client.create_experiment(  # "),  # a snippet
    ("samples = torch.zeros(3, 64)", "samples = torch.ones(3, 64)"),            # glue
    ("# Determined: docs/model-dev-guide/model-management/checkpoints.rst, lines 51-53",
     "# Determined: docs/model-dev-guide/model-management/checkpoints.rst, lines 52-53"),
])
def test_the_check_sees_a_changed_line(change: tuple[str, str]) -> None:
    text = SCRIPT.read_text()
    assert change[0] in text
    assert snippet_problems(text.replace(change[0], change[1], 1).splitlines())


# --- on the dev Slurm cluster --------------------------------------------------------------

# Runs the script as a user would (python, in the model directory) and prints, as JSON,
# what its variables hold at the end.
_DRIVER = r"""
import json, runpy
ns = runpy.run_path("sdk_workflow.py", run_name="__main__")
print("SDK-FACTS " + json.dumps({
    "experiment_id": ns["exp"].id,
    "exit_status": ns["exit_status"].value,
    "best_checkpoint": ns["best_checkpoint"].uuid,
    "checkpoint": ns["checkpoint"].uuid,
    "checkpoint_path": ns["checkpoint_path"],
    "specific_path": ns["specific_path"],
    "most_recent_checkpoint": ns["most_recent_checkpoint"].uuid,
    "most_accurate_checkpoint": ns["most_accurate_checkpoint"].uuid,
    "metrics_before": ns["metrics_before"],
    "predictions": list(ns["predictions"].shape),
    "loaded_trial": type(ns["trial"]).__name__,
    "registered": [ns["model_version"].model_version, ns["model_version"].checkpoint.uuid],
    "latest_version": ns["latest_version"].model_version,
    "path": ns["path"],
    "my_pytorch_trial": type(ns["my_pytorch_trial"]).__name__,
    "model": [ns["model"].name, ns["model"].description, ns["model"].metadata],
    "model_versions": [v.model_version for v in ns["model_versions"]],
}))
"""


def _context(where: Path) -> Path:
    """The model directory: examples/digits' trial, my_config.yaml (its const.yaml on one
    slot for two epochs, both checkpoints kept) and the script."""
    context = where / "ctx-sdk"
    context.mkdir()
    shutil.copy(DIGITS / "model_def.py", context)
    shutil.copy(SCRIPT, context)
    config = yaml.safe_load((DIGITS / "const.yaml").read_text())
    config["name"] = "sdk-workflow"
    config["resources"] = {"slots_per_trial": 1}
    config.pop("slurm", None)
    config["searcher"]["max_length"] = {"epochs": EPOCHS}
    # Keep both checkpoints (Determined's default GC keeps the best and the latest only):
    # the best, not the first, must come first in list_checkpoints().
    config["checkpoint_storage"] = {"save_trial_latest": EPOCHS}
    (context / "my_config.yaml").write_text(yaml.safe_dump(config))
    return context


def _run_script(master: Any, context: Path) -> tuple[dict[str, Any], str]:
    env = {k: v for k, v in master.env.items()
           if k not in ("DET_TRIAL_INFO", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    done = subprocess.run([sys.executable, "-c", _DRIVER], cwd=context, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (f"exit {done.returncode}\nstdout:\n{done.stdout[-3000:]}\n"
                                  f"stderr:\n{done.stderr[-6000:]}\nmaster log:\n"
                                  + master.log.read_text()[-3000:])
    line = next(li for li in done.stdout.splitlines() if li.startswith("SDK-FACTS "))
    return dict(json.loads(line.removeprefix("SDK-FACTS "))), done.stdout


@pytest.mark.slurm
def test_determined_sdk_snippets_run_against_the_cluster(compat_master: Any,
                                                         tmp_path: Path) -> None:
    context = _context(tmp_path)
    facts, stdout = _run_script(compat_master, context)

    # What the master holds: one trial, a checkpoint and a validation per epoch.
    exp = describe(compat_master, facts["experiment_id"])
    assert exp["experiment"]["state"] == facts["exit_status"] == "COMPLETED"
    (trial_row,) = exp["trials"]
    trial_id = int(trial_row["id"])
    detail = json.loads(compat_master.det("trial", "describe", str(trial_id), "--json",
                                          check=True).stdout)
    checkpoints = [c for c in detail["checkpoints"] if c["state"] == "ACTIVE"]
    assert len(checkpoints) == EPOCHS, detail["checkpoints"]
    by_loss = min(checkpoints, key=lambda c: c["validation_metrics"]["validation_loss"])
    by_accuracy = max(checkpoints, key=lambda c: c["validation_metrics"]["accuracy"])
    latest = max(checkpoints, key=lambda c: c["steps_completed"])
    training = compat_master.api(f"/trials/{trial_id}/metrics?group=training")["metrics"]

    # list_checkpoints()[0] is the best by the searcher metric (validation_loss, smaller
    # is better), as Determined sorts by default; downloads, sorts and the registry agree.
    assert facts["best_checkpoint"] == facts["checkpoint"] == by_loss["uuid"]
    assert facts["most_recent_checkpoint"] == latest["uuid"]
    assert facts["most_accurate_checkpoint"] == by_accuracy["uuid"]
    assert facts["checkpoint_path"] == f"checkpoints/{by_loss['uuid']}"
    for where in (facts["checkpoint_path"], facts["specific_path"], facts["path"]):
        assert (context / where / "state_dict.pth").is_file(), where
        assert (context / where / "load_data.json").is_file(), where
    assert facts["path"] == facts["checkpoint_path"]  # the second download() reused it

    # The listing of every checkpoint's files, with the sizes the master recorded.
    for row in checkpoints:
        assert f"Checkpoint UUID: {row['uuid']}" in stdout
        for name, size in row["resources"].items():
            assert f"Filepath: {name}, Size: {size} bytes" in stdout
    # The trial's log, through await_first_trial().iter_logs().
    log = trial_log(compat_master, trial_id)
    assert log and all(line in stdout for line in log[-5:]), log[-5:]

    assert facts["metrics_before"] == len(training) > 0
    assert facts["predictions"] == [3, 10]
    assert facts["loaded_trial"] == facts["my_pytorch_trial"] == "DigitsTrial"
    assert facts["registered"] == [1, by_loss["uuid"]]
    assert facts["latest_version"] == 1 and facts["model_versions"] == [1]
    assert facts["model"] == ["model_name", "optional description",
                              {"optional": "JSON serializable dictionary"}]
    versions = compat_master.api("/models/model_name/versions")["model_versions"]
    assert [v["checkpoint_uuid"] for v in versions] == [by_loss["uuid"]]
