"""The digits example's searches through the real CLI, master and Slurm.

A grid search of 4 trials (on SQLite) and an adaptive ASHA search of 8 trials (on
PostgreSQL) run to COMPLETED; ASHA's early-stopped trials end COMPLETED and show as such,
and the ASHA experiment's web page (in headless Chromium) shows each trial's rung, the best
trial, and charts with a point per validation and per trial.

The searches are the example's configs (grid.yaml, asha.yaml: their hyperparameters and
searcher sections), with the stand-in trial (``standin/standin.py``: the digits trial's
reports and stops on the standard library, paced) as entrypoint: what is under test is
the searcher, not the training (which test_it_model_registry runs: asha.yaml with torch).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from it_helpers import REPO, STANDIN_ENTRYPOINT, LiveMaster, load_json, standin_context

from hpcdet.searcher import grid_points

pytestmark = [pytest.mark.slurm]
DIGITS = REPO / "examples" / "digits"


def create(master: LiveMaster, config: Path, *options: str) -> int:
    context = standin_context(config.parent / "context")
    result = master.det("experiment", "create", *options, str(config), str(context),
                        check=True)
    line = next(li for li in result.stdout.splitlines() if li.startswith("Created experiment"))
    return int(line.split()[-1])


def standin_search(tmp_path: Path, example: str, pace: float) -> Path:
    """The example's search config with the stand-in trial, ``pace`` seconds a batch."""
    config = yaml.safe_load((DIGITS / example).read_text())
    config["entrypoint"] = STANDIN_ENTRYPOINT
    config["environment"]["environment_variables"].append(f"STANDIN_BATCH_SLEEP={pace}")
    path = tmp_path / example
    path.write_text(yaml.safe_dump(config))
    return path


def wait_until_ended(master: LiveMaster, exp_id: int, timeout: float = 600) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = dict(load_json(master.det("experiment", "describe", str(exp_id), "--json",
                                           check=True).stdout))
        if answer["experiment"]["ended_at"]:
            return answer
        time.sleep(2)
    raise AssertionError(f"experiment {exp_id} did not end:\n{master.log.read_text()[-3000:]}")


def explain(master: LiveMaster, answer: dict[str, Any]) -> str:
    lines = [f"{t['id']} {t['state']} {t['hparams']}" for t in answer["trials"]]
    failed = [t for t in answer["trials"] if t["state"] != "COMPLETED"]
    logs = master.det("trial", "logs", str(failed[0]["id"])).stdout[-3000:] if failed else ""
    return "\n".join(lines) + "\n" + logs


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_grid_search_of_four_trials_runs_to_completed(master: LiveMaster,
                                                       tmp_path: Path) -> None:
    answer = wait_until_ended(master, create(master, standin_search(tmp_path, "grid.yaml", 0)))
    assert answer["experiment"]["state"] == "COMPLETED", explain(master, answer)
    trials = answer["trials"]
    assert [t["state"] for t in trials] == ["COMPLETED"] * 4, explain(master, answer)
    config = yaml.safe_load((DIGITS / "grid.yaml").read_text())
    assert sorted(map(str, (t["hparams"] for t in trials))) == sorted(
        map(str, grid_points(config["hyperparameters"])))
    assert all(t["latest_validation"]["metrics"]["epochs"] == 5 for t in trials)
    best = min(trials, key=lambda t: t["best_validation"]["metrics"]["validation_loss"])
    assert answer["experiment"]["best_trial_id"] == best["id"]
    text = master.det("experiment", "describe", str(answer["experiment"]["id"]),
                      check=True).stdout
    assert any(line.startswith(f"{best['id']} *") for line in text.splitlines()), text


@pytest.mark.browser
@pytest.mark.parametrize("master", [pytest.param("postgresql", marks=pytest.mark.postgres)],
                         indirect=True)
def test_asha_search_of_eight_trials_stops_some_early(master: LiveMaster, browser: Any,
                                                      test_output: Path, tmp_path: Path) -> None:
    # A pinned seed: the same 8 hyperparameter samples every run (a lucky draw in which
    # every newcomer beats the trials before it would stop none early). A quarter of a
    # second an epoch: a stop (polled every second) lands well before epoch 32.
    answer = wait_until_ended(master, create(master, standin_search(tmp_path, "asha.yaml", 0.01),
                                             "--config", "reproducibility.experiment_seed=3"))
    trials = answer["trials"]
    assert answer["experiment"]["state"] == "COMPLETED", explain(master, answer)
    assert len(trials) == 8 and {t["state"] for t in trials} == {"COMPLETED"}, explain(
        master, answer)
    epochs = {t["id"]: t["latest_validation"]["metrics"]["epochs"] for t in trials}
    early = [t for t in trials if t["stop_reason"] == "early_stopped"]
    assert early, "ASHA stopped no trial early"
    assert any(e == 32 for e in epochs.values()), epochs  # someone reached max_time
    assert any(epochs[t["id"]] < 32 for t in early), epochs
    # A trial trains on until it sees its stop, so it may end a rung or more past the epochs
    # the searcher decided at; the history's cause names those.
    decided = {t["id"]: float(epochs[t["id"]]) for t in trials}
    for trial in early:
        detail = load_json(master.det("trial", "describe", str(trial["id"]), "--json",
                                      check=True).stdout)
        history = detail["trial"]["history"]
        assert [h["to"] for h in history][-2:] == ["STOPPING_COMPLETED", "COMPLETED"], history
        decided[trial["id"]] = _decided_at(history[-2]["cause"])
        assert decided[trial["id"]] <= epochs[trial["id"]], (history, epochs)
    text = master.det("experiment", "describe", str(answer["experiment"]["id"]),
                      check=True).stdout
    assert "early-stopped by searcher" in text
    _check_the_experiment_page(master, answer, decided, browser, test_output)


STOP_CAUSE = re.compile(r"stopped early by the searcher: its validation_loss at epochs "
                        r"(\d+(?:\.\d+)?) ranked outside its rung's top")


def _decided_at(cause: str) -> float:
    """The epochs at which ASHA stopped a trial, from its STOPPING_COMPLETED cause."""
    found = STOP_CAUSE.fullmatch(cause)
    assert found, cause
    return float(found.group(1))


# The epochs each rung needs (asha.yaml: max_time 32, 3 rungs, divisor 2).
RUNG_EPOCHS = (8, 16, 32)


def rung_of(epochs: float) -> int:
    """The highest rung (0-based) whose epochs a trial that trained ``epochs`` reached."""
    return max(i for i, needed in enumerate(RUNG_EPOCHS) if epochs >= needed)


def _check_the_experiment_page(master: LiveMaster, answer: dict[str, Any],
                               epochs: dict[int, float], browser: Any, output: Path) -> None:
    """``epochs``: per trial, the epochs its rung is judged by (where ASHA stopped it)."""
    exp_id = answer["experiment"]["id"]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{master.url}/experiments/{exp_id}")
        page.wait_for_load_state("networkidle")
        rows = page.locator("#trials tr[data-trial-id]")
        assert rows.count() == 8
        rungs = {int(r.get_attribute("data-trial-id")): int(r.locator("td[data-rung]")
                                                                .get_attribute("data-rung"))
                 for r in rows.all()}
        texts = page.locator("#trials td[data-rung]").all_inner_texts()
        assert rungs == {t: rung_of(e) for t, e in epochs.items()}, (rungs, epochs, texts)
        best = page.locator("#trials tr.best")
        assert best.get_attribute("data-trial-id") == str(answer["experiment"]["best_trial_id"])
        validations = sum(len(_validation_steps(master, t["id"])) for t in answer["trials"])
        assert page.locator("#validation-chart svg").get_attribute("data-points") == str(
            validations)
        for name in ("lr", "hidden_size", "global_batch_size"):
            chart = page.locator(f'.hparam-chart[data-hparam="{name}"] svg')
            assert chart.get_attribute("data-points") == "8", name
        assert "lr (log scale)" in page.locator('.hparam-chart[data-hparam="lr"]').inner_text()
        page.screenshot(path=str(output / "asha-experiment.png"), full_page=True)
        assert errors == []
    finally:
        page.close()


def _validation_steps(master: LiveMaster, trial_id: int) -> set[int]:
    entries = master.api(f"/trials/{trial_id}/metrics?group=validation")["metrics"]
    return {e["steps_completed"] for e in entries if "validation_loss" in e["metrics"]}


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_preview_search_shows_the_trials_the_master_creates(master: LiveMaster,
                                                              tmp_path: Path) -> None:
    config = yaml.safe_load((DIGITS / "random.yaml").read_text())
    config["reproducibility"] = {"experiment_seed": 1234}
    config["searcher"].update(max_trials=2, max_concurrent_trials=2)
    config["entrypoint"] = "python3 -c pass"
    path = tmp_path / "random.yaml"
    path.write_text(yaml.safe_dump(config))
    preview = load_json(master.det("preview-search", str(path), "--json", check=True).stdout)
    answer = wait_until_ended(master, create(master, path))
    assert [t["hparams"] for t in answer["trials"]] == [
        t["hparams"] for t in preview["trials"]]
