"""schemathesis against a live det-master (SQLite, open auth): no 5xx, answers as described.

The master runs in a subprocess with stand-in Slurm commands first on its PATH (sbatch
answers a job id, the others nothing), so the run needs no cluster and submits nothing real.
Two bounded runs with fixed seeds: one with generated ids (mostly unknown objects), one with
the path ids pinned to an experiment, trial, task, template, checkpoint, workspace and
project seeded first, so the answers of real objects are checked against the description
too. The master is open (``auth: {mode: open}``; without it a master.yaml means munge):
callers name themselves with X-Hpcdet-User.
"""

from __future__ import annotations

import base64
import io
import os
import shutil
import socket
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from it_helpers import BIN, LiveMaster, wait_for

# No cluster: stand-in Slurm commands (STUBS); scripts/test runs it beside the Slurm tests.
pytestmark = pytest.mark.isolated
ST = BIN / "st"
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_schema_conformance,response_headers_conformance,unsupported_method")
# Bounded for CI; HPCDET_FUZZ_EXAMPLES and HPCDET_FUZZ_SEED run it longer or differently.
MAX_EXAMPLES = os.environ.get("HPCDET_FUZZ_EXAMPLES", "25")
SEED = int(os.environ.get("HPCDET_FUZZ_SEED", "14"))
STUBS = {"sbatch": "echo 4242\n",
         "sinfo": "echo 'batch*|node1|idle|4|0/4/0/4|(null)|(null)|'\n",
         **{name: "exit 0\n" for name in (
             "squeue", "sacct", "scontrol", "scancel", "sacctmgr", "sprio", "sshare")}}
CONFIG = """\
name: fuzz
entrypoint: python3 train.py
hyperparameters: {lr: 0.1}
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _context() -> str:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("train.py")
        data = b"print('hi')\n"
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buffer.getvalue()).decode()


# PostgreSQL too: its driver refuses what SQLite stores (a NUL in a string was a 500 there).
@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def fuzz_master(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LiveMaster]:
    if not ST.exists():
        pytest.skip("schemathesis is not installed (pip install -e '.[dev]')")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name, body in STUBS.items():
        (stubs / name).write_text("#!/bin/sh\n" + body)
        (stubs / name).chmod(0o755)
    port = free_port()
    config = {"port": port, "host": "127.0.0.1", "state_dir": str(tmp_path),
              "auth": {"mode": "open"},
              "db": {"url": f"sqlite:///{tmp_path / 'master.sqlite'}" if request.param == "sqlite"
                     else str(request.getfixturevalue("postgres_url"))},
              "reconciler": {"interval_seconds": 1},
              "webserver": {"workers": 1, "threads": 4},
              "resource_manager": {"master_host": "127.0.0.1", "slot_type": "cpu",
                                   "pool_refresh_seconds": 1,
                                   "job_storage_root": str(tmp_path / "jobs")}}
    (tmp_path / "master.yaml").write_text(yaml.safe_dump(config))
    path = f"{stubs}:{BIN}:/usr/local/bin:/usr/bin:/bin"
    env = {**os.environ, "PATH": path, "HOME": str(tmp_path)}
    live = LiveMaster(url=f"http://127.0.0.1:{port}", env=env, job_root=tmp_path / "jobs",
                      log=tmp_path / "master.log",
                      argv=(str(BIN / "det-master"), "--config", str(tmp_path / "master.yaml")))
    try:
        live.start()
        yield live
    finally:
        live.stop()


def _seed(master: LiveMaster, tmp_path: Path) -> dict[str, object]:
    """One of each object; returns the path values and the trial's token.

    The workspace and the template are both called ``seed`` (``path.name``); the experiment
    and the template are in the workspace, the experiment also in its project ``seed``.
    """
    user = {"X-Hpcdet-User": "fuzzer"}
    with httpx.Client(base_url=master.url + "/api/v1", headers=user, timeout=30) as api:
        assert api.get("/master").json()["auth_mode"] == "open"
        wait_for(lambda: api.get("/resource-pools").json()["resource_pools"], "the pools")
        workspace = api.post("/workspaces", json={"name": "seed"})
        assert workspace.status_code == 201, workspace.text
        project = api.post("/workspaces/seed/projects", json={"name": "seed"})
        assert project.status_code == 201, project.text
        exp = api.post("/experiments", json={"config": CONFIG, "context": _context(),
                                             "workspace": "seed", "project": "seed"})
        assert exp.status_code == 201, exp.text
        assert exp.json()["experiment"]["project_id"] == project.json()["project"]["id"]
        exp_id = exp.json()["experiment"]["id"]
        trial_id = wait_for(lambda: (api.get(f"/experiments/{exp_id}/trials").json()
                                     ["trials"] or [{}])[0].get("id"), "the trial")
        # The plain trial token is only in the job directory (the database keeps its hash).
        token_file = wait_for(lambda: next(master.job_root.rglob(".token"), None), "a token")
        token = token_file.read_text().strip()
        bearer = {"Authorization": f"Bearer {token}"}
        uuid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"  # checkpoint ids must be UUIDs
        checkpoint = api.post(f"/trials/{trial_id}/checkpoints", headers=bearer,
                              json={"uuid": uuid, "steps_completed": 5, "metadata": {},
                                    "resources": {"w.pt": 3}})
        assert checkpoint.status_code == 201, checkpoint.text
        metrics = api.post(f"/trials/{trial_id}/metrics", headers=bearer, json={
            "group": "validation", "reports": [{"steps_completed": 5,
                                                "metrics": {"validation_loss": 0.5}}]})
        assert metrics.status_code == 200, metrics.text
        template = api.post("/templates", json={"name": "seed", "config": "labels: [a]\n",
                                                "workspace": "seed"})
        assert template.status_code == 201, template.text
        task = api.post("/tasks", json={"wrap": "true", "cwd": str(tmp_path),
                                        "options": [["partition", "batch"]]})
        assert task.status_code == 201, task.text
    return {"exp_id": exp_id, "trial_id": trial_id, "task_id": task.json()["task"]["id"],
            "name": "seed", "project": "seed", "uuid": uuid, "job_id": "4242",
            "token": token}


def _schemathesis(master: LiveMaster, tmp_path: Path, name: str, seed: int,
                  pinned: dict[str, object] | None = None) -> None:
    argv = [str(ST)]
    headers = ["-H", "X-Hpcdet-User: fuzzer"]
    if pinned is not None:
        toml = tmp_path / f"{name}.toml"
        lines = ["[parameters]"] + [f'"path.{key}" = {value!r}' for key, value in pinned.items()
                                    if key != "token"]
        toml.write_text("\n".join(lines).replace("'", '"') + "\n")
        argv += ["--config-file", str(toml)]
        headers += ["-H", f"Authorization: Bearer {pinned['token']}"]
    argv += ["run", f"{master.url}/api/v1/openapi.json", "--checks", CHECKS, "-n", MAX_EXAMPLES,
             "--seed", str(seed), "-w", "1", "--no-color", "--generation-database", "none",
             "--request-timeout", "30", *headers]
    env = {**master.env, "SCHEMATHESIS_HOOKS": ""}
    started = time.monotonic()
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900,
                            cwd=tmp_path)
    report = result.stdout[-12000:] + result.stderr[-3000:]
    assert result.returncode == 0, (f"schemathesis ({name}) found problems after "
                                    f"{time.monotonic() - started:.0f}s:\n{report}\n"
                                    f"{master.log.read_text()[-4000:]}")
    assert " passed" in result.stdout, report
    # The 500 handler logs "unhandled error" with the traceback: there must be none.
    assert "unhandled error" not in master.log.read_text(), master.log.read_text()[-4000:]


def test_schemathesis_finds_no_server_error_and_no_answer_off_the_description(
        fuzz_master: LiveMaster, tmp_path: Path) -> None:
    described = httpx.get(f"{fuzz_master.url}/api/v1/openapi.json", timeout=30).json()
    assert described["openapi"].startswith("3.") and "/experiments" in described["paths"]
    pinned = _seed(fuzz_master, tmp_path)
    _schemathesis(fuzz_master, tmp_path, "generated-ids", seed=SEED)
    _schemathesis(fuzz_master, tmp_path, "seeded-objects", seed=SEED + 1, pinned=pinned)
    assert str(shutil.which("sbatch", path=fuzz_master.env["PATH"])).startswith(str(tmp_path))
