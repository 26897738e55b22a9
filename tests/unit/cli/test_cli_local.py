"""``det experiment create --local``: one trial in this process, no master, no Slurm.

The expected hyperparameters come from driving :func:`hpcdet.searcher.make_searcher`
directly, as the master does. No route of the fake master may be called.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result
from conftest import FakeMasterTransport

from hpcdet.searcher import make_searcher

SCRIPT = """
import json, os, sys
import hpcdet.core

with hpcdet.core.init() as core:
    core.train.report_training_metrics(5, {"loss": 0.25})
    core.train.report_validation_metrics(5, {"validation_loss": 0.5})
    with core.checkpoint.store_path({"steps_completed": 5}) as (path, uuid):
        (path / "weights.txt").write_text("w")
    seen = {"hparams": core.info.hparams, "seed": core.info.trial_seed, "cwd": os.getcwd(),
            "config_name": core.info.experiment_config.get("name"),
            "epochs": core.info.experiment_config["searcher"]["max_length"]["epochs"],
            "world": os.environ.get("WORLD_SIZE"), "argv": sys.argv[1:]}
with open("seen.json", "w") as out:
    json.dump(seen, out)
sys.exit(int(os.environ.get("P2_EXIT", "0")))
"""

CONFIG: dict[str, Any] = {
    "name": "local-test",
    "entrypoint": "python3 train.py --flag",
    "hyperparameters": {
        "lr": {"type": "log", "base": 10, "minval": -4, "maxval": -1},
        "hidden": {"type": "int", "minval": 8, "maxval": 64},
    },
    "searcher": {"name": "random", "metric": "validation_loss", "max_trials": 4,
                 "max_length": {"epochs": 2}},
}


@pytest.fixture
def context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    return code


def write_config(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def seen(context: Path) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads((context / "seen.json").read_text())
    return answer


def local(det: Callable[..., Result], config: Path, context: Path, *args: str) -> Result:
    return det("experiment", "create", "--local", str(config), str(context), *args)


def test_the_first_trial_of_the_search_trains_in_the_context(
    det: Callable[..., Result], fake_master: FakeMasterTransport, tmp_path: Path, context: Path
) -> None:
    config = write_config(tmp_path, {**CONFIG, "reproducibility": {"experiment_seed": 7}})
    environ_before = dict(os.environ)
    result = local(det, config, context)
    assert result.exit_code == 0, result.output
    [first, *_] = make_searcher(CONFIG["searcher"], CONFIG["hyperparameters"], 7).initial_trials()
    got = seen(context)
    assert (got["hparams"], got["seed"]) == (json.loads(json.dumps(first.hparams)), first.seed)
    assert (got["cwd"], got["config_name"], got["world"]) == (str(context), "local-test", "1")
    assert got["argv"] == ["--flag"]
    assert "validation steps_completed=5 validation_loss=0.5" in result.stderr
    assert [p.name for p in (context / "checkpoints").iterdir()][0]
    assert "experiment seed 0" not in result.stderr
    assert "Local trial completed." in result.stderr
    assert (os.getcwd(), dict(os.environ)) == (str(tmp_path), environ_before)
    assert fake_master.requests == []


def test_without_a_seed_it_uses_experiment_seed_0_and_says_so(
    det: Callable[..., Result], tmp_path: Path, context: Path
) -> None:
    result = local(det, write_config(tmp_path, CONFIG), context)
    assert result.exit_code == 0, result.output
    [first, *_] = make_searcher(CONFIG["searcher"], CONFIG["hyperparameters"], 0).initial_trials()
    assert seen(context)["seed"] == first.seed
    assert "the config sets no reproducibility.experiment_seed: using experiment seed 0" in (
        result.stderr)


def test_config_overrides_apply(det: Callable[..., Result], tmp_path: Path,
                                context: Path) -> None:
    result = local(det, write_config(tmp_path, CONFIG), context,
                   "--config", "searcher.max_length.epochs=9")
    assert result.exit_code == 0, result.output
    assert seen(context)["epochs"] == 9


def test_a_failing_trial_exits_1(det: Callable[..., Result], tmp_path: Path, context: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("P2_EXIT", "3")
    result = local(det, write_config(tmp_path, CONFIG), context)
    assert result.exit_code == 1
    assert "Error: the local trial failed (exit code 3)" in result.stderr


@pytest.mark.parametrize(("change", "message"), [
    ({"resources": {"slots_per_trial": "two"}},
     "Error: the experiment config is invalid: <config>.resources.slots_per_trial"),
    ({"entrypoint": None}, "<config>.entrypoint: is required"),
    ({"searcher": {"name": "random", "metric": "loss", "max_length": {"epochs": 1}}},
     "<config>.searcher.max_trials: is required by the random searcher"),
])
def test_an_invalid_config_is_refused_like_the_other_commands(
    det: Callable[..., Result], fake_master: FakeMasterTransport, tmp_path: Path,
    context: Path, change: dict[str, Any], message: str
) -> None:
    result = local(det, write_config(tmp_path, {**CONFIG, **change}), context)
    assert result.exit_code == 1
    assert message in result.stderr
    assert not (context / "seen.json").exists() and fake_master.requests == []


def test_a_bad_entrypoint_is_one_error_line(det: Callable[..., Result], tmp_path: Path,
                                            context: Path) -> None:
    config = {**CONFIG, "entrypoint": "python3 -m determined.launch.deepspeed train.py"}
    result = local(det, write_config(tmp_path, config), context)
    assert result.exit_code == 1
    assert "Error: entrypoint: python3 -m determined.launch.deepspeed is Determined's" in (
        result.stderr)


def test_a_missing_context_is_refused(det: Callable[..., Result], tmp_path: Path) -> None:
    result = local(det, write_config(tmp_path, CONFIG), tmp_path / "nothere")
    assert result.exit_code == 1
    assert "context directory" in result.stderr and "does not exist" in result.stderr


@pytest.mark.parametrize("flag", [["--follow"], ["--dry-run"], ["--json"], ["--template", "t"]])
def test_options_that_need_a_master_are_refused(
    det: Callable[..., Result], tmp_path: Path, context: Path, flag: list[str]
) -> None:
    result = local(det, write_config(tmp_path, CONFIG), context, *flag)
    assert result.exit_code == 2
    assert f"--local cannot be used with {flag[0]}" in result.stderr
