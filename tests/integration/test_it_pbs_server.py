"""The dev OpenPBS server (``scripts/dev-pbs up``) runs a real job for an ordinary user.

One job, submitted with the real ``qsub`` as ``user_a`` (``runuser``), must end ``F``
with ``Exit_status`` 0 in ``qstat -x -f -F json`` (job history is on in the dev server).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import time
import uuid
from typing import Any

import pytest

pytestmark = pytest.mark.pbs

PBS_BIN = "/opt/pbs/bin"
USER = "user_a"


def _missing(reason: str) -> None:
    """Skip locally, fail in CI (the rule of tests/conftest.py's ``missing``)."""
    if os.environ.get("CI") == "true" or os.environ.get("HPCDET_REQUIRE_ALL") == "1":
        pytest.fail(f"required test component missing: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def pbs_env() -> dict[str, str]:
    """The environment that reaches the dev OpenPBS server; skips/fails without one."""
    env = {"PATH": f"{PBS_BIN}:/usr/bin:/bin",
           "PBS_CONF_FILE": os.environ.get("PBS_CONF_FILE", "/etc/pbs.conf")}
    if shutil.which("qstat", path=env["PATH"]) != f"{PBS_BIN}/qstat":
        _missing("OpenPBS is not installed (run scripts/dev-pbs up)")
    probe = subprocess.run([f"{PBS_BIN}/qstat", "-B"], env=env, capture_output=True,
                           text=True, timeout=30, check=False)
    if probe.returncode != 0:
        _missing(f"no OpenPBS server answers: {probe.stderr.strip()}")
    if os.geteuid() != 0:
        _missing("submitting as user_a needs runuser: run as root")
    try:
        pwd.getpwnam(USER)
    except KeyError:
        _missing(f"user {USER} is missing: run scripts/dev-cluster users")
    return env


def as_user(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    """``argv`` (a PBS client command) run as ``USER`` in its home directory."""
    home = pwd.getpwnam(USER).pw_dir
    full = ["runuser", "-u", USER, "--", "env", "-i", f"HOME={home}",
            *[f"{k}={v}" for k, v in env.items()], *argv]
    return subprocess.run(full, capture_output=True, text=True, timeout=60, check=False,
                          cwd=home)


def finished_job(env: dict[str, str], job_id: str, timeout: float) -> dict[str, Any]:
    """The job's ``qstat -x -f -F json`` record once its state is ``F``."""
    deadline = time.monotonic() + timeout
    record: dict[str, Any] = {}
    while time.monotonic() < deadline:
        out = as_user(env, f"{PBS_BIN}/qstat", "-x", "-f", "-F", "json", job_id)
        assert out.returncode == 0, out.stderr
        record = json.loads(out.stdout)["Jobs"][job_id]
        if record["job_state"] == "F":
            return record
        time.sleep(1)
    pytest.fail(f"job {job_id} not finished after {timeout} s: {record}")


def test_user_job_runs_and_finishes_with_exit_status_0(pbs_env: dict[str, str]) -> None:
    name = f"it-{uuid.uuid4().hex[:8]}"
    sub = as_user(pbs_env, f"{PBS_BIN}/qsub", "-N", name, "-l", "select=1:ncpus=1",
                  "-l", "walltime=00:01:00", "--", "/bin/true")
    assert sub.returncode == 0, sub.stderr
    job_id = sub.stdout.strip()
    record = finished_job(pbs_env, job_id, timeout=90)
    assert record["Exit_status"] == 0
    assert record["Job_Name"] == name
    assert record["Job_Owner"].startswith(f"{USER}@")
    assert record["queue"] == "workq"
