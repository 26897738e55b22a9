"""Jobs run as their owner: a master running as the service account ``hpcdet`` submits
user_a's jobs as user_a through ``sudo`` and the run-as helper (docs/admin/security.md).

Needs root (runuser) and ``scripts/dev-cluster users`` (run here if missing). Users run the
real ``det`` as themselves (``runuser -u user_a -- det ...``); the master (``auth.mode:
munge``) knows them by their MUNGE credential.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from conftest import free_port
from it_helpers import (
    BIN,
    REPO,
    SHARED_SLURM_CONF,
    SLURM_BIN_PATH,
    LiveMaster,
    load_json,
    transport_settings,
    wait_until_up,
)

pytestmark = [pytest.mark.multiuser, pytest.mark.slurm]

SERVICE = "hpcdet"
JOB_ROOT = Path("/srv/hpcdet-dev/jobs")
HELPER = "/usr/local/libexec/hpcdet-runas"
SLURM_CONF = SHARED_SLURM_CONF
RUNUSER = shutil.which("runuser", path="/usr/sbin:/sbin:/usr/bin:/bin") or "runuser"
PATH = f"{BIN}:{SLURM_BIN_PATH}/usr/local/bin:/usr/bin:/bin"
HOSTILE = [";id", "1;id", "$(id)", "`id`", "../../../etc", "--uid=0", "-u0", "1\nid", "/etc",
           f"{JOB_ROOT}/user_a/../user_b", "/home/user_a"]

TRAIN = """\
import hpcdet.core

with hpcdet.core.init() as core:
    with core.checkpoint.store_path({"steps_completed": 1}) as (path, uuid):
        (path / "weights.txt").write_text("secret weights")
    core.train.report_validation_metrics(steps_completed=1, metrics={"loss": 0.5})
    print("API_KEY seen:", __import__("os").environ.get("API_KEY") == "s3cret", flush=True)
"""


def _as(user: str, *argv: str, env: dict[str, str] | None = None,
        stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` as ``user`` with a clean environment (plus ``env``)."""
    clean = {"PATH": PATH, "HOME": f"/home/{user}" if user != SERVICE else f"/var/lib/{SERVICE}",
             "SLURM_CONF": SLURM_CONF, "LANG": "C.UTF-8", **(env or {})}
    return subprocess.run([RUNUSER, "-u", user, "--", "env", "-i",
                           *(f"{k}={v}" for k, v in clean.items()), *argv],
                          input=stdin, capture_output=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def users(slurm: dict[str, str]) -> None:
    if os.geteuid() != 0:
        pytest.skip("the multi-user tests run det as several Unix users: they need root")
    result = subprocess.run([str(REPO / "scripts" / "dev-cluster"), "users"],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


class OwnerMaster(LiveMaster):
    """det-master as ``hpcdet``; ``det_as`` runs det as a given user against it."""

    #: resource_manager.transport's type: ``local`` (sbatch through the helper) or ``rest``.
    transport = "local"

    def det_as(self, user: str, *args: str) -> subprocess.CompletedProcess[str]:
        result = _as(user, str(BIN / "det"), "-m", self.url, *args,
                     env={"PYTHONPATH": str(REPO)})
        return subprocess.CompletedProcess(result.args, result.returncode,
                                           result.stdout.decode(), result.stderr.decode())

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            self.process.wait(30)


#: ``owner_master``'s parameters: its database. A test may ask for ``REST`` too.
OWNER_MASTERS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
#: A SQLite master driving Slurm through slurmrestd (25.11), each owner's token minted by
#: the helper's ``token`` verb as the owner (docs/admin/slurmrestd.md).
REST = pytest.param("rest", marks=pytest.mark.slurm2511)


@pytest.fixture(params=OWNER_MASTERS)
def owner_master(request: pytest.FixtureRequest, users: None) -> Iterator[OwnerMaster]:
    db = str(request.getfixturevalue("postgres_url")) if request.param == "postgresql" else None
    with _owner_master(db, resource_manager=transport_settings(request)) as live:
        yield live


@contextlib.contextmanager
def _owner_master(db_url: str | None, helper: str = HELPER,
                  resource_manager: dict[str, Any] | None = None) -> Iterator[OwnerMaster]:
    """det-master as ``hpcdet`` with ``jobs_run_as: owner``; SQLite unless ``db_url``;
    ``resource_manager``: more keys of its section (test_it_containers' runtime)."""
    state = Path(f"/var/lib/{SERVICE}/it-{secrets.token_hex(4)}")
    state.mkdir(mode=0o700)
    shutil.chown(state, SERVICE, SERVICE)
    db_url = db_url or f"sqlite:///{state / 'master.sqlite'}"
    port = free_port()
    config: dict[str, Any] = {
        "port": port, "host": "127.0.0.1", "db": {"url": db_url}, "state_dir": str(state),
        "reconciler": {"interval_seconds": 1}, "webserver": {"workers": 1, "threads": 4},
        # Users prove who they are with MUNGE: det run as user_a is user_a.
        "auth": {"mode": "munge"},
        "security": {"jobs_run_as": "owner", "runas_helper": helper},
        "resource_manager": {"master_host": "127.0.0.1", "cluster_name": "it-multiuser",
                             "job_storage_root": str(JOB_ROOT), "slot_type": "cpu",
                             **(resource_manager or {})},
        # No checkpoint_storage: each owner's default is <job root>/<owner>/checkpoints.
    }
    (state / "master.yaml").write_text(yaml.safe_dump(config))
    log = Path(f"/tmp/hpcdet-it-multiuser-{port}.log")
    env = {"PATH": PATH, "HOME": f"/var/lib/{SERVICE}", "SLURM_CONF": SLURM_CONF,
           "PYTHONPATH": str(REPO), "LANG": "C.UTF-8"}
    argv = (RUNUSER, "-u", SERVICE, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
            str(BIN / "det-master"), "--config", str(state / "master.yaml"))
    live = OwnerMaster(url=f"http://127.0.0.1:{port}", env=env, job_root=JOB_ROOT, log=log,
                       db_url=db_url, argv=argv)
    live.transport = config["resource_manager"].get("transport", {}).get("type", "local")
    try:
        live.start()
        wait_until_up(live.url, live.process, log)  # type: ignore[arg-type]
        yield live
    finally:
        live.stop()
        shutil.rmtree(state, ignore_errors=True)


def _experiment(tmp_name: str) -> Path:
    """user_a's experiment directory in user_a's home (0700), owned by user_a."""
    directory = Path("/home/user_a") / tmp_name
    directory.mkdir()
    (directory / "train.py").write_text(TRAIN)
    (directory / "config.yaml").write_text(yaml.safe_dump({
        "name": "private", "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
        "environment": {"environment_variables": ["API_KEY=s3cret"]},
    }))
    subprocess.run(["chown", "-R", "user_a:user_a", str(directory)], check=True)
    return directory


def _wait_ended(master: OwnerMaster, exp_id: int, timeout: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = load_json(master.det_as("user_a", "experiment", "describe", str(exp_id),
                                         "--json").stdout)
        if answer["experiment"]["ended_at"]:
            return dict(answer)
        time.sleep(2)
    raise AssertionError(f"experiment {exp_id} did not end:\n{master.log.read_text()[-3000:]}")


def _submitted_by(job_ids: list[str]) -> set[tuple[str, str]]:
    """(user, through what) of each job, once sacct knows them all: ``sbatch`` (the helper's
    submit; its SubmitLine starts with the program's path) or ``slurmrestd``, whose jobs have
    no SubmitLine."""
    rows: list[str] = []
    for _ in range(30):
        rows = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "User,SubmitLine", "-j",
                               ",".join(job_ids)], env={**os.environ, "SLURM_CONF": SLURM_CONF},
                              capture_output=True, text=True, check=False).stdout.splitlines()
        if len(rows) == len(job_ids):
            break
        time.sleep(1)
    found = {tuple(row.split("|", 1)) for row in rows}
    return {(user, os.path.basename(line.split()[0]) if line else "slurmrestd")
            for user, line in found}


def _sacct_users(job_ids: list[str]) -> set[str]:
    for _ in range(30):
        out = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "User", "-j", ",".join(job_ids)],
                             env={**os.environ, "SLURM_CONF": SLURM_CONF}, capture_output=True,
                             text=True, check=False).stdout.split()
        if len(out) == len(job_ids):
            return set(out)
        time.sleep(1)
    return set(out)


@pytest.mark.parametrize("owner_master", [*OWNER_MASTERS, REST], indirect=True)
def test_user_as_experiment_runs_as_user_a_and_its_files_are_private(
        owner_master: OwnerMaster) -> None:
    directory = _experiment(f"exp-{secrets.token_hex(4)}")
    try:
        created = owner_master.det_as("user_a", "experiment", "create",
                                      str(directory / "config.yaml"), str(directory))
        assert created.returncode == 0, created.stdout + created.stderr
        exp_id = int(created.stdout.split("Created experiment")[1].split()[0])
        answer = _wait_ended(owner_master, exp_id)
        trial = answer["trials"][0]
        logs = owner_master.det_as("user_a", "trial", "logs", str(trial["id"])).stdout
        assert answer["experiment"]["state"] == "COMPLETED", (
            f"{answer}\n{logs}\n{owner_master.log.read_text()[-3000:]}")
        assert "API_KEY seen: True" in logs  # the master read the job's log
        detail = load_json(owner_master.det_as("user_a", "trial", "describe", str(trial["id"]),
                                               "--json").stdout)
        # user_a's in Slurm, through the master's transport (slurmrestd: her own token).
        via = "slurmrestd" if owner_master.transport == "rest" else "sbatch"
        assert _submitted_by(detail["trial"]["job_ids"]) == {("user_a", via)}
        _assert_private(Path(detail["trial"].get("job_dir") or _job_dir(exp_id, trial["id"])))
        assert detail["checkpoints"], "a checkpoint was registered"
        checkpoints = JOB_ROOT / "user_a" / "checkpoints"  # the default: user_a's own
        assert answer["experiment"]["config"]["checkpoint_storage"]["host_path"] == \
            str(checkpoints)
        _assert_private(checkpoints)
        _assert_intruder_locked_out(checkpoints / detail["checkpoints"][0]["uuid"])
        _assert_user_b_cannot_point_into_user_as(owner_master, checkpoints)
        _assert_master_not_root(owner_master)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _assert_intruder_locked_out(checkpoint: Path) -> None:
    """intruder can neither pre-create user_a's directories nor read, list, replace or move
    anything in her checkpoint directory (issue 28, finding 2)."""
    weights = checkpoint / "weights.txt"
    for argv in [("mkdir", str(JOB_ROOT / "user_a")),
                 ("mkdir", str(checkpoint.parent)), ("mkdir", str(checkpoint.parent / "new")),
                 ("ls", str(checkpoint.parent)), ("ls", str(checkpoint)),
                 ("cat", str(weights)), ("touch", str(weights)),
                 ("touch", str(checkpoint.parent / "evil.pkl")),
                 ("cp", "/etc/hostname", str(weights)),
                 ("mv", str(checkpoint), f"/tmp/stolen-{secrets.token_hex(4)}")]:
        refused = _as("intruder", *argv)
        assert refused.returncode != 0, (argv, refused)
    assert (weights.read_text(), weights.stat().st_uid) == ("secret weights", _uid("user_a"))
    assert checkpoint.parent.stat().st_uid == _uid("user_a")


def _assert_user_b_cannot_point_into_user_as(master: OwnerMaster, checkpoints: Path) -> None:
    """user_b's experiment naming user_a's checkpoint directory is refused at create."""
    directory = Path("/home/user_b") / f"exp-{secrets.token_hex(4)}"
    directory.mkdir()
    try:
        (directory / "train.py").write_text(TRAIN)
        (directory / "config.yaml").write_text(yaml.safe_dump({
            "name": "into-a", "entrypoint": "python3 train.py",
            "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
            "checkpoint_storage": {"type": "shared_fs", "host_path": str(checkpoints)}}))
        subprocess.run(["chown", "-R", "user_b:user_b", str(directory)], check=True)
        created = master.det_as("user_b", "experiment", "create",
                                str(directory / "config.yaml"), str(directory))
        assert created.returncode != 0, created
        assert "checkpoint_storage.host_path" in created.stderr, created.stderr
        assert "user_b's own part" in created.stderr and "Traceback" not in created.stderr
        listed = load_json(master.det_as("user_b", "experiment", "list", "--json").stdout)
        assert listed["experiments"] == []
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _job_dir(exp_id: int, trial_id: int) -> str:
    return str(JOB_ROOT / "user_a" / f"exp-{exp_id}" / f"trial-{trial_id}")


def _assert_private(root: Path) -> None:
    paths = [root, *root.rglob("*")]
    assert len(paths) > 1, f"nothing under {root}"
    for path in paths:
        info = path.lstat()
        assert (info.st_uid, info.st_mode & 0o007) == (_uid("user_a"), 0), path
        if path.is_file():
            denied = _as("user_b", "cat", str(path))
            assert denied.returncode != 0 and b"Permission denied" in denied.stderr, path
    assert _as("user_b", "ls", str(JOB_ROOT / "user_a")).returncode != 0


def _uid(user: str) -> int:
    import pwd

    return pwd.getpwnam(user).pw_uid


def _assert_master_not_root(master: OwnerMaster) -> None:
    assert master.process is not None
    out = subprocess.run(["ps", "-o", "user=", "--ppid", str(master.process.pid)],
                         capture_output=True, text=True, check=False).stdout.split()
    assert out and set(out) == {SERVICE}, out


# ---- the helper cannot be turned against anyone ------------------------------------------


def _helper(caller: str, target: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return _as(caller, "sudo", "-n", "-u", target, "--", HELPER, *args)


@pytest.mark.usefixtures("users")
@pytest.mark.parametrize("bad", HOSTILE)
def test_hostile_arguments_are_refused_in_every_position(bad: str) -> None:
    own = str(JOB_ROOT / "user_a" / "exp-x")
    for args in [("cancel", bad), ("cancel", "1", bad), ("hold", bad), ("release", bad),
                 ("requeue", bad), ("update", bad, "nice=1"), ("update", "1", bad),
                 ("update", "1", f"partition={bad}"), ("update", "1", f"qos={bad}"),
                 ("prepare", bad), ("remove", bad), ("submit", bad, "job.sh"),
                 ("submit", own, bad), ("token", bad), ("token", "60", bad), (bad,),
                 (bad, "1")]:
        result = _helper(SERVICE, "user_a", *args)
        assert result.returncode in (64, 65), (args, result)
        assert result.stderr.decode().startswith("hpcdet-runas: "), (args, result)
        assert result.stderr.decode().count("\n") == 1, (args, result)


@pytest.mark.usefixtures("users")
def test_the_helper_runs_as_nobody_else_and_only_for_the_service_account() -> None:
    for caller, target in [(SERVICE, "root"), ("intruder", "user_a"), ("intruder", "root"),
                           ("user_a", "user_b")]:
        result = _helper(caller, target, "cancel", "1")
        assert result.returncode == 1 and b"sudo:" in result.stderr, (caller, target, result)
    for target in ["slurm", "munge", "daemon", SERVICE]:  # system accounts, itself
        result = _helper(SERVICE, target, "cancel", "1")
        assert result.returncode in (1, 77), (target, result)
    # The service account may not run anything but the helper as a user.
    for argv in [("/bin/sh", "-c", "id"), ("/usr/bin/id",), ("sbatch", "--wrap=id")]:
        result = _as(SERVICE, "sudo", "-n", "-u", "user_a", "--", *argv)
        assert result.returncode == 1 and b"sudo:" in result.stderr, (argv, result)


@pytest.mark.usefixtures("users")
def test_intruder_running_the_helper_directly_acts_only_as_itself() -> None:
    result = _as("intruder", HELPER, "remove", str(JOB_ROOT / "user_a" / "exp-1"))
    assert result.returncode == 65, result
    archive = subprocess.run(["tar", "-cf", "-", "-C", "/etc", "hostname"], capture_output=True,
                             check=True).stdout
    result = _as("intruder", HELPER, "prepare", str(JOB_ROOT / "user_a" / "x"), stdin=archive)
    assert result.returncode == 65 and not (JOB_ROOT / "user_a" / "x").exists(), result


@pytest.mark.slurm2511
@pytest.mark.usefixtures("users")
def test_the_token_verb_mints_only_its_callers_own_token(slurmrestd: str) -> None:
    """What lets a REST master act as an owner (docs/admin/slurmrestd.md): the helper's
    ``token`` verb. No token for root or the service account; through sudo, user_a's own;
    run directly by intruder, intruder's own. slurmrestd takes each for its user only."""
    root = _helper(SERVICE, "root", "token", "60")
    assert root.returncode == 1 and b"sudo:" in root.stderr, root
    itself = _helper(SERVICE, SERVICE, "token", "60")
    assert itself.returncode == 77 and b"service account" in itself.stderr, itself
    user_a = _jwt(_helper(SERVICE, "user_a", "token", "60"))
    intruder = _jwt(_as("intruder", HELPER, "token", "60"))
    assert (_jwt_user(user_a), _jwt_user(intruder)) == ("user_a", "intruder")
    assert _slurmrestd_status(slurmrestd, "user_a", user_a) == 200
    assert _slurmrestd_status(slurmrestd, "intruder", intruder) == 200
    # A token names its user: slurmctld refuses it for anyone else ("attempt to
    # authenticate as alternate user user_a from non-SlurmUser user_b").
    for name, token in (("user_a", intruder), ("user_b", user_a), ("root", intruder),
                        (SERVICE, user_a)):
        assert _slurmrestd_status(slurmrestd, name, token) in (401, 403, 511), name


def _jwt(result: subprocess.CompletedProcess[bytes]) -> str:
    """The token a successful ``token`` verb printed (``SLURM_JWT=<token>``)."""
    out = result.stdout.decode().strip()
    assert result.returncode == 0 and out.startswith("SLURM_JWT="), (result.returncode,
                                                                     result.stderr)
    return out.removeprefix("SLURM_JWT=")


def _jwt_user(token: str) -> str:
    """The user a Slurm JWT names (its ``sun`` claim): read, not verified."""
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["sun"])


def _slurmrestd_status(url: str, user: str, token: str) -> int:
    """The status slurmrestd answers a partitions request with, as ``user`` with ``token``
    (not a ping: slurmrestd answers it without asking slurmctld who the token is)."""
    reply = httpx.get(f"{url}/slurm/v0.0.44/partitions/", timeout=30,
                      headers={"X-SLURM-USER-NAME": user, "X-SLURM-USER-TOKEN": token})
    return reply.status_code


@pytest.mark.usefixtures("users")
def test_a_hostile_archive_leaves_nothing(tmp_path: Path) -> None:
    target = JOB_ROOT / "user_a" / f"hostile-{secrets.token_hex(4)}"
    (tmp_path / "link").symlink_to("/etc/shadow")
    archive = subprocess.run(["tar", "-cf", "-", "-C", str(tmp_path), "link"],
                             capture_output=True, check=True).stdout
    result = _as(SERVICE, "sudo", "-n", "-u", "user_a", "--", HELPER, "prepare", str(target),
                 stdin=archive)
    assert result.returncode == 65 and b"only files and directories" in result.stderr, result
    assert not target.exists()  # nothing half-done


def test_det_sbatch_runs_as_its_user_from_a_private_home(owner_master: OwnerMaster) -> None:
    directory = Path("/home/user_a") / f"task-{secrets.token_hex(4)}"
    directory.mkdir()
    (directory / "job.sh").write_text("#!/bin/bash\n#SBATCH --time=1\nid -un\necho $GREETING\n")
    subprocess.run(["chown", "-R", "user_a:user_a", str(directory)], check=True)
    try:
        result = _as("user_a", "sh", "-c", f'cd "{directory}" && exec "$0" "$@"',
                     str(BIN / "det"), "-m", owner_master.url, "sbatch", "--parsable",
                     "job.sh",
                     env={"PYTHONPATH": str(REPO), "GREETING": "hi"})
        assert result.returncode == 0, result
        job_id = result.stdout.decode().strip().split(";")[0]
        assert _sacct_users([job_id]) == {"user_a"}
        listed = load_json(owner_master.det_as("user_a", "task", "list", "--json").stdout)
        task = next(t for t in listed["tasks"] if t["job_id"] == job_id)
        job_dir = Path(task["job_dir"]) if task.get("job_dir") else None
        if job_dir is not None:
            assert str(job_dir).startswith(str(JOB_ROOT / "user_a")), job_dir
            _assert_private(job_dir)
        out = directory / f"slurm-{job_id}.out"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "hi" not in (out.read_text() if out.exists()
                                                           else ""):
            time.sleep(1)
        assert out.read_text().split() == ["user_a", "hi"]
        assert out.stat().st_uid == _uid("user_a")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("owner_master", ["sqlite"], indirect=True)  # CI time
def test_killing_user_as_experiment_cancels_its_job_as_user_a(owner_master: OwnerMaster) -> None:
    directory = _experiment(f"exp-{secrets.token_hex(4)}")
    config = yaml.safe_load((directory / "config.yaml").read_text())
    config["entrypoint"] = "python3 -c 'import time; time.sleep(600)'"
    (directory / "config.yaml").write_text(yaml.safe_dump(config))
    try:
        created = owner_master.det_as("user_a", "experiment", "create",
                                      str(directory / "config.yaml"), str(directory))
        assert created.returncode == 0, created.stdout + created.stderr
        exp_id = int(created.stdout.split("Created experiment")[1].split()[0])
        job_id = _wait_for_job(owner_master, exp_id)
        killed = owner_master.det_as("user_a", "experiment", "kill", str(exp_id))
        assert killed.returncode == 0, killed
        assert _wait_ended(owner_master, exp_id)["experiment"]["state"] == "CANCELED"
        for _ in range(60):
            out = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "User,State", "-j", job_id],
                                 env={**os.environ, "SLURM_CONF": SLURM_CONF},
                                 capture_output=True, text=True, check=False).stdout.strip()
            if out.startswith("user_a|CANCELLED"):
                break
            time.sleep(1)
        # "CANCELLED by <uid>": the scancel ran as user_a, through the helper.
        assert out == f"user_a|CANCELLED by {_uid('user_a')}", out
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _wait_for_job(master: OwnerMaster, exp_id: int) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        answer = load_json(master.det_as("user_a", "experiment", "describe", str(exp_id),
                                         "--json").stdout)
        trial_id = answer["trials"][0]["id"] if answer["trials"] else None
        if trial_id is not None:
            detail = load_json(master.det_as("user_a", "trial", "describe", str(trial_id),
                                             "--json").stdout)
            if detail["trial"]["job_ids"]:
                return str(detail["trial"]["job_ids"][0])
        time.sleep(1)
    raise AssertionError(f"no job for experiment {exp_id}:\n{master.log.read_text()[-3000:]}")


def _pending_experiment(master: OwnerMaster, directory: Path) -> tuple[int, str]:
    """user_a's experiment whose job stays PENDING (BeginTime in an hour): (id, job id)."""
    config = yaml.safe_load((directory / "config.yaml").read_text())
    config["slurm"] = {"sbatch_args": ["--begin=now+3600"]}
    (directory / "config.yaml").write_text(yaml.safe_dump(config))
    created = master.det_as("user_a", "experiment", "create", str(directory / "config.yaml"),
                            str(directory))
    assert created.returncode == 0, created.stdout + created.stderr
    exp_id = int(created.stdout.split("Created experiment")[1].split()[0])
    return exp_id, _wait_for_job(master, exp_id)


@pytest.mark.parametrize("owner_master", ["sqlite"], indirect=True)  # CI time
def test_job_update_moves_user_as_pending_job_as_user_a(owner_master: OwnerMaster) -> None:
    directory = _experiment(f"exp-{secrets.token_hex(4)}")
    try:
        exp_id, job_id = _pending_experiment(owner_master, directory)
        moved = owner_master.det_as("user_a", "job", "update", job_id, "--resource-pool",
                                    "debug")
        assert moved.returncode == 0, (moved, owner_master.log.read_text()[-2000:])
        env = {**os.environ, "SLURM_CONF": SLURM_CONF}
        shown = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%u %P %T"], env=env,
                               capture_output=True, text=True, check=False).stdout.split()
        assert shown == ["user_a", "debug", "PENDING"]
        log = Path(_slurmctld_log()).read_text(errors="replace")
        assert f"_slurm_rpc_update_job: complete JobId={job_id} uid={_uid('user_a')}" in log
        owner_master.det_as("user_a", "experiment", "kill", str(exp_id))
        _wait_ended(owner_master, exp_id)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _slurmctld_log() -> str:
    for line in Path(SLURM_CONF).read_text().splitlines():
        if line.startswith("SlurmctldLogFile="):
            return line.split("=", 1)[1]
    raise AssertionError("no SlurmctldLogFile in slurm.conf")


@pytest.mark.parametrize("owner_master", ["sqlite"], indirect=True)
def test_an_identity_changing_sbatch_arg_never_reaches_slurm(owner_master: OwnerMaster) -> None:
    directory = _experiment(f"exp-{secrets.token_hex(4)}")
    config = yaml.safe_load((directory / "config.yaml").read_text())
    config["slurm"] = {"sbatch_args": ["--uid=0"]}
    (directory / "config.yaml").write_text(yaml.safe_dump(config))
    try:
        created = owner_master.det_as("user_a", "experiment", "create",
                                      str(directory / "config.yaml"), str(directory))
        # Refused at create, one line, and nothing was made (the helper would refuse too).
        assert created.returncode != 0 and "--uid" in created.stderr, created
        errors = [line for line in created.stderr.splitlines() if line.startswith("Error")]
        assert "Traceback" not in created.stderr and len(errors) == 1, created.stderr
        listed = load_json(owner_master.det_as("user_a", "experiment", "list", "--json").stdout)
        assert listed["experiments"] == []
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.usefixtures("users")
def test_a_missing_sudo_rule_is_one_line_quoting_the_rule_and_leaves_no_job() -> None:
    unlisted = "/usr/local/libexec/hpcdet-runas-not-in-sudoers"
    with _owner_master(None, helper=unlisted) as master:
        directory = _experiment(f"exp-{secrets.token_hex(4)}")
        try:
            created = master.det_as("user_a", "experiment", "create",
                                    str(directory / "config.yaml"), str(directory))
            assert created.returncode == 0, created.stdout + created.stderr
            exp_id = int(created.stdout.split("Created experiment")[1].split()[0])
            answer = _wait_ended(master, exp_id)
            assert answer["experiment"]["state"] == "ERROR"
            trial_id = answer["trials"][0]["id"]
            detail = load_json(master.det_as("user_a", "trial", "describe", str(trial_id),
                                             "--json").stdout)
            assert not detail["trial"]["job_ids"]
            logs = master.det_as("user_a", "trial", "logs", str(trial_id)).stdout
            rule = f"install this sudoers rule: {SERVICE} ALL=(ALL,!root) NOPASSWD: {unlisted}"
            assert [line for line in logs.splitlines() if rule in line], logs
        finally:
            shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("owner_master", ["sqlite"], indirect=True)
def test_intruder_can_neither_read_nor_change_user_as_experiment(
        owner_master: OwnerMaster) -> None:
    """The Must-show list: through the master (det, proven by MUNGE, with or without -u)
    and through the filesystem, intruder learns nothing of user_a's experiment and cannot
    pause, kill, update or move its job."""
    directory = _experiment(f"exp-{secrets.token_hex(4)}")
    env = {**os.environ, "SLURM_CONF": SLURM_CONF}
    try:
        exp_id, job_id = _pending_experiment(owner_master, directory)
        trial_id = load_json(owner_master.det_as("user_a", "experiment", "describe",
                                                 str(exp_id), "--json").stdout)["trials"][0]["id"]
        before = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%u %P %T %y"], env=env,
                                capture_output=True, text=True, check=False).stdout.split()
        attempts = [
            ("experiment", "describe", str(exp_id)), ("trial", "logs", str(trial_id)),
            ("trial", "describe", str(trial_id)), ("experiment", "pause", str(exp_id)),
            ("experiment", "kill", str(exp_id)), ("experiment", "archive", str(exp_id)),
            ("job", "update", job_id, "--resource-pool", "debug"),
            ("job", "update", job_id, "--priority", "1"),
            ("-u", "user_a", "experiment", "kill", str(exp_id)),  # a name proves nothing
        ]
        for attempt in attempts:
            refused = owner_master.det_as("intruder", *attempt)
            assert refused.returncode != 0, (attempt, refused.stdout)
            assert "Traceback" not in refused.stderr and "private" not in refused.stdout
        listed = load_json(owner_master.det_as("intruder", "experiment", "list", "--json").stdout)
        assert listed["experiments"] == []
        job_dir = JOB_ROOT / "user_a"
        for path in (job_dir, *job_dir.rglob("trial.json"), *job_dir.rglob("*.sh")):
            peek = _as("intruder", "cat" if path.is_file() else "ls", str(path))
            assert peek.returncode != 0 and b"Permission denied" in peek.stderr, path
        after = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%u %P %T %y"], env=env,
                               capture_output=True, text=True, check=False).stdout.split()
        assert after == before and after[:3] == ["user_a", "batch", "PENDING"], (before, after)
        state = load_json(owner_master.det_as("user_a", "experiment", "describe", str(exp_id),
                                              "--json").stdout)["experiment"]
        assert (state["state"], state["archived"]) == ("ACTIVE", False)
        owner_master.det_as("user_a", "experiment", "kill", str(exp_id))
        _wait_ended(owner_master, exp_id)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# ---- issue 28, finding 1: an editor of user_a's workspace runs nothing as user_a ----------


@pytest.mark.parametrize("owner_master", ["sqlite"], indirect=True)  # CI time
def test_an_editor_of_user_as_workspace_runs_nothing_as_user_a(
        owner_master: OwnerMaster) -> None:
    """user_b, an editor of user_a's workspace, tries with the real ``det`` each route that
    would choose what runs as user_a: continue her experiment with LD_PRELOAD (or as it
    was), replace or remove her template, delete her model. Each is refused naming the rule,
    nothing of hers changes, and the only job of user_a's submitted after the attempts is
    the one she then caused herself (sacct)."""
    tag = secrets.token_hex(4)
    workspace, template, model = f"ws-{tag}", f"base-{tag}", f"m-{tag}"
    directory = _experiment(f"exp-{tag}")
    evil = _file_of("user_b", f"evil-{tag}.yaml", {"environment": {
        "environment_variables": ["LD_PRELOAD=/home/user_b/evil.so"]}})
    try:
        plain = _file_of("user_a", f"exp-{tag}/template.yaml", {"description": "user_a's"})
        for args in (("workspace", "create", workspace),
                     ("workspace", "add-member", workspace, "user_b", "--role", "editor"),
                     ("template", "create", template, str(plain), "-w", workspace),
                     ("model", "create", model, "-w", workspace)):
            _ok(owner_master.det_as("user_a", *args))
        exp_id, first_job = _ended_in(owner_master, directory, workspace)
        for attempt in [("experiment", "continue", str(exp_id), "--config-file", str(evil)),
                        ("experiment", "continue", str(exp_id)),
                        ("template", "set", template, str(evil)),
                        ("template", "remove", template), ("model", "delete", model, "--yes")]:
            refused = owner_master.det_as("user_b", *attempt)
            assert refused.returncode != 0, (attempt, refused.stdout)
            assert "only its owner 'user_a' may" in refused.stderr, (attempt, refused.stderr)
            assert "Traceback" not in refused.stderr, refused.stderr
        answer = load_json(owner_master.det_as("user_a", "experiment", "describe",
                                               str(exp_id), "--json").stdout)
        assert answer["experiment"]["state"] == "CANCELED"
        assert "LD_PRELOAD" not in str(answer["experiment"]["config"])
        shown = _ok(owner_master.det_as("user_a", "template", "describe", template))
        assert yaml.safe_load(shown) == {"description": "user_a's"}
        _ok(owner_master.det_as("user_a", "model", "describe", model))
        # The barrier: user_a's own continue. Its job is her trial's second run; a continue
        # of user_b's would have made one before it: sacct shows none.
        _ok(owner_master.det_as("user_a", "experiment", "continue", str(exp_id)))
        trial_id = answer["trials"][0]["id"]
        own_job = _next_job(owner_master, trial_id, first_job)
        assert _reruns_of(exp_id, trial_id, after=first_job, last=own_job) == {
            own_job: "user_a"}
        owner_master.det_as("user_a", "experiment", "kill", str(exp_id))
        _wait_ended(owner_master, exp_id)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        evil.unlink(missing_ok=True)


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"{result.args}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _file_of(user: str, name: str, doc: dict[str, Any]) -> Path:
    """A YAML file in ``user``'s home, owned by them (det reads it as them)."""
    path = Path("/home") / user / name
    path.write_text(yaml.safe_dump(doc))
    shutil.chown(path, user, user)
    return path


def _ended_in(master: OwnerMaster, directory: Path, workspace: str) -> tuple[int, str]:
    """user_a's experiment in ``workspace``, its job submitted (held pending), then killed:
    (id, its first job's id)."""
    config = yaml.safe_load((directory / "config.yaml").read_text())
    config["slurm"] = {"sbatch_args": ["--begin=now+3600"]}  # nothing needs to run
    (directory / "config.yaml").write_text(yaml.safe_dump(config))
    created = _ok(master.det_as("user_a", "experiment", "create", "-w", workspace,
                                str(directory / "config.yaml"), str(directory)))
    exp_id = int(created.split("Created experiment")[1].split()[0])
    job_id = _wait_for_job(master, exp_id)
    _ok(master.det_as("user_a", "experiment", "kill", str(exp_id)))
    assert _wait_ended(master, exp_id)["experiment"]["state"] == "CANCELED"
    return exp_id, job_id


def _next_job(master: OwnerMaster, trial_id: int, after: str) -> str:
    """The trial's first job after job ``after``, once the master submitted it."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        detail = load_json(master.det_as("user_a", "trial", "describe", str(trial_id),
                                         "--json").stdout)
        later = [str(j) for j in detail["trial"]["job_ids"] if int(j) > int(after)]
        if later:
            return later[0]
        time.sleep(1)
    raise AssertionError(f"no new job for trial {trial_id}:\n{master.log.read_text()[-3000:]}")


def _reruns_of(exp_id: int, trial_id: int, *, after: str, last: str) -> dict[str, str]:
    """user_a's Slurm jobs submitted after job ``after`` that run the trial again (run 2 or
    later: named ``det-<exp>-<trial>-<run>-<tag>``), id -> user, once sacct knows job
    ``last``. (Other masters' first runs, named alike, are not counted.)"""
    found: dict[str, str] = {}
    for _ in range(30):
        # -E in the future: a job held by --begin is eligible only then.
        out = subprocess.run(["sacct", "-n", "-X", "-P", "-u", "user_a", "-S", "now-3600",
                              "-E", "now+7200", "-o", "JobID,JobName,User"],
                             env={**os.environ, "SLURM_CONF": SLURM_CONF},
                             capture_output=True, text=True, check=True).stdout
        rows = [line.split("|") for line in out.splitlines() if line.count("|") == 2]
        found = {jid: user for jid, name, user in rows
                 if jid.isdigit() and int(jid) > int(after)
                 and _run_of(name, f"det-{exp_id}-{trial_id}-") > 1}
        if last in found:
            break
        time.sleep(1)
    return found


def _run_of(job_name: str, prefix: str) -> int:
    """The run number in a trial job's name ``<prefix><run>-<tag>`` (0: not one of them)."""
    run = job_name[len(prefix):].split("-")[0] if job_name.startswith(prefix) else ""
    return int(run) if run.isdigit() else 0
