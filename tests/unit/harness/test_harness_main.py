"""``python -m hpcdet.harness`` as a process, one rank, against the fake master."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from hang_guard import HANG_GUARD_S
from harness_fakes import REPO_ROOT, FakeMaster, job_environ, run_harness, write_job_dir

from hpcdet.harness.main import main

SCRIPT = """
import json, random, sys
import torch, torch.distributed as dist
import hpcdet.core

with hpcdet.core.init() as core:
    core.train.report_training_metrics(1, {"loss": 0.5})
    result = {
        "argv": sys.argv[1:],
        "initialized": dist.is_initialized(),
        "world": dist.get_world_size(),
        "size": core.distributed.size,
        "random": random.random(),
        "torch": torch.rand(1).item(),
    }
with open("result.json", "w") as out:
    json.dump(result, out)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""


def _job(
    tmp_path: pathlib.Path, fake_master: FakeMaster, entrypoint: str | list[str]
) -> pathlib.Path:
    job = write_job_dir(tmp_path / "job", fake_master.url, entrypoint=entrypoint)
    (job / "context" / "train.py").write_text(SCRIPT)
    return job


@pytest.mark.torch
def test_a_one_slot_trial_runs_in_process_with_a_process_group(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    pytest.importorskip("torch")
    job = _job(tmp_path, fake_master, "python3 train.py")
    [rank] = run_harness(job, [job_environ(job)])
    assert rank.returncode == 0, rank.stderr
    assert "hpcdet harness: rank 0/1 local 0/1 node " in rank.stderr
    assert "backend gloo" in rank.stderr
    result = json.loads((job / "context" / "result.json").read_text())
    assert (result["initialized"], result["world"], result["size"]) == (True, 1, 1)
    assert fake_master.reports("training") == [{"steps_completed": 1, "metrics": {"loss": 0.5}}]


@pytest.mark.torch
def test_rngs_are_seeded_from_the_trial_seed(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    pytest.importorskip("torch")
    seen = []
    for attempt in range(2):
        job = _job(tmp_path / str(attempt), fake_master, "python3 train.py")
        [rank] = run_harness(job, [job_environ(job)])
        assert rank.returncode == 0, rank.stderr
        result = json.loads((job / "context" / "result.json").read_text())
        seen.append((result["random"], result["torch"]))
    assert seen[0] == seen[1]


@pytest.mark.torch
def test_the_scripts_exit_code_is_the_harness_exit_code(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    pytest.importorskip("torch")
    job = _job(tmp_path, fake_master, "python3 train.py 3")
    [rank] = run_harness(job, [job_environ(job)])
    assert rank.returncode == 3
    assert json.loads((job / "context" / "result.json").read_text())["argv"] == ["3"]
    assert len(fake_master.reports("training")) == 1  # flushed despite the failure


def test_a_command_entrypoint_gets_the_torch_env(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    command = ["sh", "-c", 'echo "$RANK $WORLD_SIZE $LOCAL_RANK $MASTER_ADDR $MASTER_PORT"; exit 4']
    job = _job(tmp_path, fake_master, command)
    env = job_environ(
        job,
        SLURM_PROCID="0",
        SLURM_NTASKS="1",
        SLURM_NNODES="2",
        SLURM_JOB_ID="77",
        SLURM_JOB_NODELIST="n[1-2]",
    )
    [rank] = run_harness(job, [env])
    assert rank.returncode == 4
    rank_, world, local, addr, port = rank.stdout.split()
    assert (rank_, world, local, addr) == ("0", "1", "0", "n1")
    assert 20000 <= int(port) <= 32767
    assert "backend none" in rank.stderr


@pytest.mark.torch
def test_a_trial_class_missing_from_the_context_exits_2(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    job = _job(tmp_path, fake_master,
               "python3 -m determined.launch.torch_distributed --trial model_def:MyTrial")
    [rank] = run_harness(job, [job_environ(job)])
    assert rank.returncode == 2
    assert (f"entrypoint model_def:MyTrial: no module model_def in {job / 'context'}"
            in rank.stderr)


def test_a_launcher_entrypoint_hpcdet_cannot_honour_exits_2(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    job = _job(tmp_path, fake_master, "python3 -m determined.launch.torch_distributed "
                                      "--nproc_per_node 8 -- --trial model_def:MyTrial")
    [rank] = run_harness(job, [job_environ(job)])
    assert rank.returncode == 2
    assert "--nproc_per_node 8 are not supported: srun already starts" in rank.stderr


def test_outside_a_job_the_harness_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DET_TRIAL_INFO", raising=False)
    assert main([]) == 2
    assert "$DET_TRIAL_INFO is not set" in capsys.readouterr().err


def test_a_broken_trial_json_exits_2(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "trial.json").write_text("[]")
    monkeypatch.setenv("DET_TRIAL_INFO", str(tmp_path / "trial.json"))
    assert main([]) == 2
    assert "must hold a JSON object" in capsys.readouterr().err


@pytest.mark.torch
def test_an_unresolvable_rendezvous_host_fails_fast(
    tmp_path: pathlib.Path, fake_master: FakeMaster
) -> None:
    pytest.importorskip("torch")
    job = _job(tmp_path, fake_master, "python3 train.py")
    env = job_environ(
        job,
        SLURM_PROCID="0",
        SLURM_NTASKS="2",
        SLURM_NNODES="2",
        SLURM_NODEID="0",
        SLURM_JOB_ID="78",
        SLURM_JOB_NODELIST="no-such-host-hpcdet.invalid,n2",
    )
    [rank] = run_harness(job, [env])
    assert rank.returncode == 2
    assert "'no-such-host-hpcdet.invalid' (first node of the job) does not resolve" in rank.stderr
    assert "MASTER_ADDR" in rank.stderr


EXIT_SCRIPT = """
import atexit, concurrent.futures, sys, threading, time
from hpcdet.harness.main import exit_process

pool = concurrent.futures.ThreadPoolExecutor(2)
pool.submit(int).result()  # left idle: must not keep the process alive

def late_writer():
    time.sleep(0.2)
    print("thread finished", flush=True)

threading.Thread(target=late_writer).start()  # non-daemon: waited for, as at any exit
atexit.register(lambda: print("atexit ran"))
print("unflushed", end="")
exit_process(3)
"""


def test_exit_process_behaves_like_a_normal_exit() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT], env=env, capture_output=True, text=True,
        timeout=HANG_GUARD_S)
    assert result.returncode == 3, result.stderr
    assert result.stdout == "unflushedthread finished\natexit ran\n"
