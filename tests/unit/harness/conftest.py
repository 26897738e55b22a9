"""Fixtures for the harness and Core API tests (helpers live in harness_fakes.py)."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest
from harness_fakes import FakeMaster, write_job_dir

from hpcdet.core import _context, _preempt


@pytest.fixture
def fake_master() -> Iterator[FakeMaster]:
    master = FakeMaster()
    master.start()
    try:
        yield master
    finally:
        master.stop()


@pytest.fixture
def job_dir(tmp_path: pathlib.Path, fake_master: FakeMaster) -> pathlib.Path:
    return write_job_dir(tmp_path / "trial-11", fake_master.url)


@pytest.fixture
def in_job(job_dir: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """This process looks like rank 0 of a one-slot job (no Slurm variables)."""
    monkeypatch.setenv("DET_TRIAL_INFO", str(job_dir / "trial.json"))
    monkeypatch.setenv("DET_JOB_DIR", str(job_dir))
    for name in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    return job_dir


@pytest.fixture
def off_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process is not in a job."""
    monkeypatch.delenv("DET_TRIAL_INFO", raising=False)


@pytest.fixture(autouse=True)
def _clean_core_state() -> Iterator[None]:
    """No preemption flag or open context leaks from one test into the next."""
    _preempt._reset_for_tests()
    yield
    _context.close_open_contexts()
    _preempt._reset_for_tests()
