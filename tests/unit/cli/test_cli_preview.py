"""``det preview-search``: the trials, brackets and budget of a search, computed locally.

The expected trials come from driving :func:`hpcdet.searcher.make_searcher` directly in
the test, the way the master does, not from the command's own helpers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from hang_guard import HANG_GUARD_S

from hpcdet.cli.main import cli
from hpcdet.searcher import Create, TrialRequest, make_searcher

REPO = Path(__file__).resolve().parents[3]
DIGITS = REPO / "examples" / "digits"


def preview(*args: str) -> Result:
    return CliRunner().invoke(cli, ["preview-search", *args], prog_name="det")


def preview_json(path: Path) -> dict[str, Any]:
    result = preview(str(path), "--json")
    assert result.exit_code == 0, result.output
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def write_config(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def master_trials(config: dict[str, Any], seed: int) -> list[TrialRequest]:
    """What the master creates: the initial trials, then one refill per completed trial."""
    searcher = make_searcher(config["searcher"], config["hyperparameters"], seed)
    created = searcher.initial_trials()
    for request in created:  # the list grows while we walk it
        for action in searcher.on_trial_exited(request.request_id, "completed"):
            if isinstance(action, Create):
                created.append(action.request)
    return created


def as_entries(requests: list[TrialRequest]) -> list[tuple[Any, ...]]:
    return [(r.request_id, r.hparams, r.seed) for r in requests]


def shown_entries(trials: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(t["request_id"], t["hparams"], t["seed"]) for t in trials]


@pytest.mark.parametrize("name, count", [("grid", 4), ("random", 6), ("const", 1)])
def test_example_trials_are_the_masters_in_creation_order(name: str, count: int) -> None:
    config = yaml.safe_load((DIGITS / f"{name}.yaml").read_text())
    answer = preview_json(DIGITS / f"{name}.yaml")
    assert answer["seed"] == 0 and answer["seed_from_config"] is False
    assert answer["trial_count"] == count
    assert [t["number"] for t in answer["trials"]] == list(range(1, count + 1))
    assert shown_entries(answer["trials"]) == as_entries(master_trials(config, seed=0))


def test_the_grid_example_is_the_whole_2x2_grid() -> None:
    answer = preview_json(DIGITS / "grid.yaml")
    points = {(t["hparams"]["lr"], t["hparams"]["hidden_size"]) for t in answer["trials"]}
    assert points == {(0.001, 32), (0.001, 128), (0.01, 32), (0.01, 128)}
    assert answer["grid_axes"] == [{"name": "lr", "size": 2}, {"name": "hidden_size", "size": 2}]


def test_a_pinned_seed_is_used_and_the_table_lists_every_trial(tmp_path: Path) -> None:
    config = yaml.safe_load((DIGITS / "random.yaml").read_text())
    config["reproducibility"] = {"experiment_seed": 1234}
    path = write_config(tmp_path, config)
    expected = master_trials(config, seed=1234)

    answer = preview_json(path)
    assert answer["seed"] == 1234 and answer["seed_from_config"] is True
    assert shown_entries(answer["trials"]) == as_entries(expected)

    text = preview(str(path))
    assert text.exit_code == 0, text.output
    assert "Seed:     1234\n" in text.stdout and "master draws one" not in text.stdout
    rows = [line.split() for line in text.stdout.splitlines() if line[:1].isdigit()]
    assert [(int(r[0]), int(r[2]), int(r[3]), int(r[4])) for r in rows] == [
        (i, t.hparams["hidden_size"], t.hparams["global_batch_size"], t.seed)
        for i, t in enumerate(expected, start=1)]


def test_without_a_seed_the_preview_says_it_uses_0() -> None:
    result = preview(str(DIGITS / "grid.yaml"))
    assert result.exit_code == 0, result.output
    assert "Seed:     0 (the config sets no reproducibility.experiment_seed" in result.stdout
    assert "the master draws one at submission" in result.stdout
    assert "Trials: 4, the whole grid (2 lr x 2 hidden_size)" in result.stdout
    assert "Constant hyperparameters: global_batch_size=64" in result.stdout


WORKED_ASHA = {
    "name": "worked",
    "hyperparameters": {"lr": {"type": "double", "minval": 0.001, "maxval": 0.1},
                        "model": {"width": {"type": "int", "minval": 8, "maxval": 64},
                                  "act": "relu"}},
    "searcher": {"name": "adaptive_asha", "metric": "loss", "max_trials": 100, "divisor": 4,
                 "max_time": 1000, "time_metric": "batches", "bracket_rungs": [5, 4, 3]},
    "reproducibility": {"experiment_seed": 42},
}


def test_asha_brackets_rungs_and_budget_of_the_worked_example(tmp_path: Path) -> None:
    answer = preview_json(write_config(tmp_path, WORKED_ASHA))
    brackets = answer["brackets"]
    assert [(b["num_rungs"], b["max_trials"]) for b in brackets] == [(5, 71), (4, 22), (3, 7)]
    assert [b["max_concurrent_trials"] for b in brackets] == [6, 5, 5]  # 16 split over 3
    assert [(r["units_needed"], r["trials"]) for r in brackets[0]["rungs"]] == [
        (3, 71), (15, 17), (62, 4), (250, 1), (1000, 1)]
    assert [(r["units_needed"], r["trials"]) for r in brackets[2]["rungs"]] == [
        (62, 7), (250, 1), (1000, 1)]
    # 71*3 + 17*12 + 4*47 + 188 + 750, and likewise for brackets 2 (1503) and 3 (1372).
    assert answer["budget"] == {"unit": "batches", "stopped_early": 1543 + 1503 + 1372,
                                "none_stopped": 100 * 1000}


def test_asha_initial_trials_are_the_searchers(tmp_path: Path) -> None:
    answer = preview_json(write_config(tmp_path, WORKED_ASHA))
    searcher = make_searcher(WORKED_ASHA["searcher"], WORKED_ASHA["hyperparameters"], 42)
    expected = searcher.initial_trials()
    assert len(expected) == 16
    assert shown_entries(answer["initial_trials"]) == as_entries(expected)
    assert [t["bracket"] for t in answer["initial_trials"]] == [1] * 6 + [2] * 5 + [3] * 5
    assert answer["initial_trials"][0]["hparams"]["model"]["act"] == "relu"


def test_asha_table_for_people(tmp_path: Path) -> None:
    result = preview(str(write_config(tmp_path, WORKED_ASHA)))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Brackets: 3 (bracket_rungs [5, 4, 3], divisor 4, max_time 1000 batches" in out
    assert "Budget: 4418 batches if each rung lets only its best 1/4 continue" in out
    assert "100000 batches if no trial is stopped" in out
    assert "Initial trials: 16" in out
    assert "lr" in out and "model.width" in out  # one column per varying hyperparameter
    assert "Constant hyperparameters: model.act=relu" in out


def test_the_asha_example_stops_some_trials_and_lets_one_finish() -> None:
    answer = preview_json(DIGITS / "asha.yaml")
    searcher = answer["searcher"]
    assert (searcher["time_metric"], searcher["max_trials"]) == ("epochs", 8)
    [bracket] = answer["brackets"]
    reaching = [r["trials"] for r in bracket["rungs"]]
    assert reaching[0] == 8 and reaching[-1] < 8  # some are stopped early
    assert bracket["rungs"][-1]["units_needed"] == searcher["max_time"]
    assert len(answer["initial_trials"]) == bracket["max_concurrent_trials"] == 3


def test_legacy_max_length_names_the_time_metric(tmp_path: Path) -> None:
    doc = {**WORKED_ASHA, "searcher": {"name": "adaptive_asha", "metric": "loss",
                                       "max_trials": 4, "max_length": {"epochs": 16}}}
    answer = preview_json(write_config(tmp_path, doc))
    assert answer["budget"]["unit"] == "epochs"
    assert answer["budget"]["none_stopped"] == 4 * 16


def test_an_invalid_config_lists_every_problem(tmp_path: Path) -> None:
    doc = {"max_restarts": -1, "resources": {"slots_per_trial": "two"},
           "searcher": {"name": "random", "metric": "loss", "max_trials": 2}}
    result = preview(str(write_config(tmp_path, doc)))
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "Error: the experiment config is invalid:"
    assert any(line.startswith("  <config>.resources.slots_per_trial") for line in lines)
    assert any(line.startswith("  <config>.max_restarts") for line in lines)
    assert "Traceback" not in result.output


@pytest.mark.parametrize("searcher, problem", [
    ({"name": "random", "metric": "loss"}, "<config>.searcher.max_trials: is required"),
    ({"name": "adaptive_asha", "metric": "loss", "max_trials": 4},
     "<config>.searcher.max_time: is required"),
])
def test_what_a_preview_needs_is_required(tmp_path: Path, searcher: dict[str, Any],
                                          problem: str) -> None:
    result = preview(str(write_config(tmp_path, {"searcher": searcher})))
    assert result.exit_code == 1
    assert problem in result.stderr


def test_a_config_without_a_searcher_cannot_be_previewed(tmp_path: Path) -> None:
    result = preview(str(write_config(tmp_path, {"name": "x"})))
    assert result.exit_code == 1
    assert "Error: the experiment config is invalid: <config>.searcher: is required" \
        in result.stderr


def test_malformed_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("searcher:\n  name: [grid\n")
    result = preview(str(path))
    assert result.exit_code == 1
    assert f"Error: malformed YAML: {path}:" in result.stderr


def test_a_missing_file_is_one_error_line(tmp_path: Path) -> None:
    result = preview(str(tmp_path / "nope.yaml"))
    assert result.exit_code == 1
    assert result.stderr.strip() == (f"Error: configuration file '{tmp_path / 'nope.yaml'}' "
                                     "does not exist")


def test_a_huge_random_search_lists_only_the_first_trials(tmp_path: Path) -> None:
    doc = {"hyperparameters": {"x": {"type": "int", "minval": 0, "maxval": 9}},
           "searcher": {"name": "random", "metric": "loss", "max_trials": 100_000}}
    answer = preview_json(write_config(tmp_path, doc))
    assert answer["trial_count"] == 100_000
    assert len(answer["trials"]) == 2000


_PROBE = """
import sys
from hpcdet.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert exc.code == 0, exc.code
print("IMPORTED:", *(m for m in ("torch", "flask", "sqlalchemy") if m in sys.modules))
"""


def test_preview_imports_no_torch_flask_or_sqlalchemy() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", _PROBE, "preview-search",
                           str(DIGITS / "asha.yaml")], capture_output=True, text=True, env=env,
                          timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr
    assert "Brackets: 1" in done.stdout
    assert done.stdout.rsplit("IMPORTED:", 1)[1].split() == []
