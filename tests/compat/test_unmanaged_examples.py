"""Determined's unmanaged examples (``examples/features/unmanaged``), only imports changed,
reporting into a live master: single process, checkpoints (run twice: the second resumes),
the context manager, torch checkpoints, and ``torchrun`` with 2 ranks; then Determined's
distributed example started by ``srun`` in a plain user-written sbatch script on the dev
cluster. Each experiment must show in ``det experiment list`` as unmanaged, on its web page,
and with its metrics; the master must never submit a job for one.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tutorials import COPIES, check_only_allowed_changes

pytestmark = [pytest.mark.compat, pytest.mark.slurm]

EXAMPLES = "unmanaged"
# `import determined` binds the name the example uses (determined.LOG_FORMAT) to hpcdet.
RENAMED_MODULE = [("import determined", "import hpcdet as determined")]
NAMES = ("1_singleton.py", "2_checkpoints.py", "3_torch_distributed.py", "context_manager.py",
         "checkpoints_advanced.py")


@pytest.mark.parametrize("name", NAMES)
def test_the_copies_differ_only_in_their_imports(name: str) -> None:
    check_only_allowed_changes(EXAMPLES, name, declared_changes=RENAMED_MODULE)


def _run(master: Any, argv: list[str], where: Path, timeout: float = 300) -> str:
    """Run an example as its user would (``DET_MASTER`` set, no job); its stdout."""
    shutil.copytree(COPIES / EXAMPLES, where, dirs_exist_ok=True)
    result = subprocess.run(argv, cwd=where, env=master.env, capture_output=True, text=True,
                            timeout=timeout, check=False)
    assert result.returncode == 0, f"{argv} failed:\n{result.stdout}\n{result.stderr[-4000:]}"
    return result.stdout


def _experiment(master: Any, name: str) -> dict[str, Any]:
    """The newest experiment of that name (the module's tests share one master)."""
    found = [e for e in master.api("/experiments?limit=100")["experiments"]
             if e["name"] == name]
    assert found, f"no experiment {name}"
    exp: dict[str, Any] = max(found, key=lambda e: e["id"])
    return exp


def _check_shown(master: Any, name: str, *, trials: int = 1) -> dict[str, Any]:
    """Unmanaged and COMPLETED in the API, ``det e list`` and its page, with metrics."""
    exp = _experiment(master, name)
    assert exp["unmanaged"] and exp["state"] == "COMPLETED", exp
    listed = master.det("experiment", "list", check=True).stdout
    row = next(line for line in listed.splitlines()
               if line.split()[:1] == [str(exp["id"])])
    assert f" {name} " in row and "(unmanaged)" in row and "COMPLETED" in row, listed
    page = httpx.get(f"{master.url}/experiments/{exp['id']}", timeout=30,
                     headers={"X-Hpcdet-User": master.env["DET_USER"]})
    assert page.status_code == 200 and 'data-fact="unmanaged"' in page.text
    described = master.api(f"/experiments/{exp['id']}/trials")["trials"]
    assert len(described) == trials and all(t["state"] == "COMPLETED" for t in described)
    metrics = master.api(f"/trials/{described[0]['id']}/metrics?group=training")["metrics"]
    assert metrics, "no training metrics stored"
    return exp


def test_single_process_examples(module_master: Any, tmp_path: Path) -> None:
    python = sys.executable
    out = _run(module_master, [python, "1_singleton.py"], tmp_path / "a")
    assert "training loss" in out
    _check_shown(module_master, "unmanaged-1-singleton")
    _run(module_master, [python, "context_manager.py"], tmp_path / "b")
    _check_shown(module_master, "unmanaged-context-manager")
    first = _run(module_master, [python, "2_checkpoints.py"], tmp_path / "c")
    assert "initial step: 0" in first
    again = _run(module_master, [python, "2_checkpoints.py"], tmp_path / "c")
    assert "initial step: 99" in again and "Checkpoint contents: 99," in again
    exp = _check_shown(module_master, "unmanaged-2-checkpoints")
    [trial] = module_master.api(f"/experiments/{exp['id']}/trials")["trials"]
    assert trial["steps_completed"] == 198  # 0..99, then 99..198
    # Checkpoint GC (Determined's defaults) kept the latest, written at step 189.
    latest = _latest_checkpoint(module_master, trial)
    assert latest.joinpath("state").read_text().startswith("189,")
    assert trial["job_ids"] == []  # no job: the master submitted nothing for it


@pytest.mark.torch
def test_torch_examples_and_torchrun_with_two_ranks(module_master: Any,
                                                    tmp_path: Path) -> None:
    python = sys.executable
    _run(module_master, [python, "checkpoints_advanced.py"], tmp_path / "a")
    exp = _check_shown(module_master, "unmanaged-checkpoints-advanced")
    assert exp["labels"] == ["some", "set", "of", "labels"]
    out = _run(module_master, [python, "-m", "torch.distributed.run", "--nnodes=1",
                               "--nproc_per_node=2", "--master_addr", "127.0.0.1",
                               "--master_port", str(_free_port()), "--max_restarts", "0",
                               "3_torch_distributed.py"], tmp_path / "b")
    url = re.search(r"See the experiment at: (\S+)", out)
    exp = _check_shown(module_master, "unmanaged-3-torch-distributed")
    assert url is not None and url.group(1) == f"{module_master.url}/experiments/{exp['id']}"
    _check_both_ranks(module_master, exp)


def _check_both_ranks(master: Any, exp: dict[str, Any]) -> None:
    """Each rank reported its own steps; the sharded checkpoints hold both ranks' files."""
    [trial] = master.api(f"/experiments/{exp['id']}/trials")["trials"]
    metrics = master.api(f"/trials/{trial['id']}/metrics?group=training")["metrics"]
    ranks = {round(m["metrics"]["rank"]) for m in metrics}
    assert ranks == {0, 1}, metrics[:4]
    latest = _latest_checkpoint(master, trial)
    assert sorted(p.name for p in latest.iterdir() if p.name.startswith("state_")) == [
        "state_0", "state_1"]
    assert latest.joinpath("state_1").read_text() == "99,1"


def _latest_checkpoint(master: Any, trial: dict[str, Any]) -> Path:
    """The trial's latest checkpoint directory in the master's storage."""
    uuid = trial["latest_checkpoint"]
    assert uuid, trial
    described = master.api(f"/checkpoints/{uuid}")["checkpoint"]
    assert described["trial_id"] == trial["id"]
    return Path(master.job_root.parent / "ckpt" / uuid)


@pytest.mark.torch
def test_srun_in_a_users_own_sbatch_script(module_master: Any, slurm: dict[str, str],
                                           tmp_path: Path) -> None:
    where = tmp_path / "job"
    shutil.copytree(COPIES / EXAMPLES, where)
    port = _free_port()
    # What a user writes: torch's env:// variables from srun's, then the example.
    (where / "run.sbatch").write_text(f"""#!/bin/bash
#SBATCH --job-name=my-own-job
#SBATCH --partition=side
#SBATCH --nodes=1
#SBATCH --ntasks=2
#SBATCH --time=10
#SBATCH --output={where}/slurm-%j.out
srun bash -c 'RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS LOCAL_RANK=$SLURM_LOCALID \\
  LOCAL_WORLD_SIZE=$SLURM_NTASKS MASTER_ADDR=127.0.0.1 MASTER_PORT={port} \\
  exec {sys.executable} 3_torch_distributed.py'
""")
    env = {**module_master.env, **slurm, "OMP_NUM_THREADS": "1"}
    before = max((e["id"] for e in module_master.api("/experiments?limit=100")["experiments"]),
                 default=0)
    submitted = subprocess.run(["sbatch", "--parsable", "--chdir", str(where),
                                str(where / "run.sbatch")], env=env, capture_output=True,
                               text=True, timeout=60, check=True)
    job_id = submitted.stdout.strip().split(";")[0]
    exp = _wait_for_end(module_master, "unmanaged-3-torch-distributed", where, job_id,
                        after=before)
    _check_shown(module_master, "unmanaged-3-torch-distributed")
    [trial] = module_master.api(f"/experiments/{exp['id']}/trials")["trials"]
    assert trial["external_job"] == job_id and trial["job_ids"] == [job_id]
    _check_both_ranks(module_master, exp)


def _wait_for_end(master: Any, name: str, where: Path, job_id: str, *, after: int,
                  timeout: float = 300) -> dict[str, Any]:
    """The experiment of that name made after experiment ``after``, once it has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [e for e in master.api("/experiments?limit=100")["experiments"]
                 if e["name"] == name and e["id"] > after]
        if found and found[0]["state"] in ("COMPLETED", "ERROR", "CANCELED"):
            return found[0]
        time.sleep(1)
    output = "\n".join(p.read_text()[-3000:] for p in where.glob("slurm-*.out"))
    raise AssertionError(f"job {job_id}'s unmanaged experiment did not end:\n{output}")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
