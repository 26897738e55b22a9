"""Helpers for the integration tier (no fixtures here; see conftest.py)."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

# Re-exported: the integration tests take the rule from here (tests/required.py).
from required import missing as missing

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# The dev cluster's Slurm version (`scripts/dev-cluster env` exports it) and, by that script's
# naming, the slurm.conf every user can read (`dev-cluster users`) and the directory of its
# programs to put first in a PATH built from scratch ("" for Debian's, in /usr/bin).
DEV_SLURM = os.environ.get("HPCDET_DEV_SLURM", "22.05")
_SUFFIX = "" if DEV_SLURM == "22.05" else f"-{DEV_SLURM}"
SHARED_SLURM_CONF = f"/etc/hpcdet/dev-cluster{_SUFFIX}/slurm.conf"
SLURM_BIN_PATH = "" if DEV_SLURM == "22.05" else f"/opt/slurm-{DEV_SLURM}/bin:"


@dataclass
class LiveMaster:
    url: str
    env: dict[str, str]
    job_root: Path
    log: Path
    db_url: str = ""
    argv: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start det-master (again), appending to its log; returns once it answers."""
        with self.log.open("ab") as out:
            # A session of its own: kill9() takes down every process of the master.
            self.process = subprocess.Popen(list(self.argv), env=self.env, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        wait_until_up(self.url, self.process, self.log)

    def kill9(self) -> None:
        """SIGKILL every process of the master, as a crash would: no cleanup of any kind."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)

    def cancel_leftover_jobs(self) -> None:
        """Cancel the Slurm jobs this master left behind (their working directory is under
        its job root), and wait until Slurm has let go of them: a trial still running after
        its test would take the next test's CPUs (fair-share measures whole minutes of them).

        The Slurm commands run in this process's environment (the ``slurm`` fixture put
        SLURM_CONF there): a master's own may have none (the SSH transport's tests give it a
        PATH without them)."""
        slurm = dict(os.environ)
        mine = _jobs_under(slurm, self.job_root)
        if not mine:
            return
        subprocess.run(["scancel", *mine], env=slurm, capture_output=True, timeout=60,
                       check=False)
        deadline = time.monotonic() + 60
        while _jobs_under(slurm, self.job_root) and time.monotonic() < deadline:
            time.sleep(0.5)

    def det(self, *args: str, check: bool = False,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Run the real ``det`` CLI against this master."""
        result = subprocess.run([str(BIN / "det"), "-m", self.url, *args], env=self.env,
                                capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"det {' '.join(args)} failed ({result.returncode}):\n"
                                 f"{result.stdout}\n{result.stderr}")
        return result

    def api(self, path: str) -> Any:
        """GET an API path as the CLI's user (a master may require a name)."""
        headers = {"X-Hpcdet-User": self.env.get("DET_USER", "tester")}
        return httpx.get(f"{self.url}/api/v1{path}", headers=headers, timeout=30,
                         verify=verify_for(self.env)).json()


TRIAL_PAGE_LIMIT = 1000  # the most one GET .../trials answers


def trials_of(master: LiveMaster, exp_id: int) -> list[dict[str, Any]]:
    """Every trial of the experiment in id order, read page by page from
    ``GET /experiments/<id>/trials`` (the experiment's own answer no longer embeds them)."""
    trials: list[dict[str, Any]] = []
    while True:
        answer = master.api(f"/experiments/{exp_id}/trials?offset={len(trials)}"
                            f"&limit={TRIAL_PAGE_LIMIT}&sortBy=id")
        page = answer.get("trials") or []
        trials += page
        # No pagination: an error answer (the experiment was deleted meanwhile).
        total = (answer.get("pagination") or {}).get("total", len(trials))
        if not page or len(trials) >= total:
            return trials


def experiment_with_trials(master: LiveMaster, exp_id: int) -> dict[str, Any]:
    """``GET /experiments/<id>`` with the experiment's trials added under ``"trials"`` (the
    shape ``det experiment describe --json`` prints). The experiment is read first, so its
    trials are at least as new as its state. An error answer (404) comes back unchanged."""
    answer: dict[str, Any] = master.api(f"/experiments/{exp_id}")
    if "experiment" in answer:
        answer["trials"] = trials_of(master, exp_id)
    return answer


def verify_for(env: dict[str, str]) -> ssl.SSLContext | bool:
    """httpx's ``verify=`` for a test's environment: its DET_MASTER_CERT_FILE, if any."""
    cert_file = env.get("DET_MASTER_CERT_FILE")
    return ssl.create_default_context(cafile=cert_file) if cert_file else True


def wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"det-master exited early:\n{log.read_text()[-3000:]}")
        try:
            # Only whether it answers: a TLS master's certificate is the tests' business.
            if httpx.get(f"{url}/api/v1/master", timeout=2, verify=False).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"det-master did not answer:\n{log.read_text()[-3000:]}")


def wait_for(probe: Callable[[], Any], what: str, timeout: float = 120) -> Any:
    """``probe()``'s first truthy answer, asked every half second until ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def sacct_state(job_id: str, env: dict[str, str]) -> str:
    """The job's state in Slurm's accounting (waits a little for slurmdbd to catch up)."""
    for _ in range(30):
        out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"], env=env,
                             capture_output=True, text=True).stdout.strip()
        if out and out not in ("PENDING", "RUNNING", "COMPLETING"):
            return out.split()[0]
        time.sleep(1)
    return out


def failed_exit_code(job_id: str, env: dict[str, str]) -> str:
    """The exit code (``3:0``) of the job's failed execution as Slurm's accounting records
    it: a ``FAILED`` job, or, with Slurm 25.11's ``--requeue=expedite``, an execution
    ``REQUEUED`` (Slurm holds a failed expedited job) whose held job hpcdet then cancelled
    (``CANCELLED``, the exit code kept); anything else fails the test, naming the rows."""
    rows: list[list[str]] = []
    for _ in range(30):
        out = subprocess.run(["sacct", "-n", "-X", "-D", "-P", "-j", job_id, "-o",
                              "State,ExitCode"], env=env, capture_output=True, text=True).stdout
        rows = [line.split("|") for line in out.splitlines() if line]
        if rows and rows[-1][0] not in ("PENDING", "RUNNING", "COMPLETING", "REQUEUED"):
            break
        time.sleep(1)
    states = [state for state, _ in rows]
    if states == ["FAILED"]:
        return rows[0][1]
    if len(states) == 2 and states[0] == "REQUEUED" and states[1].startswith("CANCELLED"):
        return rows[0][1]
    raise AssertionError(f"job {job_id} is no failed execution in accounting: {rows}")


def sacct_row(job_id: str, env: dict[str, str], fields: str) -> list[str]:
    """The job's ``fields`` (``-o`` list) in Slurm's accounting, once every one is filled.

    slurmdbd may write a short job's end before its start (a busy host): for a while the
    row says COMPLETED with no partition or requested TRES. Waits for the whole row, up to
    a minute; then returns it as it is (the caller's assertion shows it)."""
    row: list[str] = []
    for _ in range(60):
        out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", fields], env=env,
                             capture_output=True, text=True, check=True).stdout
        row = out.splitlines()[0].split("|") if out.strip() else []
        if row and all(row):
            return row
        time.sleep(1)
    return row


#: ``resource_manager_settings`` parameters of a test run with the local transport and with
#: Slurm through slurmrestd (Slurm 25.11 only); see :func:`transport_settings`.
TRANSPORTS = ["local", pytest.param("rest", marks=pytest.mark.slurm2511)]


def transport_settings(request: pytest.FixtureRequest) -> dict[str, Any]:
    """``{"transport": {type: rest, ...}}`` when a test's ``resource_manager_settings`` is
    parametrized ``rest`` (docs/admin/slurmrestd.md: a token from ``scontrol token``), else
    nothing (the local transport)."""
    if getattr(request, "param", "local") != "rest":
        return {}
    return {"transport": {"type": "rest", "url": request.getfixturevalue("slurmrestd"),
                          "token_source": {"type": "scontrol", "lifespan_seconds": 600}},
            # slurmrestd does not say which partition is Slurm's default.
            "default_compute_resource_pool": "batch"}


STANDIN = Path(__file__).resolve().parent / "standin" / "standin.py"
STANDIN_ENTRYPOINT = "python3 standin.py"


def standin_context(directory: Path, extra: dict[str, str] | None = None) -> Path:
    """A model directory holding the stand-in trial (``standin/standin.py``: the digits
    trial's reports, checkpoints and preemption on the standard library, no torch); its
    entrypoint is :data:`STANDIN_ENTRYPOINT`. ``extra``: more files, by name."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "standin.py").write_text(STANDIN.read_text())
    for name, text in (extra or {}).items():
        (directory / name).write_text(text)
    return directory


def standin_config(name: str, max_length: dict[str, int], env: list[str],
                   slots: int = 1, **extra: Any) -> dict[str, Any]:
    """A single-trial experiment of the stand-in trial: ``max_length`` (``{"epochs": 2}``),
    ``env`` (``STANDIN_*`` knobs, ``KEY=value``), ``slots`` per trial, no restarts; ``extra``:
    more top-level keys (a resource pool...)."""
    return {
        "name": name,
        "entrypoint": STANDIN_ENTRYPOINT,
        "hyperparameters": {"lr": 0.1},
        "searcher": {"name": "single", "metric": "validation_loss", "smaller_is_better": True,
                     "max_length": max_length},
        "resources": {"slots_per_trial": slots, **extra.pop("resources", {})},
        "environment": {"environment_variables": env},
        "max_restarts": 0,
        **extra,
    }


def write_experiment(directory: Path, config: dict[str, Any], files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def load_json(text: str) -> Any:
    return json.loads(text)


def _jobs_under(env: dict[str, str], root: Path) -> list[str]:
    """Ids of the Slurm jobs (any user's) whose working directory or batch script is under
    ``root`` (``det sbatch`` jobs work where the user submitted them; their script is the
    master's)."""
    listed = subprocess.run(["squeue", "-h", "-a", "-o", "%i|%Z|%o"], env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    jobs = (line.split("|", 2) for line in listed.stdout.splitlines() if line.count("|") == 2)
    return [job for job, work_dir, command in jobs
            if Path(work_dir).is_relative_to(root) or Path(command).is_relative_to(root)]
