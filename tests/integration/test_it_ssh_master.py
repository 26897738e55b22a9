"""The walking skeleton with the master off the cluster: every scheduler command and every
job-directory file operation goes through the SSH transport to the dev sshd (a stand-in
login node on 127.0.0.1), and the master's own PATH has no Slurm command at all.

The job directories are on this host's filesystem too (there is one host here), so the
SFTP server's log (scripts/dev-sshd keeps one) is what shows the files went over SSH.

The trial is the digits example's config on 2 slots with the stand-in trial
(``standin/standin.py``: the digits trial's reports and checkpoints on the standard
library): the transport, not the training, is under test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from it_helpers import (
    REPO,
    STANDIN_ENTRYPOINT,
    LiveMaster,
    load_json,
    sacct_state,
    standin_context,
    wait_for,
)
from test_it_walking_skeleton import DIGITS, created_id, describe

pytestmark = [pytest.mark.ssh, pytest.mark.slurm]
# One database is enough: the transport does not touch it.
SQLITE_ONLY = pytest.mark.parametrize("master", ["sqlite"], indirect=True)


@pytest.fixture
def slurm(slurm: dict[str, str], sshd: dict[str, str],
          tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The master's environment: a PATH holding python3 only, and no SLURM_CONF."""
    bin_dir = tmp_path_factory.mktemp("master-bin")
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {key: value for key, value in slurm.items() if key != "SLURM_CONF"}
    env["PATH"] = str(bin_dir)
    assert shutil.which("sbatch", path=env["PATH"]) is None
    assert shutil.which("squeue", path=env["PATH"]) is None
    return env


@pytest.fixture
def resource_manager_settings(request: pytest.FixtureRequest, sshd: dict[str, str],
                              tmp_path: Path) -> dict[str, Any]:
    """``transport: ssh`` to the dev sshd; with param ``changed-key``, a known_hosts file
    holding another key for it."""
    known = sshd["HPCDET_SSHD_KNOWN_HOSTS"]
    if getattr(request, "param", "") == "changed-key":
        other = Path(sshd["HPCDET_SSHD_KEY"] + ".pub").read_text().split()[:2]  # not the host's
        known = str(tmp_path / "known_hosts")
        Path(known).write_text(f"[127.0.0.1]:{sshd['HPCDET_SSHD_PORT']} {' '.join(other)}\n")
    return {"transport": {"type": "ssh", "host": sshd["HPCDET_SSHD_HOST"],
                          "port": int(sshd["HPCDET_SSHD_PORT"]), "user": sshd["HPCDET_SSHD_USER"],
                          "key_file": sshd["HPCDET_SSHD_KEY"], "known_hosts": known,
                          "keepalive_seconds": 5, "connect_timeout": 5}}


def sftp_log(sshd: dict[str, str]) -> str:
    path = Path(sshd["HPCDET_SSHD_DIR"]) / "sftp.log"
    return path.read_text(errors="replace") if path.exists() else ""


def dev_sshd(verb: str) -> None:
    # os.environ has SLURM_CONF (the slurm fixture sets it): the sessions keep getting it.
    subprocess.run([str(REPO / "scripts" / "dev-sshd"), verb], check=True, timeout=120)


def digits(tmp_path: Path, epochs: int = 5, pace: float = 0) -> Path:
    """const.yaml with the stand-in trial, ``pace`` seconds a batch; its context is
    :func:`context`."""
    config = yaml.safe_load((DIGITS / "const.yaml").read_text())
    config["entrypoint"] = STANDIN_ENTRYPOINT
    config["searcher"]["max_length"] = {"epochs": epochs}
    config["environment"]["environment_variables"].append(f"STANDIN_BATCH_SLEEP={pace}")
    path = tmp_path / "digits-ssh.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def context(tmp_path: Path) -> str:
    return str(standin_context(tmp_path / "context"))


def assert_completed_whole(master: LiveMaster, exp_id: int, epochs: int) -> dict[str, Any]:
    """COMPLETED, with every epoch's validation and checkpoint and every log line."""
    exp = describe(master, exp_id)
    trial = exp["trials"][0]
    if exp["experiment"]["state"] != "COMPLETED":
        raise AssertionError(f"{exp}\n{master.log.read_text()[-3000:]}")
    detail = load_json(master.det("trial", "describe", str(trial["id"]), "--json",
                                  check=True).stdout)
    assert [h["to"] for h in detail["trial"]["history"]] == ["QUEUED", "RUNNING", "COMPLETED"]
    assert detail["trial"]["latest_validation"]["metrics"]["epochs"] == epochs
    validations = master.api(f"/trials/{trial['id']}/metrics?group=validation")["metrics"]
    assert len(validations) == epochs, validations
    assert len(detail["checkpoints"]) == epochs
    job_id = detail["trial"]["job_ids"][0]
    assert sacct_state(job_id, dict(os.environ)) == "COMPLETED"  # the tests' own Slurm
    job_dir = master.job_root / f"exp-{exp_id}" / f"trial-{trial['id']}"
    for stream, suffix in (("stdout", "out"), ("stderr", "err")):
        stored = master.api(f"/trials/{trial['id']}/logs?stream={stream}&limit=100000")["logs"]
        written = (job_dir / f"slurm-{job_id}.{suffix}").read_text().splitlines()
        assert len(stored) == len(written), stream  # every line, none twice
    ranks = {line["rank"] for line in master.api(f"/trials/{trial['id']}/logs")["logs"]}
    assert ranks - {None} == {0, 1}
    return detail


@SQLITE_ONLY
def test_digits_completes_through_the_login_node(master: LiveMaster, tmp_path: Path,
                                                 sshd: dict[str, str]) -> None:
    assert "SLURM_CONF" not in master.env and "sbatch" not in os.listdir(master.env["PATH"])
    result = master.det("experiment", "create", str(digits(tmp_path)), context(tmp_path),
                        "--follow", check=True, timeout=600)
    exp_id = created_id(result.stdout)
    assert_completed_whole(master, exp_id, epochs=5)
    trial_dir = master.job_root / f"exp-{exp_id}" / "trial-1"
    log = sftp_log(sshd)
    assert f'mkdir name "{trial_dir}"' in log
    assert f'posix-rename old "{trial_dir}/.trial.json.' in log  # written over SFTP
    assert f'posix-rename old "{trial_dir}/.job-1.sh.' in log  # the job script too
    assert f'open "{trial_dir}/slurm-' in log  # its log read over SFTP


@SQLITE_ONLY
def test_a_login_node_down_for_20s_mid_trial_loses_nothing(master: LiveMaster,
                                                           tmp_path: Path) -> None:
    epochs = 8  # about 20 s: the outage begins mid-trial
    exp_id = created_id(master.det("experiment", "create",
                                   str(digits(tmp_path, epochs, pace=0.1)), context(tmp_path),
                                   check=True).stdout)
    wait_for(lambda: describe(master, exp_id)["trials"]
             and describe(master, exp_id)["trials"][0]["state"] == "RUNNING",
             "the trial to run", timeout=300)
    dev_sshd("down")  # the listener and every session: the master's connection drops
    try:
        time.sleep(20)
        assert describe(master, exp_id)["trials"][0]["state"] == "RUNNING"  # nothing changed
    finally:
        dev_sshd("up")
    wait_for(lambda: describe(master, exp_id)["experiment"]["state"] in (
        "COMPLETED", "ERROR", "CANCELED"), "the experiment to end", timeout=300)
    assert_completed_whole(master, exp_id, epochs)
    assert "the cluster is unreachable" in master.log.read_text()  # cycles were skipped


@SQLITE_ONLY
@pytest.mark.parametrize("resource_manager_settings", ["changed-key"], indirect=True)
def test_a_changed_host_key_is_refused_and_nothing_is_submitted(master: LiveMaster,
                                                                tmp_path: Path) -> None:
    exp_id = created_id(master.det("experiment", "create", str(digits(tmp_path)),
                                   context(tmp_path), check=True).stdout)
    name = "[127.0.0.1]:"
    wait_for(lambda: "changed: it offers" in master.log.read_text(),
             "the master to refuse the host key", timeout=60)
    line = next(li for li in master.log.read_text().splitlines() if "changed: it offers" in li)
    assert f"the SSH host key of {name}" in line and "refusing to connect" in line
    assert "ssh-keygen -R" in line and "Traceback" not in master.log.read_text()
    trial = describe(master, exp_id)["trials"]
    assert not trial or (trial[0]["state"] == "QUEUED" and not trial[0]["job_ids"])
