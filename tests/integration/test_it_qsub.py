"""``det qsub`` and ``det task`` through the real CLI, a live PBS master and the dev OpenPBS
server (``scripts/dev-pbs up``).

Root may not submit to the dev server, so the master and ``det`` run as ``user_a``
(``runuser``), in a directory of that user's home. The batch script is an ordinary PBS
one, submitted unmodified: its #PBS lines are overridden by the command line, as qsub does,
and PBS's own record of the job (``qstat -x -f -F json``, job history is on) is what the
assertions read.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pwd
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from it_helpers import BIN, REPO, load_json, wait_for, wait_until_up

pytestmark = pytest.mark.pbs

PBS_BIN = "/opt/pbs/bin"
USER = "user_a"

SCRIPT = """\
#!/bin/bash
#PBS -N from-the-script
#PBS -l select=1:ncpus=1
#PBS -l walltime=00:01:00
#PBS -j oe
#PBS -o qsub-out.log
cd "$PBS_O_WORKDIR"
echo "greeting=$GREETING dir=$(pwd) job=$PBS_JOBNAME"
echo "to stderr" >&2
exit 3
"""


def _missing(reason: str) -> None:
    """Skip locally, fail in CI (the rule of tests/conftest.py's ``missing``)."""
    if os.environ.get("CI") == "true" or os.environ.get("HPCDET_REQUIRE_ALL") == "1":
        pytest.fail(f"required test component missing: {reason}", pytrace=False)
    pytest.skip(reason)


@dataclass
class PbsMaster:
    """A det-master with ``resource_manager.type: pbs``, run as ``USER``."""

    url: str
    base: Path
    log: Path
    env: list[str]

    def run(self, *argv: str, cwd: Path | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``argv`` as ``USER``, with the PBS clients and hpcdet on its PATH."""
        return subprocess.run(["runuser", "-u", USER, "--", "env", "-i", *self.env, *argv],
                              cwd=cwd or self.base, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL,
                              timeout=timeout, check=False)

    def det(self, *args: str, cwd: Path | None = None,
            check: bool = False) -> subprocess.CompletedProcess[str]:
        result = self.run(str(BIN / "det"), "-m", self.url, *args, cwd=cwd, timeout=300)
        if check and result.returncode != 0:
            raise AssertionError(f"det {' '.join(args)} failed ({result.returncode}):\n"
                                 f"{result.stdout}\n{result.stderr}\n"
                                 f"{self.log.read_text()[-3000:]}")
        return result

    def task(self, task_id: int) -> dict[str, Any]:
        answer = load_json(self.det("task", "describe", str(task_id), "--json",
                                    check=True).stdout)
        return dict(answer["task"])

    def task_of_job(self, job_id: str) -> dict[str, Any]:
        listed = load_json(self.det("task", "list", "--json", check=True).stdout)
        return next(t for t in listed["tasks"] if t["job_id"] == job_id)

    def qstat(self, job_id: str) -> dict[str, Any]:
        out = self.run(f"{PBS_BIN}/qstat", "-x", "-f", "-F", "json", job_id)
        assert out.returncode == 0, out.stderr
        record: dict[str, Any] = json.loads(out.stdout)["Jobs"][job_id]
        return record


def _check_server() -> dict[str, str]:
    if shutil.which("qstat", path=f"{PBS_BIN}:/usr/bin") != f"{PBS_BIN}/qstat":
        _missing("OpenPBS is not installed (run scripts/dev-pbs up)")
    if os.geteuid() != 0:
        _missing("running det-master as user_a needs runuser: run as root")
    try:
        pwd.getpwnam(USER)
    except KeyError:
        _missing(f"user {USER} is missing: run scripts/dev-cluster users")
    if importlib.util.find_spec("hpcdet.dispatcher.pbs.backend") is None:
        _missing("the PBS backend (hpcdet.dispatcher.pbs.backend) is not in this tree")
    env = {"PATH": f"{PBS_BIN}:/usr/bin:/bin",
           "PBS_CONF_FILE": os.environ.get("PBS_CONF_FILE", "/etc/pbs.conf")}
    probe = subprocess.run([f"{PBS_BIN}/qstat", "-B"], env=env, capture_output=True,
                           text=True, timeout=30, check=False)
    if probe.returncode != 0:
        _missing(f"no OpenPBS server answers: {probe.stderr.strip()}")
    return env


@pytest.fixture(scope="module")
def pbs_master() -> Iterator[PbsMaster]:
    """det-master (SQLite) submitting to the dev OpenPBS server as ``USER``."""
    pbs_env = _check_server()
    entry = pwd.getpwnam(USER)
    base = Path(entry.pw_dir) / "hpcdet-it" / f"qsub-{uuid.uuid4().hex[:8]}"
    base.mkdir(parents=True)
    for path in (base.parent, base):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = {"port": port, "host": "127.0.0.1", "db": {"url": f"sqlite:///{base}/m.sqlite"},
              "state_dir": f"{base}/state",  # not ~user/.hpcdet: see it_pbs.pbs_master
              "reconciler": {"interval_seconds": 1}, "webserver": {"workers": 1, "threads": 4},
              "auth": {"mode": "open"},
              "resource_manager": {"type": "pbs", "master_host": "127.0.0.1",
                                   "cluster_name": "it", "job_storage_root": f"{base}/jobs",
                                   "slot_type": "cpu"}}
    (base / "master.yaml").write_text(yaml.safe_dump(config))
    env = [f"HOME={entry.pw_dir}", f"PATH={PBS_BIN}:{BIN}:/usr/bin:/bin",
           f"PBS_CONF_FILE={pbs_env['PBS_CONF_FILE']}", f"PYTHONPATH={REPO}",
           f"DET_USER={USER}"]
    master = PbsMaster(f"http://127.0.0.1:{port}", base, base / "master.log", env)
    with master.log.open("ab") as out:
        process = subprocess.Popen(
            ["runuser", "-u", USER, "--", "env", "-i", *env, str(BIN / "det-master"),
             "--config", str(base / "master.yaml")],
            cwd=base, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until_up(master.url, process, master.log)
        yield master
    finally:
        process.terminate()
        process.wait(30)


def wait_for_state(master: PbsMaster, task_id: int, *states: str) -> dict[str, Any]:
    def reached() -> dict[str, Any] | None:
        task = master.task(task_id)
        return task if task["state"] in states else None
    try:
        found: dict[str, Any] = wait_for(reached, f"task {task_id} in {states}", timeout=240)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {master.task(task_id)}\n"
                             f"{master.log.read_text()[-3000:]}") from None
    return found


def test_an_unmodified_pbs_script_runs_with_qsubs_precedence(pbs_master: PbsMaster) -> None:
    (pbs_master.base / "job.sh").write_text(SCRIPT)
    name = f"c-qsub-{uuid.uuid4().hex[:6]}"
    result = pbs_master.det("qsub", "-N", name, "-l", "walltime=00:03:00", "-v",
                            "GREETING=hello there", "-W", "block=true", "job.sh")
    job_id = result.stdout.strip()
    # -W block=true: det waits and exits with the script's exit status, as qsub does.
    assert result.returncode == 3, (result.stdout, result.stderr,
                                    pbs_master.log.read_text()[-3000:])
    job = pbs_master.qstat(job_id)
    # The command line beats #PBS -N and #PBS -l walltime; the other directives hold.
    assert (job["Job_Name"], job["Resource_List"]["walltime"]) == (name, "00:03:00")
    assert job["Resource_List"]["select"] == "1:ncpus=1" and job["queue"] == "workq"
    assert job["Exit_status"] == 3 and job["Job_Owner"].startswith(f"{USER}@")
    task = pbs_master.task_of_job(job_id)
    assert job["Variable_List"]["HPCDET_JOB_TAG"] == f"hpcdet:it:task-{task['id']}"
    described = pbs_master.task(task["id"])
    assert described["state"] == "ERROR" and described["exit_code"] == 3
    expected = f"greeting=hello there dir={pbs_master.base} job={name}"
    logs = pbs_master.det("task", "logs", str(task["id"]), check=True).stdout
    assert expected in logs and "to stderr" in logs  # -j oe: one stream
    # #PBS -o qsub-out.log, relative to the directory det qsub ran in.
    copy = (pbs_master.base / "qsub-out.log").read_text()
    assert expected in copy and "to stderr" in copy


def test_an_executable_runs_and_kill_ends_it(pbs_master: PbsMaster) -> None:
    result = pbs_master.det("qsub", "-N", f"c-kill-{uuid.uuid4().hex[:6]}", "-l",
                            "select=1:ncpus=1", "--", "/bin/sleep", "300", check=True)
    job_id = result.stdout.strip()
    task_id = pbs_master.task_of_job(job_id)["id"]
    wait_for_state(pbs_master, task_id, "RUNNING")
    assert "STOPPING_KILLED" in pbs_master.det("task", "kill", str(task_id), check=True).stdout
    task = wait_for_state(pbs_master, task_id, "CANCELED", "COMPLETED", "ERROR")
    assert task["state"] == "CANCELED", task
    assert pbs_master.qstat(job_id)["job_state"] == "F"


def test_arrays_and_interactive_jobs_are_refused_before_anything_is_submitted(
        pbs_master: PbsMaster) -> None:
    (pbs_master.base / "array.sh").write_text("#!/bin/sh\n#PBS -J 1-3\necho\n")
    array = pbs_master.det("qsub", "array.sh")
    assert array.returncode == 1 and "Traceback" not in array.stderr
    assert "-J: job arrays are not supported" in array.stderr
    interactive = pbs_master.det("qsub", "-I")
    assert interactive.returncode == 1 and "-I: interactive jobs" in interactive.stderr
    listed = load_json(pbs_master.det("task", "list", "--json", check=True).stdout)
    assert all(t["name"] != "array.sh" for t in listed["tasks"])
