"""What a job leaves for the next execution and for the master (hpcdet/jobfiles.py).

* the chief of a run that stopped because it was asked records ``preempted`` for its
  (Slurm job id, requeue count): ``_note_preemption`` in hpcdet/harness/main.py;
* every registered checkpoint is noted in ``latest_checkpoint.json``
  (``_remember_latest``), which wins over ``trial.json`` when the job is requeued
  (hpcdet/job/trial_info.py);
* readers of these files treat a missing or corrupt file as no information.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from hang_guard import HANG_GUARD_S
from harness_fakes import FakeMaster, job_environ, run_harness, write_job_dir

import hpcdet.core
from hpcdet import jobfiles
from hpcdet.core import _preempt
from hpcdet.core._checkpoint import _remember_latest
from hpcdet.harness.main import _note_preemption, slurm_restart_count
from hpcdet.job.cluster_env import ClusterEnv
from hpcdet.job.trial_info import (
    PINNED_CHECKPOINT_VAR,
    TrialInfo,
    load_trial_info,
    pin_latest_checkpoint,
)


def _info(job_dir: pathlib.Path) -> TrialInfo:
    return TrialInfo(master_url="http://m", experiment_id=7, trial_id=11, trial_seed=1,
                     hparams={}, experiment_config={}, checkpoint_dir=str(job_dir / "ckpt"),
                     job_dir=str(job_dir))


def _rank(rank: int) -> ClusterEnv:
    return ClusterEnv(rank, 2, rank, 2, 0, 1, "4242", "node1", "127.0.0.1", 29500)


def _files(job_dir: pathlib.Path) -> list[str]:
    return sorted(p.name for p in job_dir.iterdir())


# _note_preemption ---------------------------------------------------------------------
def test_a_preempted_chief_that_exits_0_records_it_for_its_execution(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    _preempt.signal_preemption()
    _note_preemption(_info(tmp_path), _rank(0), 0)
    assert _files(tmp_path) == ["exit-reason-4242.2.json"]
    assert json.loads((tmp_path / "exit-reason-4242.2.json").read_text()) == {
        "reason": "preempted", "rank": 0}
    assert jobfiles.read_exit_reason(tmp_path, "4242", 2) == jobfiles.PREEMPTED
    assert jobfiles.read_exit_reason(tmp_path, "4242", 0) is None


def test_the_first_execution_is_requeue_0(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    _preempt.signal_preemption()
    _note_preemption(_info(tmp_path), _rank(0), 0)
    assert jobfiles.read_exit_reason(tmp_path, "4242", 0) == jobfiles.PREEMPTED


@pytest.mark.parametrize(("rank", "code", "signalled", "job_id"), [
    (1, 0, True, "4242"),   # not the chief
    (0, 1, True, "4242"),   # failed after the signal: a failure, not a preemption
    (0, 0, False, "4242"),  # finished without being asked to stop
    (0, 0, True, None),     # not in a Slurm job
], ids=["worker", "nonzero-exit", "not-signalled", "no-slurm-job"])
def test_nothing_is_recorded_otherwise(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, rank: int, code: int,
        signalled: bool, job_id: str | None) -> None:
    if job_id is None:
        monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    else:
        monkeypatch.setenv("SLURM_JOB_ID", job_id)
    if signalled:
        _preempt.signal_preemption()
    _note_preemption(_info(tmp_path), _rank(rank), code)
    assert _files(tmp_path) == []


def test_an_unwritable_job_directory_is_reported_not_raised(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    _preempt.signal_preemption()
    _note_preemption(_info(blocker / "job"), _rank(0), 0)
    assert "could not record the preemption" in capsys.readouterr().err


@pytest.mark.parametrize(("raw", "count"), [("", 0), ("0", 0), ("3", 3), (" 12 ", 12),
                                            ("-1", 0), ("x", 0)])
def test_slurm_restart_count(raw: str, count: int) -> None:
    assert slurm_restart_count({"SLURM_RESTART_COUNT": raw}) == count
    assert slurm_restart_count({}) == 0


def test_the_harness_records_a_signalled_clean_exit(
        tmp_path: pathlib.Path, fake_master: FakeMaster) -> None:
    # The entrypoint (a command, run as a child) sends SIGTERM to the harness until the
    # harness passes one on (its forwarding starts just after the child does); the child
    # exits 0 on it, as code that checkpointed would.
    script = "trap 'exit 0' TERM; while :; do kill -TERM $PPID; sleep 0.1; done"
    job = write_job_dir(tmp_path / "job", fake_master.url, entrypoint=["sh", "-c", script])
    env = job_environ(job, SLURM_JOB_ID="777", SLURM_RESTART_COUNT="1")
    [rank] = run_harness(job, [env], timeout=HANG_GUARD_S)
    assert rank.returncode == 0, rank.stderr
    assert jobfiles.read_exit_reason(job, "777", 1) == jobfiles.PREEMPTED


# latest_checkpoint.json ---------------------------------------------------------------
def _env(job: pathlib.Path) -> dict[str, str]:
    return {"DET_TRIAL_INFO": str(job / "trial.json"), "DET_JOB_DIR": str(job)}


def test_the_noted_checkpoint_wins_over_trial_json(tmp_path: pathlib.Path) -> None:
    job = write_job_dir(tmp_path, "http://m", latest_checkpoint="from-trial-json")
    assert load_trial_info(_env(job)).latest_checkpoint == "from-trial-json"
    jobfiles.write_latest_checkpoint(job, "noted-by-the-chief", 40)
    assert load_trial_info(_env(job)).latest_checkpoint == "noted-by-the-chief"


def test_the_noted_checkpoint_serves_a_run_that_had_none(tmp_path: pathlib.Path) -> None:
    job = write_job_dir(tmp_path, "http://m")
    jobfiles.write_latest_checkpoint(job, "first", 10)
    assert load_trial_info(_env(job)).latest_checkpoint == "first"


def test_a_rank_resumes_from_what_it_read_before_the_group_formed(
        tmp_path: pathlib.Path) -> None:
    # A slow rank must not see the checkpoint the chief saved meanwhile (CI, stop 40: the
    # ranks resumed from 0 and 23 batches, and one left the other in an allgather).
    job = write_job_dir(tmp_path / "none", "http://m")
    env = _env(job)
    pin_latest_checkpoint(load_trial_info(env), env)
    jobfiles.write_latest_checkpoint(job, "saved-by-this-run", 23)
    assert env[PINNED_CHECKPOINT_VAR] == ""
    assert load_trial_info(env).latest_checkpoint is None
    job = write_job_dir(tmp_path / "some", "http://m", latest_checkpoint="from-trial-json")
    jobfiles.write_latest_checkpoint(job, "noted-by-the-last-run", 10)
    env = _env(job)
    pin_latest_checkpoint(load_trial_info(env), env)
    jobfiles.write_latest_checkpoint(job, "saved-by-this-run", 23)
    assert load_trial_info(env).latest_checkpoint == "noted-by-the-last-run"


def test_the_harness_pins_the_checkpoint_for_its_entrypoint(
        tmp_path: pathlib.Path, fake_master: FakeMaster) -> None:
    script = f'printf "pinned=%s\\n" "${PINNED_CHECKPOINT_VAR}"'
    job = write_job_dir(tmp_path / "job", fake_master.url, entrypoint=["sh", "-c", script])
    jobfiles.write_latest_checkpoint(job, "noted-by-the-last-run", 10)
    [rank] = run_harness(job, [job_environ(job)], timeout=HANG_GUARD_S)
    assert rank.returncode == 0, rank.stderr
    assert "pinned=noted-by-the-last-run" in rank.stdout


@pytest.mark.parametrize("content", ["{not json", "[]", '{"uuid": ""}', '{"uuid": 3}', ""])
def test_a_corrupt_note_leaves_trial_json_in_charge(tmp_path: pathlib.Path,
                                                    content: str) -> None:
    job = write_job_dir(tmp_path, "http://m", latest_checkpoint="from-trial-json")
    (job / jobfiles.LATEST_CHECKPOINT_FILE).write_text(content)
    assert load_trial_info(_env(job)).latest_checkpoint == "from-trial-json"


def test_remember_latest_writes_the_note_in_the_job_dir(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DET_JOB_DIR", str(tmp_path))
    _remember_latest("abc", 30)
    data = json.loads((tmp_path / jobfiles.LATEST_CHECKPOINT_FILE).read_text())
    assert data == {"uuid": "abc", "steps_completed": 30}
    assert _files(tmp_path) == [jobfiles.LATEST_CHECKPOINT_FILE]  # no temporary left


def test_remember_latest_outside_a_job_writes_nothing(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DET_JOB_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    _remember_latest("abc", 30)
    assert _files(tmp_path) == []


def test_a_registered_checkpoint_is_what_a_requeued_run_resumes_from(
        in_job: pathlib.Path, fake_master: FakeMaster) -> None:
    with hpcdet.core.init() as core:
        with core.checkpoint.store_path({"steps_completed": 5}) as (path, uuid):
            (path / "model.pt").write_bytes(b"weights")
    assert [c["uuid"] for c in fake_master.checkpoints()] == [uuid]
    assert jobfiles.read_latest_checkpoint(in_job) == uuid
    assert load_trial_info(_env(in_job)).latest_checkpoint == uuid


def test_a_checkpoint_that_fails_is_not_noted(
        in_job: pathlib.Path, fake_master: FakeMaster) -> None:
    with hpcdet.core.init() as core:
        with pytest.raises(RuntimeError):
            with core.checkpoint.store_path({"steps_completed": 5}) as (path, _uuid):
                raise RuntimeError("disk full")
    assert jobfiles.read_latest_checkpoint(in_job) is None


# jobfiles readers ---------------------------------------------------------------------
def test_readers_of_missing_files_say_nothing(tmp_path: pathlib.Path) -> None:
    assert jobfiles.read_exit_reason(tmp_path, "1", 0) is None
    assert jobfiles.read_latest_checkpoint(tmp_path) is None
    assert jobfiles.read_exit_reason(tmp_path / "no-such-dir", "1", 0) is None
    assert jobfiles.read_json(tmp_path / "nothing.json") is None


@pytest.mark.parametrize("content", ["", "{", "null", "[1]", '"preempted"', '{"reason": 1}',
                                     "\xff\xfe"])
def test_readers_of_corrupt_exit_reasons_say_nothing(tmp_path: pathlib.Path,
                                                     content: str) -> None:
    path = jobfiles.exit_reason_path(tmp_path, "9", 0)
    path.write_bytes(content.encode("latin-1"))
    assert jobfiles.read_exit_reason(tmp_path, "9", 0) is None


def test_an_exit_reason_path_names_the_job_and_the_requeue(tmp_path: pathlib.Path) -> None:
    path = jobfiles.write_exit_reason(tmp_path, "12", 3, "preempted", rank=0)
    assert path == tmp_path / "exit-reason-12.3.json"
    assert jobfiles.read_exit_reason(tmp_path, "12", 3) == "preempted"
    assert jobfiles.read_exit_reason(tmp_path, "12", 2) is None
    assert jobfiles.read_exit_reason(tmp_path, "1", 3) is None


def test_writes_replace_atomically_and_leave_no_temporaries(tmp_path: pathlib.Path) -> None:
    jobfiles.write_latest_checkpoint(tmp_path / "new-dir", "a", 1)
    jobfiles.write_latest_checkpoint(tmp_path / "new-dir", "b", 2)
    assert jobfiles.read_latest_checkpoint(tmp_path / "new-dir") == "b"
    assert _files(tmp_path / "new-dir") == [jobfiles.LATEST_CHECKPOINT_FILE]


def test_pbs_restart_count_from_the_job_script() -> None:
    """PBS sets no count: the job script's HPCDET_RESTART_COUNT (from run_count) is read;
    Slurm's own variable wins where both are set."""
    assert slurm_restart_count({"HPCDET_RESTART_COUNT": "1"}) == 1
    assert slurm_restart_count({"SLURM_RESTART_COUNT": "2", "HPCDET_RESTART_COUNT": "1"}) == 2
