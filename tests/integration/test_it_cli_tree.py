"""A Determined user's day with the real ``det``, master and dev Slurm cluster (issue 16 item 4).

Create the digits example, wait for it, set its description, name and priority, label it,
list it as CSV and JSON, list its checkpoints, download its model definition, fork it with
a hyperparameter override and wait for the fork to COMPLETE, continue the original with a
longer ``max_length`` (it resumes from its latest checkpoint and COMPLETES again), tighten
its GC policy, and delete it (its checkpoint directories go with it); read the master's log
and config.
"""

from __future__ import annotations

import csv
import io
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from it_helpers import REPO, LiveMaster, load_json, wait_for

pytestmark = [pytest.mark.slurm, pytest.mark.torch]
DIGITS = REPO / "examples" / "digits"
EPOCHS, MORE_EPOCHS = 2, 4


def _config(tmp_path: Path) -> Path:
    config = yaml.safe_load((DIGITS / "const.yaml").read_text())
    config["resources"]["slots_per_trial"] = 1
    config["slurm"]["slots_per_node"] = 1
    config["searcher"]["max_length"] = {"epochs": EPOCHS}
    path = tmp_path / "const.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _describe(master: LiveMaster, exp_id: int) -> dict[str, Any]:
    return dict(load_json(master.det("e", "describe", str(exp_id), "--json",
                                     check=True).stdout))


def _created(output: str) -> int:
    line = next(li for li in output.splitlines() if li.startswith("Created experiment"))
    return int(line.split()[-1])


def _wait_ended(master: LiveMaster, exp_id: int) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        answer = _describe(master, exp_id)
        state = answer["experiment"]["state"]
        return answer if state in ("COMPLETED", "CANCELED", "ERROR") else None

    answer: dict[str, Any] = wait_for(ended, f"experiment {exp_id} to end", timeout=600)
    if answer["experiment"]["state"] != "COMPLETED":
        trial = answer["trials"][0]["id"]
        raise AssertionError(f"{answer}\n{master.det('trial', 'logs', str(trial)).stdout}\n"
                             f"{master.log.read_text()[-3000:]}")
    return answer


# SQLite only: every route behind these commands is unit-tested on both databases
# (tests/unit/master/test_master_cli_tree_api.py); this is the end-to-end session, ~2 min.
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_a_day_with_the_command_tree(master: LiveMaster, tmp_path: Path) -> None:
    created = master.det("e", "create", str(_config(tmp_path)), str(DIGITS), "--follow",
                         check=True, timeout=600)
    exp_id = _created(created.stdout)
    first = _wait_ended(master, exp_id)
    trial_id = first["trials"][0]["id"]
    steps_before = first["trials"][0]["steps_completed"]

    master.det("e", "set", "description", str(exp_id), "the baseline", check=True)
    master.det("e", "set", "name", str(exp_id), "digits-baseline", check=True)
    master.det("e", "set", "priority", str(exp_id), "10", check=True)
    master.det("e", "label", "add", str(exp_id), "baseline", check=True)
    master.det("e", "label", "add", str(exp_id), "mlp", check=True)
    master.det("e", "label", "remove", str(exp_id), "mlp", check=True)
    rows = list(csv.DictReader(io.StringIO(master.det("e", "list", "--csv",
                                                      check=True).stdout)))
    assert [(r["ID"], r["Name"], r["State"]) for r in rows] == [
        (str(exp_id), "digits-baseline", "COMPLETED")]
    listed = load_json(master.det("e", "list", "--json", check=True).stdout)["experiments"]
    assert listed[0]["labels"] == ["baseline"]
    assert listed[0]["description"] == "the baseline"

    checkpoints = list(csv.DictReader(io.StringIO(master.det(
        "checkpoint", "list", str(exp_id), "--csv", check=True).stdout)))
    assert checkpoints and all(c["State"] == "ACTIVE" for c in checkpoints)

    tgz = Path(master.det("e", "download-model-def", str(exp_id), "--output-dir",
                          str(tmp_path / "def"), check=True).stdout.strip())
    with tarfile.open(tgz, mode="r:gz") as tar:
        assert {"model_def.py", "const.yaml"} <= set(tar.getnames())

    forked = master.det("e", "fork", str(exp_id), "--config", "hyperparameters.lr=0.05",
                        check=True)
    fork_id = _created(forked.stdout)
    fork = _wait_ended(master, fork_id)
    assert fork["experiment"]["parent_id"] == exp_id
    assert fork["experiment"]["config"]["hyperparameters"]["lr"] == 0.05
    assert fork["trials"][0]["hparams"]["lr"] == 0.05

    master.det("e", "continue", str(exp_id), "--config",
               f"searcher.max_length.epochs={MORE_EPOCHS}", check=True)
    again = _wait_ended(master, exp_id)
    trial = again["trials"][0]
    assert trial["id"] == trial_id and trial["steps_completed"] > steps_before
    history = [h["to"] for h in load_json(master.det(
        "trial", "describe", str(trial_id), "--json", check=True).stdout)["trial"]["history"]]
    assert history[:3] == ["QUEUED", "RUNNING", "COMPLETED"]
    assert history[3:] == ["QUEUED", "RUNNING", "COMPLETED"]
    logs = master.det("trial", "logs", str(trial_id), check=True).stdout
    assert "resuming from checkpoint" in logs

    master.det("e", "set", "gc-policy", str(exp_id), "--save-experiment-best", "0",
               "--save-trial-best", "0", "--save-trial-latest", "1", "--yes", check=True)
    kept = load_json(master.det("e", "lc", str(exp_id), "--json", check=True).stdout)
    assert len(kept["checkpoints"]) == 1
    storage = Path(kept["checkpoints"][0]["storage_path"])
    assert storage.is_dir()

    deleted = master.det("e", "delete", str(exp_id), "--yes", check=True)
    assert deleted.stdout.startswith(f"Deleted experiment {exp_id}")
    assert not storage.exists()
    gone = master.det("e", "describe", str(exp_id))
    assert gone.returncode == 1 and f"experiment {exp_id} not found" in gone.stderr
    assert _describe(master, fork_id)["experiment"]["parent_id"] == exp_id

    # The master's own log, as its processes wrote it (an open master: everyone is admin).
    master_log = master.det("master", "logs", "--tail", "10000", check=True).stdout
    assert f"trial {trial_id} run 2 submitted as job" in master_log
    shown = yaml.safe_load(master.det("master", "config", check=True).stdout)
    assert shown["auth_mode"] == "open" and shown["master_url"] == master.url
