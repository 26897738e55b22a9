"""The digits example through the real CLI, master and Slurm, on SQLite and PostgreSQL."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from it_helpers import (
    REPO,
    LiveMaster,
    failed_exit_code,
    load_json,
    sacct_state,
    transport_settings,
    write_experiment,
)

from hpcdet.hostlist import expand_nodelist

pytestmark = [pytest.mark.slurm, pytest.mark.torch]
DIGITS = REPO / "examples" / "digits"


def digits_config(tmp_path: Path, slots_per_node: int) -> Path:
    config = yaml.safe_load((DIGITS / "const.yaml").read_text())
    config["resources"]["slots_per_trial"] = 2
    config.setdefault("slurm", {})["slots_per_node"] = slots_per_node
    path = tmp_path / f"digits-{slots_per_node}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def describe(master: LiveMaster, exp_id: int) -> dict[str, Any]:
    return dict(load_json(master.det("experiment", "describe", str(exp_id), "--json",
                                     check=True).stdout))


def created_id(output: str) -> int:
    line = next(li for li in output.splitlines() if li.startswith("Created experiment"))
    return int(line.split()[-1])


@pytest.fixture
def resource_manager_settings(request: pytest.FixtureRequest) -> dict[str, Any]:
    """As the test's param says: ``local`` or ``cli`` (the conftest's empty settings),
    ``rest`` (Slurm through slurmrestd), or ``pyslurm`` (``slurm_api``: only where pyslurm is
    built for the dev cluster's Slurm, 25.11)."""
    param = getattr(request, "param", "local")
    if param == "pyslurm":
        request.getfixturevalue("pyslurm_ready")
        return {"slurm_api": param}
    return transport_settings(request)


# CI time: the two-node placement runs on SQLite only (the database plays no part in it);
# on Slurm 22.05 (the smoke set) only the two-node one; through slurmrestd (25.11) one case.
@pytest.mark.parametrize(("master", "slots_per_node", "nodes", "resource_manager_settings"), [
    ("sqlite", 2, 1, "local"), pytest.param("sqlite", 1, 2, "local",
                                            marks=pytest.mark.slurm_smoke),
    pytest.param("postgresql", 2, 1, "local", marks=pytest.mark.postgres),
    pytest.param("sqlite", 2, 1, "rest", marks=pytest.mark.slurm2511)],
    indirect=["master", "resource_manager_settings"])
def test_digits_runs_to_completed(master: LiveMaster, tmp_path: Path, slots_per_node: int,
                                  nodes: int) -> None:
    result = master.det("experiment", "create", str(digits_config(tmp_path, slots_per_node)),
                        str(DIGITS), "--follow", check=True, timeout=600)
    exp = describe(master, created_id(result.stdout))
    trial = exp["trials"][0]
    if exp["experiment"]["state"] != "COMPLETED":
        logs = master.det("trial", "logs", str(trial["id"])).stdout
        raise AssertionError(f"{exp}\n{result.stdout}{result.stderr}\n{logs}\n"
                             f"{master.log.read_text()[-3000:]}")
    assert [h["to"] for h in exp["experiment"]["history"]] == [
        "ACTIVE", "STOPPING_COMPLETED", "COMPLETED"]
    detail = load_json(master.det("trial", "describe", str(trial["id"]), "--json",
                                  check=True).stdout)
    assert [h["to"] for h in detail["trial"]["history"]] == ["QUEUED", "RUNNING", "COMPLETED"]
    assert detail["trial"]["latest_validation"]["metrics"]["accuracy"] > 0.8
    assert detail["checkpoints"], "a checkpoint was registered"
    # The master records the job's Slurm hostlist: one host for 2x1, two distinct for 1x2.
    hosts = expand_nodelist(detail["trial"]["nodes"])
    assert len(hosts) == len(set(hosts)) == nodes, hosts
    ranks = {line["rank"] for line in master.api(f"/trials/{trial['id']}/logs")["logs"]}
    assert ranks - {None} == {0, 1}  # two slots, two ranks; unlabelled lines have no rank
    job_id = detail["trial"]["job_ids"][0]
    assert sacct_state(job_id, master.env) == "COMPLETED"
    _assert_node_count(master, job_id, nodes)


def _assert_node_count(master: LiveMaster, job_id: str, nodes: int) -> None:
    import subprocess

    out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "NNodes"],
                         env=master.env, capture_output=True, text=True).stdout.split()
    assert out and int(out[0]) == nodes


FAILING_SCRIPT = """\
import sys
for i in range(30):
    print(f"working on step {i}", flush=True)
print("fatal: the data went missing", file=sys.stderr, flush=True)
sys.exit(3)
"""


def test_a_failing_job_ends_in_error_with_its_log_tail(master: LiveMaster,
                                                       tmp_path: Path) -> None:
    config = {"name": "fails", "entrypoint": "python3 fail.py",
              "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
              "resources": {"slots_per_trial": 1}, "max_restarts": 0}
    path = write_experiment(tmp_path / "ctx", config, {"fail.py": FAILING_SCRIPT})
    result = master.det("experiment", "create", str(path), str(tmp_path / "ctx"), "--follow",
                        timeout=600)
    assert result.returncode != 0
    exp = describe(master, created_id(result.stdout))
    assert exp["experiment"]["state"] == "ERROR"
    trial_id = exp["trials"][0]["id"]
    logs = master.det("trial", "logs", str(trial_id), "--tail", "5", check=True).stdout
    assert "fatal: the data went missing" in logs
    assert failed_exit_code(exp["trials"][0]["job_ids"][0], master.env) == "3:0"


# Rank 1 fails; srun (--kill-on-bad-exit) then ends the step, and rank 0, which (like a
# trial that checkpoints on SIGTERM) would exit 0, must not turn the failure into a
# preemption. (Here Slurm's step cancel leaves no preemption record; the master's rule
# for a FAILED job whose chief did record one is unit-tested in test_master_outcomes.)
FAILING_RANK_SCRIPT = """\
import os, signal, sys, time
if os.environ["SLURM_PROCID"] != "0":
    time.sleep(2)
    print("fatal: rank 1 lost its shard", file=sys.stderr, flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
time.sleep(120)
"""


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
def test_one_failing_rank_fails_the_trial(master: LiveMaster, tmp_path: Path) -> None:
    config = {"name": "one rank fails", "entrypoint": "python3 fail.py",
              "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
              "resources": {"slots_per_trial": 2}, "slurm": {"slots_per_node": 2},
              "max_restarts": 0}
    path = write_experiment(tmp_path / "ctx", config, {"fail.py": FAILING_RANK_SCRIPT})
    result = master.det("experiment", "create", str(path), str(tmp_path / "ctx"), "--follow",
                        timeout=300)
    exp = describe(master, created_id(result.stdout))
    trial = exp["trials"][0]
    assert (exp["experiment"]["state"], len(trial["job_ids"])) == ("ERROR", 1), trial
    assert failed_exit_code(trial["job_ids"][0], master.env) != "0:0"


# With slurm_api: pyslurm too: the master's polls read the queue through pyslurm.
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)  # scancel: no database part
@pytest.mark.parametrize("resource_manager_settings", [
    pytest.param("cli", marks=pytest.mark.slurm_smoke),
    pytest.param("pyslurm", marks=pytest.mark.slurm2511)], indirect=True)
def test_kill_cancels_the_slurm_job(master: LiveMaster, tmp_path: Path,
                                    resource_manager_settings: dict[str, Any]) -> None:
    config = {"name": "sleeps", "entrypoint": "python3 sleep.py",
              "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
              "resources": {"slots_per_trial": 1}}
    path = write_experiment(tmp_path / "ctx", config,
                            {"sleep.py": "import time\nprint('up', flush=True)\ntime.sleep(600)\n"})
    exp_id = created_id(master.det("experiment", "create", str(path), str(tmp_path / "ctx"),
                                   check=True).stdout)
    _wait_for(master, exp_id, lambda e: e["trials"] and e["trials"][0]["state"] == "RUNNING")
    master.det("experiment", "kill", str(exp_id), check=True)
    exp = _wait_for(master, exp_id, lambda e: e["experiment"]["state"] == "CANCELED")
    assert exp["trials"][0]["state"] == "CANCELED"
    assert sacct_state(exp["trials"][0]["job_ids"][0], master.env).startswith("CANCELLED")
    # The RUNNING the test waited for came from the queue as the master was told to read it.
    through_pyslurm = "job statuses: the queue through pyslurm" in master.log.read_text()
    assert through_pyslurm == (resource_manager_settings.get("slurm_api") == "pyslurm")


def _wait_for(master: LiveMaster, exp_id: int, ready: Any) -> dict[str, Any]:
    import time

    for _ in range(240):
        exp = describe(master, exp_id)
        if ready(exp):
            return exp
        time.sleep(0.5)
    raise AssertionError(f"experiment {exp_id} never got there: {exp}")


def test_bad_input_leaves_nothing_behind(master: LiveMaster, tmp_path: Path) -> None:
    config = {"name": "bad", "entrypoint": "python3 x.py",
              "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
              "slurm": {"sbatch_args": ["--partition=debug", "--mem=1G"]}}
    path = write_experiment(tmp_path / "ctx", config, {"x.py": "pass\n"})
    refused = master.det("experiment", "create", str(path), str(tmp_path / "ctx"))
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "<config>.slurm.sbatch_args[0]" in refused.stderr
    # The refusal lists every option hpcdet controls.
    assert "hpcdet sets these options itself: --ntasks-per-node, --gpus" in refused.stderr
    assert "--partition, -p" in refused.stderr and "--gres=gpu..." in refused.stderr
    missing = master.det("experiment", "create", str(path), str(tmp_path / "nope"))
    assert missing.returncode != 0 and "nope" in missing.stderr
    assert "Traceback" not in missing.stderr
    listed = load_json(master.det("experiment", "list", "--json", check=True).stdout)
    assert listed["experiments"] == []
    shutil.rmtree(tmp_path / "ctx")


@pytest.mark.parametrize("master", ["sqlite"], indirect=True)  # writes nothing to the database
def test_dry_run_prints_a_script_sbatch_accepts(master: LiveMaster, tmp_path: Path) -> None:
    import subprocess

    config = {"name": "dry", "entrypoint": "python3 hello.py",
              "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}}}
    path = write_experiment(tmp_path / "ctx", config,
                            {"hello.py": "print('hello from a hand-submitted job')\n"})
    script = master.det("experiment", "create", str(path), str(tmp_path / "ctx"), "--dry-run",
                        check=True).stdout
    assert script.startswith("#!/bin/bash")
    (tmp_path / "job.sh").write_text(script)
    # The scratch job directory is removed after rendering (issue 14): sbatch checks the
    # script and finds where it would run without submitting it.
    checked = subprocess.run(["sbatch", "--test-only", str(tmp_path / "job.sh")],
                             env=master.env, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert "to start at" in checked.stderr
    listed = load_json(master.det("experiment", "list", "--json", check=True).stdout)
    assert listed["experiments"] == []
