"""Issue 14 findings 4 and 9: files in job directories are read without following links,
and the master's files are private (modes)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_scheduler import FakeSchedulerBackend
from flask import Flask
from flask.testing import FlaskClient
from log_seed import TWO_BY_TWO, add_experiment, add_job, add_trial, sessions
from sqlalchemy import select

from hpcdet.dispatcher import JobRef
from hpcdet.dispatcher.jobdir import prepare_job_dir
from hpcdet.dispatcher.spec_values import read_exit_file
from hpcdet.dispatcher.transport.local import LOCAL
from hpcdet.jobfiles import UnsafeFileError, is_real_dir, open_regular
from hpcdet.master.app import create_app
from hpcdet.master.models import TrialLog
from hpcdet.master.reports.logs import ingest_job_logs
from hpcdet.master.reports.spool_ingest import spooled_streams
from hpcdet.master.settings.core import MasterSettings

USER = {"X-Hpcdet-User": "alice"}
SECRET = "the other user's secret\n"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "elsewhere" / "secret.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    path.chmod(0o600)
    return path


@pytest.fixture
def task_app(settings: MasterSettings, fake: FakeSchedulerBackend) -> Iterator[Flask]:
    app = create_app(settings, backend=fake)
    app.config["TESTING"] = True
    yield app
    app.config["HPCDET_ENGINE"].dispose()


# Finding 4: a job's log replaced by a symlink made the master read any file it can read.
def test_a_symlinked_trial_log_is_not_read(app: Flask, tmp_path: Path, secret: Path) -> None:
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "slurm-101.out").symlink_to(secret)
    config: dict[str, Any] = {**TWO_BY_TWO}
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session, config), job_dir=str(job_dir))
        job = add_job(session, trial, job_id="101", nodes="node[1-2]")
        ingest_job_logs(session, job, trial, config, final=True, files=LOCAL)
    with sessions(app).begin() as session:
        lines = session.scalars(select(TrialLog.line)).all()
    assert not any("secret" in line for line in lines)


def test_an_unsafe_log_is_warned_about_once(app: Flask, tmp_path: Path, secret: Path,
                                            caplog: pytest.LogCaptureFixture) -> None:
    """Issue 28, "also seen": a symlinked or FIFO log added a master-log warning every
    reconciler cycle, forever."""
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "slurm-102.out").symlink_to(secret)
    os.mkfifo(job_dir / "slurm-102.err")
    config: dict[str, Any] = {**TWO_BY_TWO}
    with sessions(app).begin() as session:
        trial = add_trial(session, add_experiment(session, config), job_dir=str(job_dir))
        job = add_job(session, trial, job_id="102", nodes="node[1-2]")
        for _ in range(3):  # three cycles
            ingest_job_logs(session, job, trial, config, final=False, files=LOCAL)
    warned = [r.getMessage() for r in caplog.records if "not collected" in r.getMessage()]
    assert len(warned) == 2, warned  # one per file
    assert any("slurm-102.out" in m for m in warned) and any("slurm-102.err" in m for m in warned)


def test_a_symlinked_task_log_is_a_clear_error(task_app: Flask, tmp_path: Path,
                                               secret: Path) -> None:
    api: FlaskClient = task_app.test_client()
    answer = api.post("/api/v1/tasks", headers=USER, json={
        "script": "#!/bin/bash\necho hi\n", "script_name": "job.sh", "cwd": str(tmp_path)})
    assert answer.status_code == 201, answer.json
    task = answer.json["task"]
    log = Path(task["job_dir"], "output.log")
    log.unlink(missing_ok=True)
    log.symlink_to(secret)
    response = api.get(f"/api/v1/tasks/{task['id']}/logs", headers=USER)
    assert response.status_code == 409
    assert SECRET.strip() not in response.get_data(as_text=True)
    assert "symbolic link" in response.json["error"]["message"]


def test_exit_files_and_spool_dirs_are_not_followed(tmp_path: Path, secret: Path) -> None:
    secret.write_text("7\n")
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "exit-5").symlink_to(secret)
    assert read_exit_file(JobRef("5", str(job_dir)), files=LOCAL) is None
    elsewhere = tmp_path / "other-spool" / "r1.q0.k0"
    elsewhere.mkdir(parents=True)
    (job_dir / "spool").symlink_to(elsewhere.parent)
    assert spooled_streams(job_dir / "spool", files=LOCAL) == []


# Finding 9: trial.json (environment_variables), the job script and the token are private.
def test_job_files_are_not_other_readable(tmp_path: Path) -> None:
    root = prepare_job_dir(tmp_path / "jobs" / "trial-1", context_tar=None,
                           trial_info={"environment": {"API_KEY": "s3cret"}}, token="tok",
                           files=LOCAL)
    for path in (root, root / "trial.json", root / ".token"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_the_sqlite_database_and_state_dir_are_private(tmp_path: Path) -> None:
    from hpcdet.master.db import make_engine
    from hpcdet.master.serve import private_state_dir

    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    private_state_dir(str(state))
    database = state / "hpcdet.sqlite"
    database.touch(mode=0o644)
    database.chmod(0o644)
    engine = make_engine(f"sqlite:///{database}")
    with engine.connect() as connection:
        connection.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        connection.commit()
    engine.dispose()
    for path in (state, database, *state.glob("hpcdet.sqlite-*")):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def _two_users_trials(tmp_path: Path) -> tuple[Path, Path]:
    """user_b's trial directory with a log, and user_a's trial directory replaced by a link
    to it, made (owned) by user_a as she could in her own directory."""
    theirs = tmp_path / "jobs" / "user_b" / "exp-2" / "trial-2"
    (theirs / "spool").mkdir(parents=True)
    (theirs / "slurm-7.out").write_text("user_b's secret\n")
    mine = tmp_path / "jobs" / "user_a" / "exp-1" / "trial-1"
    mine.parent.mkdir(parents=True)
    mine.symlink_to(theirs)
    os.lchown(mine, 4242, 4242)  # a link a user made, not root
    return mine, theirs


def test_a_users_link_in_the_directories_above_is_not_followed(tmp_path: Path) -> None:
    """Finding 4, one level up: user_a's trial directory made a link to user_b's must not
    let the master read user_b's log (or ingest and delete her spool) for user_a."""
    mine, theirs = _two_users_trials(tmp_path)
    with pytest.raises(UnsafeFileError, match="symbolic link in its path"):
        open_regular(mine / "slurm-7.out")
    assert not is_real_dir(mine / "spool")
    with open_regular(theirs / "slurm-7.out") as handle:  # the real path still reads
        assert handle.read() == b"user_b's secret\n"


def test_roots_links_above_a_job_directory_are_followed(tmp_path: Path) -> None:
    """A site's own link (``/scratch -> /lustre/scratch``, owned by root) keeps working."""
    real = tmp_path / "lustre" / "jobs"
    (real / "trial-1").mkdir(parents=True)
    (real / "trial-1" / "slurm-1.out").write_text("mine\n")
    (tmp_path / "scratch").symlink_to(tmp_path / "lustre")
    assert os.lstat(tmp_path / "scratch").st_uid == 0  # the tests run as root
    with open_regular(tmp_path / "scratch" / "jobs" / "trial-1" / "slurm-1.out") as handle:
        assert handle.read() == b"mine\n"
    assert is_real_dir(tmp_path / "scratch" / "jobs" / "trial-1")
