"""Trials really run in containers: Charliecloud's ``ch-run``, and podman, on the dev cluster.

The image is the directory image ``scripts/build-image`` builds (Debian bookworm, Python,
torch, hpcdet from this work tree; cached in /var/cache/hpcdet/images). The trial runs 2
ranks on one node, each of which first writes what it sees into a bind-mounted directory:
the image's marker file (/etc/hpcdet-image, which only the image has), the interpreter,
the environment, its /tmp, a file read through the bind. It is the digits example (torch,
in the image) in the first test, and the stand-in trial (``standin/standin.py``, the
standard library) where the container, not training, is the subject.

1. COMPLETED in the container, as root (the master's user; Charliecloud with digits, and
   podman) and as user_a (Charliecloud: a master running as the service account submits
   user_a's jobs as user_a, test_it_multiuser's setup);
2. ``scontrol requeue`` (SIGTERM) and then a walltime-style ``SIGUSR2`` (``scancel
   --signal=USR2``: what ``--signal=USR2@N`` sends) reach the harness inside ``ch-run``,
   which checkpoints and exits; the trial resumes from its checkpoint each time and
   COMPLETES with no restart counted. (Not podman: see the test.)

podman runs with the settings ``scripts/ensure-podman`` writes (runc, no default ulimits:
docs/admin/containers.md), named by ``CONTAINERS_CONF`` in the trial's environment.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from it_helpers import (
    REPO,
    LiveMaster,
    experiment_with_trials,
    missing,
    standin_context,
    trials_of,
)
from test_it_faults import (
    active_job,
    as_table,
    metric_rows,
    trial_of,
    wait_for,
    wait_for_epochs,
    wait_until_ended,
)
from test_it_multiuser import JOB_ROOT, SERVICE, _owner_master

from hpcdet.jobfiles import write_latest_checkpoint
from hpcdet.runas.helper import set_private_acl

pytestmark = [pytest.mark.container, pytest.mark.slurm]
DIGITS = REPO / "examples" / "digits"
# The job storage root of the owner-mode master must be a directory of the image: ch-run
# binds only onto directories a read-only image has. scripts/test passes the same list.
MOUNT_POINTS = (str(JOB_ROOT),)
DATA_IN_CONTAINER = "/tmp/ct-data"  # under ch-run's private /tmp: no mount point needed
# Run as a script (``python3 probe.py``), it records what the rank sees, then runs the
# stand-in trial; ProbedDigitsTrial (probed_digits.py) records it before training digits.
PROBE = '''\
import json
import os
import sys
import time
from pathlib import Path

from hpcdet.jobfiles import read_latest_checkpoint


def _read(path):
    try:
        return Path(path).read_text()
    except OSError as exc:
        return f"unreadable: {exc}"


def record_probe():
    """Record what this rank sees inside its container."""
    rank = os.environ.get("SLURM_PROCID", "?")
    Path(f"/tmp/rank-{rank}").write_text(rank)
    time.sleep(1)  # the other rank writes its own now: a shared /tmp would show it
    data = Path(os.environ["CT_DATA"])
    names = ("CT_PROBE", "DET_TRIAL_ID", "DET_JOB_DIR", "SLURM_JOB_ID", "SLURM_PROCID",
             "CH_RUNNING", "USER")
    probe = {
        "image_marker": _read("/etc/hpcdet-image"),
        "os_release": _read("/etc/os-release"),
        "executable": sys.executable,
        "tmp": sorted(os.listdir("/tmp")),
        "host_marker_seen": os.path.exists(os.environ["CT_HOST_MARKER"]),
        "bind_input": (data / "input.txt").read_text(),
        "env": {name: os.environ.get(name) for name in names},
        "cwd": os.getcwd(),
        "uid": os.getuid(),
        "latest_checkpoint": read_latest_checkpoint(os.environ["DET_JOB_DIR"]),
    }
    run = f"{os.environ['SLURM_JOB_ID']}-{os.environ.get('SLURM_RESTART_COUNT', '0')}"
    (data / f"probe-{run}-rank{rank}.json").write_text(json.dumps(probe))


if __name__ == "__main__":
    record_probe()
    import standin

    standin.main()
'''
PROBED_DIGITS = '''\
from model_def import DigitsTrial
from probe import record_probe


class ProbedDigitsTrial(DigitsTrial):
    """The digits trial; each rank first records what it sees inside its container."""

    def __init__(self, context):
        super().__init__(context)
        record_probe()
'''


@pytest.fixture(scope="module")
def image() -> Path:
    """The Charliecloud image, built or refreshed (hpcdet from this work tree) if needed."""
    if shutil.which("ch-run") is None:
        missing("Charliecloud's ch-run is missing: run scripts/build-image (as root)")
    args = [arg for point in MOUNT_POINTS for arg in ("--mount-point", point)]
    built = subprocess.run([str(REPO / "scripts" / "build-image"), *args], capture_output=True,
                           text=True, timeout=1200, check=False)
    if built.returncode != 0:
        missing(f"scripts/build-image failed:\n{built.stderr[-3000:]}")
    return Path(built.stdout.split()[-1])


@pytest.fixture
def runtime() -> str:
    """The container runtime of a test (tests parametrized on ``runtime`` override it)."""
    return "charliecloud"


@pytest.fixture
def runtime_env(runtime: str) -> list[str]:
    """More of the trial's environment_variables the runtime needs."""
    if runtime != "podman":
        return []
    if os.geteuid() != 0:
        missing("the podman tests run podman as root")
    made = subprocess.run([str(REPO / "scripts" / "ensure-podman")], capture_output=True,
                          text=True, timeout=600, check=False)
    if made.returncode != 0:
        missing(f"scripts/ensure-podman failed:\n{made.stderr[-2000:]}")
    return [f"CONTAINERS_CONF={made.stdout.strip()}"]


@pytest.fixture
def resource_manager_settings(image: Path, runtime: str) -> dict[str, Any]:
    # Charliecloud's image is named relative to apptainer_image_root (environment.image
    # below); podman's is the same directory, by its absolute path (run with --rootfs).
    return {"container_run_type": runtime, "apptainer_image_root": str(image.parent)}


@pytest.fixture
def cluster_users(slurm: dict[str, str]) -> None:
    if os.geteuid() != 0:
        missing("the owner-mode container test runs det as user_a: it needs root")
    made = subprocess.run([str(REPO / "scripts" / "dev-cluster"), "users"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert made.returncode == 0, made.stdout + made.stderr


@pytest.fixture(autouse=True)
def cancel_leftover_jobs(slurm: dict[str, str]) -> Iterator[None]:
    """A failed test must not leave its trial's job running into the next test."""
    yield
    listing = subprocess.run(["squeue", "-h", "-O", "JobID:|,Comment:|"], env=slurm,
                             capture_output=True, text=True, check=False).stdout
    # This module's masters name their clusters it and it-multiuser (the fair-share test's,
    # which may run meanwhile, is it-fairshare).
    ours = [line.split("|")[0] for line in listing.splitlines()
            if "|hpcdet:it:" in line or "|hpcdet:it-multiuser:" in line]
    if ours:
        subprocess.run(["scancel", *ours], env=slurm, check=False)


def _experiment(directory: Path, data: Path, marker: Path, *, epochs: int,
                pace: str = "0", image: str = "hpcdet-bookworm",
                env: tuple[str, ...] = (), digits: bool = False) -> Path:
    """The probed experiment in ``directory`` (the stand-in trial, or with ``digits`` the
    digits example), its bind mount ``data`` at /tmp/ct-data; ``marker`` is a host file no
    rank should see."""
    standin_context(directory, {"probe.py": PROBE})
    if digits:
        (directory / "model_def.py").write_text((DIGITS / "model_def.py").read_text())
        (directory / "probed_digits.py").write_text(PROBED_DIGITS)
    data.mkdir(parents=True)
    (data / "input.txt").write_text("read through the bind mount\n")
    marker.write_text("only on the host\n")
    config = {
        "name": "in-charliecloud",
        "entrypoint": "probed_digits:ProbedDigitsTrial" if digits else "python3 probe.py",
        "hyperparameters": {"lr": 0.01, "hidden_size": 64, "global_batch_size": 64},
        # A preemption check after every batch: a signal is acted on within one batch.
        "scheduling_unit": 1,
        "min_validation_period": {"epochs": 1}, "min_checkpoint_period": {"epochs": 1},
        "searcher": {"name": "single", "metric": "validation_loss", "smaller_is_better": True,
                     "max_length": {"epochs": epochs}},
        "resources": {"slots_per_trial": 2}, "slurm": {"slots_per_node": 2},
        "environment": {"image": image, "environment_variables": [
            "OMP_NUM_THREADS=1", "CT_PROBE=seen inside", f"CT_DATA={DATA_IN_CONTAINER}",
            f"CT_HOST_MARKER={marker}", f"STANDIN_BATCH_SLEEP={pace}", *env]},
        "bind_mounts": [{"host_path": str(data), "container_path": DATA_IN_CONTAINER}],
        "max_restarts": 0, "preemption_timeout": 120,
    }
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _created(output: str) -> int:
    return int(output.split("Created experiment")[1].split()[0])


def _probes(data: Path) -> dict[str, dict[str, Any]]:
    return {path.stem: json.loads(path.read_text()) for path in sorted(data.glob("probe-*"))}


def _check_probes(probes: dict[str, dict[str, Any]], *, trial_id: int, job_id: str, uid: int,
                  job_dir: str, runtime: str = "charliecloud") -> None:
    """Both ranks ran in the image, with the job's environment, a private /tmp and the bind."""
    ranks = {probe["env"]["SLURM_PROCID"]: probe for probe in probes.values()
             if probe["env"]["SLURM_JOB_ID"] == job_id}
    assert set(ranks) == {"0", "1"}, probes
    for rank, probe in ranks.items():
        assert probe["image_marker"].startswith("hpcdet training image"), probe
        assert "bookworm" in probe["os_release"], probe
        assert probe["executable"] == "/usr/bin/python3", probe  # the image's Python
        assert bool(probe["env"]["CH_RUNNING"]) is (runtime == "charliecloud"), probe
        assert probe["env"]["CT_PROBE"] == "seen inside", probe
        assert probe["env"]["DET_TRIAL_ID"] == str(trial_id), probe
        assert probe["env"]["DET_JOB_DIR"] == job_dir, probe
        assert probe["bind_input"] == "read through the bind mount\n", probe
        assert probe["cwd"] == f"{job_dir}/context", probe
        assert probe["uid"] == uid, probe
        other = "1" if rank == "0" else "0"
        assert f"rank-{rank}" in probe["tmp"] and f"rank-{other}" not in probe["tmp"], probe
        assert not probe["host_marker_seen"], probe
        assert probe["latest_checkpoint"] is None, probe  # a fresh trial: nothing to resume


def _job_script(job_dir: str) -> str:
    return Path(job_dir, "job-1.sh").read_text()


def _image_name(runtime: str, image: Path) -> str:
    return str(image) if runtime == "podman" else image.name


LAUNCH = {"charliecloud": "ch-run --private-tmp", "podman": "podman run --rm"}


# Charliecloud trains digits with the image's torch; podman runs the stand-in (what it
# shows is the runtime's, and torch in that image is the same).
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
@pytest.mark.parametrize(("runtime", "digits"), [
    pytest.param("charliecloud", True, marks=pytest.mark.torch), ("podman", False)])
def test_a_trial_completes_in_the_container_as_root(master: LiveMaster, tmp_path: Path,
                                                    runtime: str, digits: bool, image: Path,
                                                    runtime_env: list[str]) -> None:
    data = tmp_path / "data"
    path = _experiment(tmp_path / "ctx", data, tmp_path / "host-only-marker", epochs=2,
                       image=_image_name(runtime, image), env=tuple(runtime_env),
                       digits=digits)
    created = master.det("experiment", "create", str(path), str(tmp_path / "ctx"), "--follow",
                         check=True, timeout=600)
    answer = experiment_with_trials(master, _created(created.stdout))
    trial = answer["trials"][0]
    logs = master.det("trial", "logs", str(trial["id"]), "--tail", "40").stdout
    assert answer["experiment"]["state"] == "COMPLETED", f"{answer}\n{logs}"
    detail = trial_of(master, trial["id"])
    job_dir = str(master.job_root / f"exp-{answer['experiment']['id']}" / f"trial-{trial['id']}")
    assert LAUNCH[runtime] in _job_script(job_dir)
    _check_probes(_probes(data), trial_id=trial["id"], job_id=detail["jobs"][0]["job_id"],
                  uid=0, job_dir=job_dir, runtime=runtime)
    # The ranks wrote through the bind: the files are the host's, owned by the job's user.
    assert all(path.stat().st_uid == 0 for path in data.glob("probe-*"))


def test_a_trial_completes_in_charliecloud_as_user_a(cluster_users: None, image: Path) -> None:
    user = pwd.getpwnam("user_a")
    home = Path(user.pw_dir) / f"hpcdet-ct-{secrets.token_hex(4)}"
    marker = Path(f"/tmp/hpcdet-ct-marker-{secrets.token_hex(4)}")
    rm = {"container_run_type": "charliecloud", "apptainer_image_root": str(image.parent)}
    # A fresh master numbers from experiment 1 again, in the same job root as earlier owner-
    # mode tests: it must remove what a directory left there holds (here a checkpoint to
    # resume from, which the probes would show) before the trial's first job.
    stale = JOB_ROOT / "user_a" / "exp-1"
    shutil.rmtree(stale, ignore_errors=True)
    # On a fresh machine this test is the first to need user_a's root under the job root:
    # made as the run-as helper makes it (user_a's, 0770, the service account in its ACL,
    # inherited), since the helper refuses a root the user does not own and the master reads
    # the job directories below it through that ACL.
    if not stale.parent.exists():
        stale.parent.mkdir(mode=0o770)
        shutil.chown(stale.parent, "user_a", "user_a")
        set_private_acl(str(stale.parent), pwd.getpwnam(SERVICE).pw_uid)
    (stale / "trial-1").mkdir(parents=True)
    write_latest_checkpoint(stale / "trial-1", "0b7f6a52-1111-4222-8333-944455556666", 40)
    subprocess.run(["chown", "-R", "user_a:user_a", str(stale)], check=True)
    try:
        path = _experiment(home / "ctx", home / "data", marker, epochs=2)
        subprocess.run(["chown", "-R", "user_a:user_a", str(home)], check=True)
        with _owner_master(None, resource_manager=rm) as master:
            created = master.det_as("user_a", "experiment", "create", str(path),
                                    str(home / "ctx"), "--follow")
            assert created.returncode == 0, f"{created.stdout}\n{created.stderr}"
            exp_id = _created(created.stdout)
            answer = json.loads(master.det_as("user_a", "experiment", "describe", str(exp_id),
                                              "--json").stdout)
            trial = answer["trials"][0]
            assert answer["experiment"]["state"] == "COMPLETED", (
                f"{answer}\n{master.log.read_text()[-3000:]}")
            detail = json.loads(master.det_as("user_a", "trial", "describe", str(trial["id"]),
                                              "--json").stdout)
        job_dir = str(JOB_ROOT / "user_a" / f"exp-{exp_id}" / f"trial-{trial['id']}")
        _check_probes(_probes(home / "data"), trial_id=trial["id"], uid=user.pw_uid,
                      job_id=detail["trial"]["job_ids"][0], job_dir=job_dir)
        assert all(p.stat().st_uid == user.pw_uid for p in (home / "data").glob("probe-*"))
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(stale, ignore_errors=True)
        marker.unlink(missing_ok=True)


# Not podman: its signal proxy is a helper process (runc kill) that Slurm's step-wide SIGTERM
# kills too, so a rank may never hear of the requeue (measured: docs/admin/containers.md).
@pytest.mark.parametrize("master", ["sqlite"], indirect=True)
@pytest.mark.parametrize("runtime", ["charliecloud"])
def test_sigterm_and_sigusr2_reach_the_harness_in_the_container(
        master: LiveMaster, slurm: dict[str, str], tmp_path: Path, runtime: str, image: Path,
        runtime_env: list[str]) -> None:
    data = tmp_path / "data"
    # About two seconds an epoch: the signals land mid-training.
    path = _experiment(tmp_path / "ctx", data, tmp_path / "host-only-marker", epochs=8,
                       pace="0.1", image=_image_name(runtime, image), env=tuple(runtime_env))
    created = master.det("experiment", "create", str(path), str(tmp_path / "ctx"), check=True)
    exp_id = _created(created.stdout)
    trial_id = int(wait_for(lambda: (trials_of(master, exp_id) or [None])[0],
                            "the trial")["id"])
    # scontrol requeue: Slurm sends SIGTERM, then runs the same job again.
    job = active_job(wait_for_epochs(master, trial_id, 2))
    subprocess.run(["scontrol", "requeue", job["job_id"]], env=slurm, check=True)
    wait_for(lambda: trial_of(master, trial_id)["interruptions"] >= 1, "the requeue")
    # What --signal=USR2@N sends at the time limit: SIGUSR2 to the job step's tasks.
    trial = wait_for_epochs(master, trial_id, 4)
    subprocess.run(["scancel", "--signal=USR2", active_job(trial)["job_id"]], env=slurm,
                   check=True)
    answer = wait_until_ended(master, exp_id)
    trial = trial_of(master, trial_id)
    logs = master.det("trial", "logs", str(trial_id)).stdout
    assert answer["experiment"]["state"] == "COMPLETED", f"{answer}\n{logs[-4000:]}"
    assert trial["restarts"] == 0 and trial["interruptions"] >= 2, trial
    assert "got SIGTERM, will stop" in logs and "got SIGUSR2, will stop" in logs, logs[-4000:]
    # Each later start resumed from a checkpoint; every metric row is there exactly once.
    probes = _probes(data)
    first = [p for p in probes.values() if p["env"]["SLURM_JOB_ID"] == job["job_id"]
             and p["latest_checkpoint"] is None]
    resumed = [p for p in probes.values() if p["latest_checkpoint"]]
    assert len(first) == 2 and len(resumed) >= 4, probes  # 2 ranks x (requeue, USR2 rerun)
    validations = [step for group, step, name, _ in metric_rows(master, trial_id)
                   if group == "validation" and name == "validation_loss"]
    assert as_table(metric_rows(master, trial_id)) and len(validations) == 8, validations
